"""Models dispatched with accelerate trace as the model they are (capture/dispatch/).

Each case is compared with the same weights traced undispatched: the same ops, labels,
modules and graph; parameter sources under the model's names with their real values; none
of accelerate's own calls (device moves, weight loading) among the ops, each hook call in
``log.dispatch`` instead; the hooks put back exactly, also when the forward raises.
Small random models built from configs; ``from_pretrained`` reads a local directory only.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from torch.overrides import TorchFunctionMode

accelerate = pytest.importorskip("accelerate")
transformers = pytest.importorskip("transformers")

import lens_widget as lw  # noqa: E402

_ACCELERATE_DIR = os.path.dirname(accelerate.__file__)
_IDS = torch.randint(0, 100, (1, 8), generator=torch.Generator().manual_seed(0))


def _gpt2() -> torch.nn.Module:
    config = transformers.GPT2Config(
        n_layer=2, n_embd=64, n_head=4, vocab_size=100, n_positions=32,
        bos_token_id=0, eos_token_id=0,
    )  # fmt: skip
    with torch.random.fork_rng():  # the same weights whatever ran before: no early EOS
        torch.manual_seed(0)
        return transformers.GPT2LMHeadModel(config).eval()


def _llama() -> torch.nn.Module:
    config = transformers.LlamaConfig(
        num_hidden_layers=2, hidden_size=64, num_attention_heads=4, num_key_value_heads=2,
        intermediate_size=128, vocab_size=100, max_position_embeddings=64,
        bos_token_id=0, eos_token_id=0, pad_token_id=0,
    )  # fmt: skip
    with torch.random.fork_rng():  # the same weights whatever ran before: no early EOS
        torch.manual_seed(0)
        return transformers.LlamaForCausalLM(config).eval()


# Some blocks on "cpu", the others offloaded to "disk" (a CPU-only machine has no other device)
_DEVICE_MAPS = {
    "gpt2": {
        "transformer.wte": "cpu", "transformer.wpe": "cpu", "transformer.h.0": "cpu",
        "transformer.h.1": "disk", "transformer.ln_f": "disk", "lm_head": "cpu",
    },
    "llama": {
        "model.embed_tokens": "cpu", "model.layers.0": "disk", "model.layers.1": "cpu",
        "model.norm": "disk", "model.rotary_emb": "cpu", "lm_head": "disk",
    },
}  # fmt: skip
_BUILDERS = {"gpt2": _gpt2, "llama": _llama}


def _copy(kind: str, model: torch.nn.Module) -> torch.nn.Module:
    twin = _BUILDERS[kind]()
    twin.load_state_dict(model.state_dict())
    return twin


def _dispatch_model(kind: str, model: torch.nn.Module, tmp: Path) -> torch.nn.Module:
    return accelerate.dispatch_model(
        _copy(kind, model), device_map=_DEVICE_MAPS[kind], offload_dir=str(tmp / "offload")
    )


def _disk_offload(kind: str, model: torch.nn.Module, tmp: Path) -> torch.nn.Module:
    return accelerate.disk_offload(_copy(kind, model), str(tmp / "offload"))


def _cpu_offload(kind: str, model: torch.nn.Module, tmp: Path) -> torch.nn.Module:
    return accelerate.cpu_offload(_copy(kind, model))


def _from_pretrained(kind: str, model: torch.nn.Module, tmp: Path) -> torch.nn.Module:
    model.save_pretrained(tmp / "saved")  # a local directory: nothing is downloaded
    return transformers.AutoModelForCausalLM.from_pretrained(
        tmp / "saved", device_map=_DEVICE_MAPS[kind], offload_folder=str(tmp / "offload")
    ).eval()


_DISPATCHERS: dict[str, Callable[[str, torch.nn.Module, Path], torch.nn.Module]] = {
    "dispatch_model": _dispatch_model,
    "disk_offload": _disk_offload,
    "cpu_offload": _cpu_offload,
    "from_pretrained": _from_pretrained,
}


def _hooks(model: torch.nn.Module) -> dict[str, Any]:
    return {n: m.__dict__["_hf_hook"] for n, m in model.named_modules() if "_hf_hook" in m.__dict__}


def _params(log: lw.ModelLog) -> dict[str, lw.OpRecord]:
    return {n.label: n for n in log.nodes if n.kind == "param"}


def _assert_same_model(log: lw.ModelLog, base: lw.ModelLog, plain: torch.nn.Module) -> None:
    """`log` (dispatched) records what `base` (undispatched, weights of `plain`) records."""
    assert len(log.ops) == len(base.ops)
    assert [(n.func, n.label, n.module) for n in log.ops] == [
        (n.func, n.label, n.module) for n in base.ops
    ]
    assert sorted(log.graph.edges) == sorted(base.graph.edges)
    assert [n.source for n in log.ops] == [n.source for n in base.ops]
    assert not [n.label for n in log.ops if n.source.startswith(_ACCELERATE_DIR)]
    assert all(n.device for n in log.ops)
    weights = dict(plain.named_parameters())
    params = _params(log)
    assert sorted(params) == sorted(_params(base))
    for name, node in params.items():
        value = node.activations[0]  # type: ignore[index]
        assert value.device.type != "meta", name
        assert torch.equal(value, weights[name]), name
    assert log.n_params == base.n_params
    log.validate()


@pytest.mark.parametrize("kind", ["gpt2", "llama"])
@pytest.mark.parametrize("how", list(_DISPATCHERS))
def test_dispatched_model_traces_as_the_model(kind: str, how: str, tmp_path: Path) -> None:
    plain = _BUILDERS[kind]()
    base = lw.trace(plain, (_IDS,))
    model = _DISPATCHERS[how](kind, plain, tmp_path)
    hooks = _hooks(model)
    assert hooks
    with torch.no_grad():
        expected = model(_IDS).logits

    log = lw.trace(model, (_IDS,))

    _assert_same_model(log, base, plain)
    assert torch.equal(log.output.logits, expected)
    # accelerate's own calls are in log.dispatch: each hook, before and after each call
    # (a module that never runs calls no hook: transformers 4.45's per-attention rotary_emb)
    ran = [a for a in hooks if a in log.modules]
    assert len(log.dispatch) == 2 * sum(log.modules[a].n_passes for a in ran)
    loaded = {name for call in log.dispatch for name in call.loaded}
    offloaded = {name for call in log.dispatch for name in call.offloaded}
    assert loaded == offloaded  # what was loaded for a call was put back after it
    assert loaded <= set(_params(log))
    if how != "dispatch_model" and how != "from_pretrained":  # everything offloaded
        assert loaded == set(_params(log))
    assert all(c.nbytes > 0 and c.device == "cpu" for c in log.dispatch if c.loaded)
    # The hooks are the originals again, and the model computes as before.
    assert _hooks(model) == hooks
    assert all(model.get_submodule(a).__dict__["_hf_hook"] is h for a, h in hooks.items())
    with torch.no_grad():
        assert torch.equal(model(_IDS).logits, expected)
    # Saved and loaded, the parameters keep their real values.
    log.save(tmp_path / "log")
    loaded_log = lw.load(tmp_path / "log")
    weights = dict(plain.named_parameters())
    for name, node in _params(loaded_log).items():
        assert torch.equal(node.activations[0], weights[name]), name  # type: ignore[index]


@pytest.mark.parametrize("kind", ["gpt2", "llama"])
def test_generate_of_a_dispatched_model(kind: str, tmp_path: Path) -> None:
    plain = _BUILDERS[kind]()
    with lw.tracing(plain) as untouched:
        plain.generate(_IDS, max_new_tokens=3, do_sample=False)
    model = _disk_offload(kind, plain, tmp_path)
    hooks = _hooks(model)
    expected = model.generate(_IDS, max_new_tokens=3, do_sample=False)

    with lw.tracing(model) as t:
        generated = model.generate(_IDS, max_new_tokens=3, do_sample=False)

    assert torch.equal(generated, expected)
    _assert_same_model(t.log, untouched.log, plain)
    assert t.log.modules[""].n_passes == 3  # one node per parameter over the three passes
    assert _hooks(model) == hooks
    assert torch.equal(model.generate(_IDS, max_new_tokens=3, do_sample=False), expected)


def test_a_forward_that_raises_leaves_the_hooks_restored(tmp_path: Path) -> None:
    plain = _gpt2()
    model = _disk_offload("gpt2", plain, tmp_path)
    hooks = _hooks(model)
    with torch.no_grad():
        expected = model(_IDS).logits
    too_long = torch.zeros(1, 40, dtype=torch.long)  # more positions than n_positions=32
    with pytest.raises(IndexError) as raised:
        lw.trace(model, (too_long,))
    assert raised.value.lens_log.ops  # type: ignore[attr-defined]
    with pytest.raises(IndexError), lw.tracing(model):
        model(too_long)
    assert all(model.get_submodule(a).__dict__["_hf_hook"] is h for a, h in hooks.items())
    with torch.no_grad():
        assert torch.equal(model(_IDS).logits, expected)


def test_a_user_mode_around_the_trace_sees_accelerates_calls(tmp_path: Path) -> None:
    """The hooks run with only the recorder off the mode stack: a mode of the user's sees
    the calls an untraced forward makes, accelerate's included."""

    class Seen(TorchFunctionMode):
        def __init__(self) -> None:
            super().__init__()
            self.calls: list[str] = []

        def __torch_function__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204
            self.calls.append(getattr(func, "__name__", str(func)))
            return func(*args, **(kwargs or {}))

    model = _disk_offload("gpt2", _gpt2(), tmp_path)
    with torch.no_grad():
        with Seen() as untraced:
            model(_IDS)
        with Seen() as traced:
            lw.trace(model, (_IDS,))
    assert "to" in untraced.calls
    assert traced.calls == untraced.calls


