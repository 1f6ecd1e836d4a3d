"""torch's fast paths run under a trace as they run without one (capture/fast_paths.py).

nn.MultiheadAttention, nn.TransformerEncoderLayer and nn.TransformerEncoder choose a fused
kernel only when torch.overrides.has_torch_function is false, which a TorchFunctionMode (the
recorder) makes true. Each case runs the plain forward and the trace from the same seed and
compares them bit for bit (cleanup_checks: also the model, RNG, hooks and torch's functions),
in eval and train, with and without masks, with grad enabled and without.
"""

from __future__ import annotations

import contextlib
import json
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import torch
from cleanup_checks import compare_with_plain_forward
from torch import nn
from torch.overrides import TorchFunctionMode

import lens_widget as lw
from lens_widget.capture import fast_paths
from lens_widget.store.format import NESTED_VERSION
from lens_widget.widget import requests

D, HEADS, BATCH, LENGTH = 16, 4, 3, 6
FUSED = {"_native_multi_head_attention", "_transformer_encoder_layer_fwd"}
GRAD_MODES: dict[str, Callable[[], Any]] = {
    "grad": contextlib.nullcontext,
    "no_grad": torch.no_grad,
    "inference_mode": torch.inference_mode,
}


@pytest.fixture(autouse=True)
def _quiet_nested_prototype() -> Iterator[None]:
    with warnings.catch_warnings():  # torch: "nested tensors are in prototype stage"
        warnings.filterwarnings("ignore", message=".*nested tensors is in prototype stage")
        yield


def _padding_mask() -> torch.Tensor:
    """Left-aligned samples of lengths 6, 4 and 2 (True: padding)."""
    lengths = torch.tensor([LENGTH, 4, 2])
    return torch.arange(LENGTH)[None, :] >= lengths[:, None]


def _causal_mask() -> torch.Tensor:
    return torch.triu(torch.ones(LENGTH, LENGTH, dtype=torch.bool), diagonal=1)


def _encoder(train: bool) -> nn.Module:
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(D, HEADS, 32, dropout=0.1, batch_first=True)
    return nn.TransformerEncoder(layer, 2, enable_nested_tensor=True).train(train)


def _layer(train: bool) -> nn.Module:
    torch.manual_seed(0)
    return nn.TransformerEncoderLayer(D, HEADS, 32, dropout=0.1, batch_first=True).train(train)


class SelfAttention(nn.Module):
    """nn.MultiheadAttention called as self-attention (query, key and value one tensor)."""

    def __init__(self) -> None:
        super().__init__()
        self.attn = nn.MultiheadAttention(D, HEADS, dropout=0.1, batch_first=True)

    def forward(self, x: torch.Tensor, **kwargs: Any) -> Any:
        return self.attn(x, x, x, **kwargs)


def _attention(train: bool) -> nn.Module:
    torch.manual_seed(0)
    return SelfAttention().train(train)


# model, its keyword arguments, the fused ops an untraced forward runs in eval without grad
CASES: dict[str, tuple[Callable[[bool], nn.Module], Callable[[], dict[str, Any]], list[str]]] = {
    "encoder, padding mask (nested)": (
        _encoder,
        lambda: {"src_key_padding_mask": _padding_mask()},
        [
            "_nested_tensor_from_mask",
            "_transformer_encoder_layer_fwd",
            "_transformer_encoder_layer_fwd",
            "to_padded_tensor",
        ],
    ),
    "encoder, no mask": (
        _encoder,
        dict,
        ["_transformer_encoder_layer_fwd", "_transformer_encoder_layer_fwd"],
    ),
    "encoder, causal and padding masks": (
        _encoder,
        lambda: {"mask": _causal_mask(), "src_key_padding_mask": _padding_mask()},
        ["_transformer_encoder_layer_fwd", "_transformer_encoder_layer_fwd"],
    ),
    "layer, no mask": (_layer, dict, ["_transformer_encoder_layer_fwd"]),
    "layer, padding mask": (
        _layer,
        lambda: {"src_key_padding_mask": _padding_mask()},
        ["_transformer_encoder_layer_fwd"],
    ),
    "layer, causal mask": (
        _layer,
        lambda: {"src_mask": _causal_mask()},
        ["_transformer_encoder_layer_fwd"],
    ),
    "attention, no weights": (
        _attention,
        lambda: {"need_weights": False},
        ["_native_multi_head_attention"],
    ),
    "attention, weights": (_attention, dict, ["_native_multi_head_attention"]),
    "attention, key padding mask": (
        _attention,
        lambda: {"key_padding_mask": _padding_mask(), "need_weights": False},
        ["_native_multi_head_attention"],
    ),
    "attention, attn mask": (
        _attention,
        lambda: {"attn_mask": _causal_mask(), "need_weights": False},
        ["_native_multi_head_attention"],
    ),
}


