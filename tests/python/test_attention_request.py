"""The "attention" request: one head's map of one batch item, from the op's saved inputs."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from transformers import GPT2Config, GPT2LMHeadModel
from widget_replies import ask

import lens_widget as lw
from lens_widget.log.attention import attention_grid, attention_map, attention_weights
from lens_widget.widget import LensWidget
from lens_widget.widget.tensor_view import MAX_HEATMAP


def as_map(reply: tuple[dict, list[bytes]]) -> np.ndarray:
    msg, buffers = reply
    assert msg["ok"], msg.get("error")
    return np.frombuffer(buffers[0], dtype="<f4").reshape(msg["result"]["dataShape"])


@pytest.fixture(scope="module")
def gpt2() -> LensWidget:
    torch.manual_seed(0)
    config = GPT2Config(n_layer=2, n_embd=32, n_head=4, vocab_size=50, bos_token_id=0,
                        eos_token_id=0)  # fmt: skip
    ids = torch.randint(0, 50, (2, 7), generator=torch.Generator().manual_seed(2))
    mask = torch.ones_like(ids)
    mask[1, :3] = 0  # left padding: the mask matters
    return LensWidget(GPT2LMHeadModel(config).eval(), (ids,), {"attention_mask": mask})


def sdpa_ids(widget: LensWidget) -> list[str]:
    return [n.label for n in widget.model_log.ops if n.func == "scaled_dot_product_attention"]


def expected_map(widget: LensWidget, label: str, batch: int, head: int) -> np.ndarray:
    """softmax(Q Kᵀ / sqrt(d) + mask) of one head, from the tensors the log saved."""
    op = widget.model_log[label]
    args = [parent.activations[i] for _, parent, i in op.replay[1]]
    q, k, attn_mask = args[0][batch, head], args[1][batch, head], args[3]
    scores = q @ k.T / math.sqrt(q.shape[-1])
    mask = attn_mask.expand(2, 4, 7, 7)[batch, head]
    if mask.dtype == torch.bool:  # transformers 5; 4.x passes an additive float mask
        mask = torch.zeros_like(scores).masked_fill(~mask, float("-inf"))
    scores = scores + mask
    return torch.softmax(scores, -1).nan_to_num(0.0).numpy()


def test_nodes_say_which_ops_have_attention_maps(gpt2) -> None:
    flagged = {n["id"] for n in gpt2.graph["unrolled"]["nodes"] if n["attention"]}
    assert flagged == set(sdpa_ids(gpt2)) and len(flagged) == 2
    rolled = [n for n in gpt2.graph["rolled"]["nodes"] if n["attention"]]
    assert {p for n in rolled for p in n["passes"]} == flagged


@pytest.mark.parametrize(("batch", "head"), [(0, 0), (1, 3), (1, 0)])
def test_the_map_is_the_softmax_of_the_saved_query_and_key(gpt2, batch, head) -> None:
    label = sdpa_ids(gpt2)[1]
    reply = ask(gpt2, "attention", {"id": label, "batch": batch, "head": head})
    result = reply[0]["result"]
    assert result["batch"] == {"index": batch, "size": 2}
    assert result["head"] == {"index": head, "size": 4}
    assert (result["queries"], result["keys"]) == (7, 7)
    assert result["reduced"] is False and result["note"] == ""
    np.testing.assert_allclose(as_map(reply), expected_map(gpt2, label, batch, head), atol=1e-6)


def test_defaults_are_the_first_batch_item_and_head(gpt2) -> None:
    label = sdpa_ids(gpt2)[0]
    np.testing.assert_allclose(
        as_map(ask(gpt2, "attention", {"id": label})), expected_map(gpt2, label, 0, 0), atol=1e-6
    )


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"head": 4}, "head 4 out of range [0, 4)"),
        ({"head": -1}, "head -1 out of range [0, 4)"),
        ({"batch": 2}, "batch 2 out of range [0, 2)"),
        ({"batch": "0"}, "batch must be an integer"),
        ({"head": 1.5}, "head must be an integer"),
        ({"channel": 0}, "unknown params: channel"),
    ],
)
def test_bad_indices_get_clear_errors(gpt2, params, message) -> None:
    label = sdpa_ids(gpt2)[0]
    msg, buffers = ask(gpt2, "attention", {"id": label, **params})
    assert msg["ok"] is False and buffers == []
    assert message in msg["error"]


def test_an_op_without_attention_says_so(gpt2) -> None:
    linear = next(n.label for n in gpt2.model_log.ops if n.func == "linear")
    msg, _ = ask(gpt2, "attention", {"id": linear})
    assert msg["ok"] is False and "is not an attention op" in msg["error"]
    msg, _ = ask(gpt2, "attention", {"id": "no_such_op"})
    assert msg["ok"] is False and "unknown node id" in msg["error"]


def test_unsaved_inputs_say_rerun_and_a_rerun_saves_them() -> None:
    mha = torch.nn.MultiheadAttention(8, 2, batch_first=True).eval()
    x = torch.randn(2, 3, 8)
    w = LensWidget(mha, (x, x, x), save=["multi_head_attention_forward"])
    (label,) = [n.label for n in w.model_log.ops if n.func == "multi_head_attention_forward"]
    msg, _ = ask(w, "attention", {"id": label, "head": 1})
    assert msg["ok"] is False
    assert "was not saved" in msg["error"] and "re-run" in msg["error"]
    assert ask(w, "rerun", {"id": label})[0]["ok"] is True
    with torch.no_grad():
        _, expected = mha(x, x, x, average_attn_weights=False)
    got = as_map(ask(w, "attention", {"id": label, "batch": 1, "head": 1}))
    np.testing.assert_allclose(got, expected[1, 1].numpy(), atol=1e-6)


def test_a_long_sequence_is_pooled_on_the_device_with_a_note() -> None:
    n = MAX_HEATMAP + 44

    class Attend(torch.nn.Module):
        def forward(self, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
            return F.scaled_dot_product_attention(q, k, k, is_causal=True)

    q, k = torch.randn(1, 2, n, 8), torch.randn(1, 2, n, 8)
    w = LensWidget(Attend(), (q, k))
    reply = ask(w, "attention", {"id": w.model_log.ops[0].label, "head": 1})
    result = reply[0]["result"]
    assert result["dataShape"] == [MAX_HEATMAP, MAX_HEATMAP] and result["reduced"] is True
    assert f"query tokens {n} -> {MAX_HEATMAP}" in result["note"]
    assert f"key tokens {n} -> {MAX_HEATMAP}" in result["note"]
    full = torch.softmax((q[0, 1] @ k[0, 1].T / math.sqrt(8)).masked_fill(
        torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf")), -1)  # fmt: skip
    pooled = F.adaptive_avg_pool2d(full[None], (MAX_HEATMAP, MAX_HEATMAP))[0]
    np.testing.assert_allclose(as_map(reply), pooled.numpy(), atol=1e-6)


def test_one_map_of_grouped_query_attention_matches_the_full_weights() -> None:
    class Grouped(torch.nn.Module):
        def forward(self, q: torch.Tensor, k: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
            return F.scaled_dot_product_attention(q, k, k, attn_mask=mask, enable_gqa=True)

    q, k = torch.randn(3, 2, 4, 5, 8), torch.randn(3, 2, 2, 6, 8)
    mask = torch.randn(5, 6)  # broadcast over batch and heads
    (op,) = lw.trace(Grouped(), (q, k, mask)).ops
    assert attention_grid(op) == (6, 4, 5, 6)
    full = attention_weights(op).reshape(6, 4, 5, 6)
    for batch in range(6):
        for head in range(4):
            torch.testing.assert_close(attention_map(op, batch, head), full[batch, head])
    with pytest.raises(IndexError):
        attention_map(op, 6, 0)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_a_cuda_op_is_computed_on_its_device_and_matches_the_cpu() -> None:
    class Attend(torch.nn.Module):
        def forward(self, q: torch.Tensor, k: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
            return F.scaled_dot_product_attention(q, k, k, attn_mask=mask)

    q, k, mask = torch.randn(2, 3, 40, 8), torch.randn(2, 3, 50, 8), torch.randn(40, 50)
    on_cpu = lw.trace(Attend(), (q, k, mask)).ops[0]
    on_gpu = lw.trace(Attend(), (q.cuda(), k.cuda(), mask.cuda())).ops[0]
    gpu_map = attention_map(on_gpu, 1, 2)
    assert gpu_map.is_cuda
    torch.testing.assert_close(gpu_map.cpu(), attention_map(on_cpu, 1, 2), rtol=1e-4, atol=1e-5)