class _CloneArguments:
    """A hook of accelerate's shape (duck-typed) that hands the module copies of its
    arguments and of its output: what a move to another device does."""

    no_grad = False

    def init_hook(self, module: torch.nn.Module) -> torch.nn.Module:
        return module

    def pre_forward(self, module: torch.nn.Module, *args: Any, **kwargs: Any) -> Any:
        return tuple(a.clone() for a in args), kwargs

    def post_forward(self, module: torch.nn.Module, output: Any) -> Any:
        return output.clone()

    def detach_hook(self, module: torch.nn.Module) -> torch.nn.Module:
        return module


def test_a_replaced_argument_reads_as_the_tensor_it_replaced() -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    x = torch.randn(3, 4)
    base = lw.trace(model, (x,))
    for layer in model:
        accelerate.hooks.add_hook_to_module(layer, _CloneArguments())
    log = lw.trace(model, (x,))
    assert [(n.func, n.label) for n in log.ops] == [(n.func, n.label) for n in base.ops]
    assert sorted(log.graph.edges) == sorted(base.graph.edges)
    assert [c.moved for c in log.dispatch] == [1, 1] * 3
    assert torch.equal(log.output, base.output)


class _Failing(_CloneArguments):
    def pre_forward(self, module: torch.nn.Module, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("no room on the device")


def test_a_hook_that_raises_leaves_the_mode_stack_and_the_hooks_as_they_were() -> None:
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Linear(4, 2))
    accelerate.hooks.add_hook_to_module(model[0], _CloneArguments())
    accelerate.hooks.add_hook_to_module(model[1], _Failing())
    hooks = _hooks(model)
    with pytest.raises(RuntimeError, match="no room"):
        lw.trace(model, (torch.randn(3, 4),))
    assert torch._C._len_torch_function_stack() == 0
    assert all(model.get_submodule(a).__dict__["_hf_hook"] is h for a, h in hooks.items())