def _input() -> torch.Tensor:
    return torch.randn(BATCH, LENGTH, D, generator=torch.Generator().manual_seed(1))


def _fast_path_ops(log: lw.ModelLog) -> list[str]:
    names = {"_nested_tensor_from_mask", "to_padded_tensor", *FUSED}
    return [op.func for op in log.ops if op.func in names]


class Under(nn.Module):
    """Runs `inner` under a grad mode: the mode is entered inside the forward, so the plain
    run's copy of the model is made outside it (a copy made in inference mode is made of
    inference tensors, which changes the slow path's attention kernel, traced or not)."""

    def __init__(self, mode: Callable[[], Any], inner: nn.Module) -> None:
        super().__init__()
        self.mode, self.inner = mode, inner

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        with self.mode():
            return self.inner(*args, **kwargs)


@pytest.mark.parametrize("grad_mode", list(GRAD_MODES))
@pytest.mark.parametrize("train", [False, True], ids=["eval", "train"])
@pytest.mark.parametrize("case", list(CASES))
def test_a_trace_computes_what_the_plain_forward_computes(case, train, grad_mode):
    make, kwargs, fused_ops = CASES[case]
    model = Under(GRAD_MODES[grad_mode], make(train))
    compared = compare_with_plain_forward(model, (_input(),), kwargs())  # bit for bit
    # torch takes its fast path only in eval without grad: the log shows the op that ran
    fast = not train and grad_mode != "grad"
    assert _fast_path_ops(compared.log) == (fused_ops if fast else [])
    if fast:  # the fused op is the whole module: its submodules never ran
        assert not [op for op in compared.log.ops if op.func in ("linear", "layer_norm")]


def _traced_encoder() -> tuple[lw.ModelLog, torch.Tensor]:
    model = _encoder(train=False)
    x, mask = _input(), _padding_mask()
    with torch.no_grad():
        plain = model(x, src_key_padding_mask=mask)
        log = lw.trace(model, (x,), {"src_key_padding_mask": mask}, save="all")
    return log, plain


def test_the_nested_path_gives_zeros_at_padded_positions_and_records_them_padded():
    log, plain = _traced_encoder()
    assert torch.equal(log.output, plain)
    padding = _padding_mask()
    assert torch.count_nonzero(log.output[padding]) == 0  # the fast path's own result
    samples = ((LENGTH, D), (4, D), (2, D))
    nested = [op for op in log.ops if op.nested_shapes is not None]
    assert [op.func for op in nested] == [
        "_nested_tensor_from_mask",
        "_transformer_encoder_layer_fwd",
        "_transformer_encoder_layer_fwd",
    ]
    for op in nested:
        assert op.nested_shapes == (samples,)
        assert op.padded is not None and "padded with zeros" in op.padded
        assert op.shape == (BATCH, LENGTH, D)
        value = op.activation
        assert value is not None and not value.is_nested and tuple(value.shape) == op.shape
        assert torch.count_nonzero(value[padding]) == 0
    first_layer = nested[1]
    assert first_layer.parents[0] == nested[0].label  # the nested tensor links to its maker
    assert first_layer.module == "layers.0"
    unpad = log.ops[-1]
    assert unpad.func == "to_padded_tensor" and unpad.parents == [nested[2].label]
    assert unpad.nested_shapes is None and unpad.padded is None
    assert torch.equal(unpad.activation, plain)
    line = f"{first_layer.label}: _transformer_encoder_layer_fwd -> (3, 6, 16)  [layers.0]"
    assert f"{line}  (nested, padded)" in str(log)  # the summary says so too
    # the padded value's statistics are of what is saved: zeros at padded positions
    stats = nested[2].stats
    assert stats is not None and stats.zero_fraction >= padding.sum().item() / padding.numel()


def test_validate_replays_the_fast_path_ops_on_nested_tensors():
    log, _ = _traced_encoder()
    report = log.validate(rtol=0, atol=0)
    assert report.skipped == {} and report.checked == len(log.ops)


def test_save_and_load_keep_the_nested_shapes_and_replay_them(tmp_path):
    log, plain = _traced_encoder()
    log.save(tmp_path / "log")
    document = json.loads((tmp_path / "log" / "log.json").read_text())
    assert document["version"] == NESTED_VERSION  # readers of version 5 refuse it as newer
    back = lw.load(tmp_path / "log")
    assert [op.nested_shapes for op in back.ops] == [op.nested_shapes for op in log.ops]
    assert torch.equal(back.output, plain)
    report = back.validate(rtol=0, atol=0)
    assert report.skipped == {} and report.checked == len(back.ops)


