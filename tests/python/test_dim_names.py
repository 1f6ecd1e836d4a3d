"""Dims named by what they are (batch, channel, head, token, feature) in activation replies."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn
from transformers import GPT2Config, GPT2LMHeadModel

import lens_widget as lw
from lens_widget.widget import requests
from lens_widget.widget.dim_names import DimNames, wire_names
from lens_widget.widget.tensor_view import tensor_view


def names_by_func(log: lw.ModelLog) -> dict[str, list[str]]:
    dims = DimNames(log.nodes)
    return {n.func: wire_names(dims.of(n.label)) for n in log.nodes if n.kind != "param"}


def test_a_cnn_has_batch_channel_height_width_then_features() -> None:
    model = nn.Sequential(
        nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(4 * 4 * 4, 5),
    ).eval()  # fmt: skip
    names = names_by_func(lw.trace(model, torch.randn(2, 3, 8, 8)))
    image = ["batch", "channel", "height", "width"]
    assert names["input.0"] == image
    for func in ("conv2d", "batch_norm", "relu", "max_pool2d"):
        assert names[func] == image, func
    assert names["flatten"] == ["batch", "channel×height×width"]
    assert names["linear"] == ["batch", "feature"]


@pytest.fixture(scope="module")
def gpt2_names() -> dict[str, list[str]]:
    config = GPT2Config(n_layer=1, n_embd=32, n_head=4, vocab_size=50, bos_token_id=0,
                        eos_token_id=0, attn_implementation="eager")  # fmt: skip
    ids = torch.randint(0, 50, (2, 7))
    log = lw.trace(GPT2LMHeadModel(config).eval(), (ids,))
    return names_by_func(log)


def test_a_transformer_names_tokens_features_and_heads(gpt2_names) -> None:
    assert gpt2_names["input.0"] == ["batch", "token"]
    assert gpt2_names["embedding"] == ["batch", "token", "feature"]
    assert gpt2_names["layer_norm"] == ["batch", "token", "feature"]
    # Conv1D runs addmm on (batch·token, feature) and views it back
    assert gpt2_names["addmm"] == ["batch×token", "feature"]
    # the eager attention: heads split off the features, then query x key scores
    assert gpt2_names["softmax"] == ["batch", "head", "token", "token"]
    assert gpt2_names["output.logits"] == ["batch", "token", "feature"]


def test_sdpa_output_is_batch_head_token_feature() -> None:
    config = GPT2Config(n_layer=1, n_embd=32, n_head=4, vocab_size=50, bos_token_id=0,
                        eos_token_id=0)  # fmt: skip
    log = lw.trace(GPT2LMHeadModel(config).eval(), (torch.randint(0, 50, (1, 16)),))
    names = names_by_func(log)
    assert names["scaled_dot_product_attention"] == ["batch", "head", "token", "feature"]
    # and the reply plots (1, 4, 16, 8) as a grid of heads with tokens x features each
    records = log.by_label
    sdpa = next(n for n in log.ops if n.func == "scaled_dot_product_attention")
    result, _ = requests.activation(records, {"id": sdpa.label}, DimNames(log.nodes))
    assert result["plot"] == "images"
    assert result["dims"] == ["batch", "head", "token", "feature"]
    assert result["axes"] == ["head", "token", "feature"]


def test_multihead_attention_puts_the_batch_second() -> None:
    mha = nn.MultiheadAttention(8, 2).eval()
    x = torch.randn(5, 3, 8)  # (tokens, batch, embed)
    names = names_by_func(lw.trace(mha, (x, x, x)))
    assert names["multi_head_attention_forward"] == ["token", "batch", "feature"]


def test_unknown_dims_read_dim_i_and_plots_fall_back_to_their_layout() -> None:
    result, _ = tensor_view(torch.randn(3, 5))
    assert result["dims"] == ["dim 0", "dim 1"] and result["axes"] == ["dim 0", "dim 1"]
    result, _ = tensor_view(torch.randn(2, 4, 6, 6))
    assert result["dims"] == ["batch", "channel", "dim 2", "dim 3"]
    result, _ = tensor_view(torch.randn(2, 4, 1, 6), dim_names=["batch", "channel", "h", "w"])
    assert result["plot"] == "heatmap" and result["axes"] == ["batch", "channel×w"]


def test_the_caption_names_the_picked_item_as_the_slider_does() -> None:
    x = torch.randn(4, 6, 10)
    result, buf = tensor_view(x, batch=2, dim_names=["batch", "token", "feature"])
    assert result["batch"] == {"index": 2, "size": 4}
    assert "batch 2 of 4" in result["note"]  # the slider reads "batch 2 of 4" too
    assert result["axes"] == ["token", "feature"]
    np.testing.assert_array_equal(np.frombuffer(buf, "<f4").reshape(6, 10), x[2].numpy())
    result, _ = tensor_view(torch.randn(5, 2, 8), dim_names=["token", "batch", "feature"])
    assert "token 0 of 5" in result["note"]  # the first dim is tokens here, and says so


def test_an_rnn_names_its_sequence_by_batch_first_and_its_final_states_by_layer() -> None:
    """h_n and c_n are (layer, batch, feature): not the input's dims, though the rank matches;
    a sequence-first GRU's output has the token first. Values and indices share dims."""

    class Rnns(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lstm = nn.LSTM(16, 32, num_layers=2, batch_first=True)
            self.gru = nn.GRU(16, 8)

        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
            y, (h, c) = self.lstm(x)
            z, hz = self.gru(x)
            return (*torch.topk(y, 3), h, c, z, hz, y.topk(2, dim=1).indices)

    log = lw.trace(Rnns(), torch.randn(2, 7, 16))
    dims = DimNames(log.nodes)

    def names(func: str) -> list[list[str]]:
        (op,) = [n for n in log.ops if n.func == func]
        return [wire_names(dims.of(op.label, i)) for i in range(len(op.shapes))]

    states = ["layer", "batch", "feature"]
    assert names("lstm") == [["batch", "token", "feature"], states, states]
    assert names("gru") == [["token", "batch", "feature"], states]
    # topk's dim holds the k best, not every feature (it read "feature")
    first_topk, second_topk = [n for n in log.ops if n.func == "topk"]
    assert [wire_names(dims.of(first_topk.label, i)) for i in (0, 1)] == [
        ["batch", "token", "top-k"]
    ] * 2
    assert wire_names(dims.of(second_topk.label, 1)) == ["batch", "top-k", "feature"]