def test_an_undispatched_model_is_untouched() -> None:
    model = _gpt2()
    log = lw.trace(model, (_IDS,))
    assert log.dispatch == []
    assert not _hooks(model)
    assert "transformer.wte.weight" in _params(log)


def test_a_traced_backward_names_the_loaded_parameters(tmp_path: Path) -> None:
    """The leaves are the loaded parameters, by the model's names, with the gradients of the
    undispatched model (Llama's head is not tied to its embedding: one tensor per name)."""
    plain = _llama()
    base = lw.trace(plain, (_IDS,), backward=lambda out: out.logits.sum())
    model = _cpu_offload("llama", plain, tmp_path)
    log = lw.trace(model, (_IDS,), backward=lambda out: out.logits.sum())
    assert sorted(log.leaves) == sorted(base.leaves)
    for name, leaf in log.leaves.items():
        assert leaf.received, name
        assert torch.equal(leaf.grad, base.leaves[name].grad), name  # type: ignore[arg-type]
    assert sorted(log.graph.edges) == sorted(base.graph.edges)


def test_a_disk_dispatched_model_traced_with_offload_keeps_no_weight_in_memory(
    tmp_path: Path,
) -> None:
    """The weights accelerate loads for each call are values of the trace like any other:
    with offload= they go to disk too, so a model too big for memory stays out of it."""
    base_model = _gpt2()
    base = lw.trace(base_model, (_IDS,))
    model = _disk_offload("gpt2", base_model, tmp_path / "weights")
    log = lw.trace(model, (_IDS,), offload=tmp_path / "acts")
    assert log.disk_values is not None
    params = _params(log)
    assert params and all(
        log.disk_values.entry_of(p.activation) is not None for p in params.values()
    )
    for a, b in zip(log.nodes, base.nodes, strict=True):
        assert a.label == b.label
        for x, y in zip(a.activations or (), b.activations or (), strict=True):
            assert torch.equal(x, y), a.label
    assert log.validate().checked == len(log.ops)


def test_transformers_4_ties_are_read_from_the_embeddings() -> None:
    """transformers 4 has no ``all_tied_weights_keys``: the output embeddings' weight is tied
    to the input embeddings' when the config ties word embeddings (and nothing when not)."""
    from lens_widget.capture.dispatch.dispatch_hooks import _tied_embeddings

    model = _gpt2()
    assert _tied_embeddings(model) == {"lm_head.weight": "transformer.wte.weight"}
    model.config.tie_word_embeddings = False
    assert _tied_embeddings(model) == {}
    assert _tied_embeddings(torch.nn.Linear(2, 2)) == {}