def test_a_saved_nested_shape_that_does_not_fit_its_value_is_refused(tmp_path):
    log, _ = _traced_encoder()
    log.save(tmp_path / "log")
    path = tmp_path / "log" / "log.json"
    document = json.loads(path.read_text())
    node = next(n for n in document["nodes"] if "nested_shapes" in n)
    node["nested_shapes"][0][0] = [LENGTH + 1, D]  # longer than the padded value
    path.write_text(json.dumps(document))
    with pytest.raises(lw.LogFormatError, match="does not fit its padded output"):
        lw.load(tmp_path / "log")


def test_the_widget_builds_and_says_a_nested_value_is_shown_padded():
    log, _ = _traced_encoder()
    widget = lw.LensWidget.from_log(log)
    assert widget.model_log is log
    shown = {node["id"]: node for node in widget.graph["unrolled"]["nodes"]}
    layer = next(op for op in log.ops if op.func == "_transformer_encoder_layer_fwd")
    assert shown[layer.label]["shape"] == [BATCH, LENGTH, D]  # the padded shape
    result, _ = requests.activation(log.by_label, {"id": layer.label})
    assert result["note"].startswith("nested tensor shown padded with zeros (samples 6x16, 4x16")
    plain = next(op for op in log.ops if op.func == "to_padded_tensor")
    result, _ = requests.activation(log.by_label, {"id": plain.label})
    assert "nested" not in result["note"]


def test_a_widget_made_from_the_model_traces_the_fast_path():
    model = _encoder(train=False)
    with torch.no_grad():
        widget = lw.LensWidget(model, (_input(),), {"src_key_padding_mask": _padding_mask()})
    funcs = [op.func for op in widget.model_log.ops]
    assert funcs.count("_transformer_encoder_layer_fwd") == 2
    assert "_nested_tensor_from_mask" in funcs


class PassThrough(TorchFunctionMode):
    """A user's own mode: torch's fast paths are off under it, traced or not."""

    def __torch_function__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize("case", ["encoder, padding mask (nested)", "attention, no weights"])
def test_a_users_own_mode_keeps_the_slow_path_as_untraced(case):
    make, kwargs, _ = CASES[case]
    model = make(False)
    with torch.no_grad(), PassThrough():
        plain = model(_input(), **kwargs())
        log = lw.trace(model, (_input(),), kwargs(), save="all")
    got = log.output if isinstance(log.output, torch.Tensor) else log.output[0]
    want = plain if isinstance(plain, torch.Tensor) else plain[0]
    assert torch.equal(got, want)
    assert _fast_path_ops(log) == []  # the user's mode makes has_torch_function true


def test_the_stand_in_is_only_in_place_while_tracing_also_when_the_forward_raises():
    original = torch.overrides.has_torch_function
    seen = []

    class Raising(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.attn = _attention(False)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            seen.append(torch.overrides.has_torch_function)
            out = self.attn(x, need_weights=False)[0]
            raise RuntimeError(f"after {out.shape}")

    with torch.no_grad(), pytest.raises(RuntimeError, match="after") as err:
        lw.trace(Raising(), (_input(),))
    assert seen and seen[0] is not original  # the stand-in ran the forward
    assert torch.overrides.has_torch_function is original
    assert [op.func for op in err.value.lens_log.ops] == ["_native_multi_head_attention"]


def test_a_function_someone_else_put_in_place_is_called_and_kept():
    original = torch.overrides.has_torch_function
    calls = []

    def theirs(args: Any) -> bool:
        calls.append(len(args))
        return original(args)

    torch.overrides.has_torch_function = theirs
    try:
        model = _attention(False)
        with torch.no_grad():
            plain = model(_input(), need_weights=False)[0]
            calls.clear()
            log = lw.trace(model, (_input(),), {"need_weights": False})
        assert calls  # asked, with lens_widget's mode off the stack
        assert torch.equal(log.output[0], plain)
        assert _fast_path_ops(log) == ["_native_multi_head_attention"]
        assert torch.overrides.has_torch_function is theirs
    finally:
        torch.overrides.has_torch_function = original


def test_other_callers_of_has_torch_function_get_the_plain_answer():
    with torch.no_grad(), lw.tracing(save=None):
        # asked outside a fast-path check, with the recorder's mode on the stack
        assert torch.overrides.has_torch_function((torch.ones(1),)) is True


def test_a_fast_path_the_trace_cannot_keep_is_warned_and_noted(monkeypatch, tmp_path):
    """On a torch whose check the stand-in cannot reach (simulated), the trace says which
    module and what changes, and the log keeps the note."""
    monkeypatch.setattr(fast_paths, "UNREACHABLE", (nn.MultiheadAttention,))
    model = _attention(False)
    with torch.no_grad(), pytest.warns(UserWarning, match=r"attn \(MultiheadAttention\)"):
        log = lw.trace(model, (_input(),), {"need_weights": False})
    assert len(log.notes) == 1 and "fused kernel" in log.notes[0]
    log.save(tmp_path / "log")
    assert lw.load(tmp_path / "log").notes == log.notes


def test_a_model_without_gated_modules_has_no_notes():
    log = lw.trace(nn.Linear(3, 3), (torch.randn(2, 3),))
    assert log.notes == []


@pytest.mark.parametrize("target", ["transformer_encoder_layer_fwd_1_6", "layers.0"])
def test_an_intervention_on_a_nested_output_is_refused_clearly(target):
    model, x, mask = _encoder(train=False), _input(), _padding_mask()
    original = torch.overrides.has_torch_function
    with torch.no_grad(), pytest.raises(TypeError, match="is a nested tensor"):
        lw.trace(model, (x,), {"src_key_padding_mask": mask}, intervene={target: lambda t: t * 2})
    assert torch.overrides.has_torch_function is original
    assert torch._C._len_torch_function_stack() == 0


def test_the_nested_path_with_offload_a_save_predicate_and_a_section(tmp_path):
    """Values kept on disk, records read as they are made, and a traced section."""
    model, x, mask = _encoder(train=False), _input(), _padding_mask()
    with torch.no_grad():
        plain = model(x, src_key_padding_mask=mask)
        offloaded = lw.trace(
            model, (x,), {"src_key_padding_mask": mask}, offload=tmp_path, memory_budget=0
        )
        chosen = lw.trace(
            model, (x,), {"src_key_padding_mask": mask}, save=lambda r: r.padded is not None
        )
        with lw.tracing(model) as section:
            out = model(x, src_key_padding_mask=mask)
    assert torch.equal(offloaded.output, plain) and torch.equal(chosen.output, plain)
    assert torch.equal(out, plain)
    report = offloaded.validate(rtol=0, atol=0)
    assert report.skipped == {} and report.checked == len(offloaded.ops)
    assert [op.saved for op in chosen.ops] == [op.nested_shapes is not None for op in chosen.ops]
    assert _fast_path_ops(section.log) == CASES["encoder, padding mask (nested)"][2]


def test_a_widget_rerun_runs_in_the_grad_mode_of_the_first_trace():
    """A widget made under no_grad re-runs without grad too, so the re-run takes the same
    fast path and its labels are those shown."""
    model = _encoder(train=False)
    with torch.no_grad():
        widget = lw.LensWidget(model, (_input(),), {"src_key_padding_mask": _padding_mask()})
    first = [op.label for op in widget.model_log.ops]
    layer = next(op.label for op in widget.model_log.ops if op.padded is not None)
    widget.rerun(layer)  # grad is enabled here
    assert [op.label for op in widget.model_log.ops] == first
    assert torch.is_grad_enabled()


@pytest.mark.parametrize(
    "case", ["encoder, padding mask (nested)", "layer, padding mask", "attention, attn mask"]
)
def test_frozen_weights_take_the_fast_path_with_grad_enabled_traced_too(case):
    """torch checks requires_grad only while grad is enabled: frozen weights and an input
    without grad run the fused kernel with grad on."""
    make, kwargs, fused_ops = CASES[case]
    model = make(False).requires_grad_(False)
    compared = compare_with_plain_forward(model, (_input(),), kwargs())
    assert torch.is_grad_enabled() and _fast_path_ops(compared.log) == fused_ops


class Tagged(torch.Tensor):
    """A user's Tensor subclass: torch's fast paths are off for it, traced or not."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN206
        return super().__torch_function__(func, types, args, kwargs or {})


def test_a_users_tensor_subclass_keeps_the_slow_path_as_untraced():
    model = _attention(False)
    x = _input().as_subclass(Tagged)
    with torch.no_grad():
        plain = model(x, need_weights=False)[0]
        log = lw.trace(model, (x,), {"need_weights": False})
    assert torch.equal(log.output[0].as_subclass(torch.Tensor), plain.as_subclass(torch.Tensor))
    assert _fast_path_ops(log) == []
