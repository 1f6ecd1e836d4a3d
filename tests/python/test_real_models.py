"""Trace small real models (transformers families, torch.nn classics) and check the trace is
faithful: same outputs, same side effects as a plain forward, no leftovers, a valid log."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import torch
import torch.utils._pytree as pytree
from cleanup_checks import (
    assert_globals_unchanged,
    assert_modules_unchanged,
    assert_state_equal,
    compare_with_plain_forward,
    global_snapshot,
    module_snapshot,
    seed_all,
    tensor_leaves,
)
from torch import nn

from lens_widget.capture.class_names import class_label
from model_zoo import TEST_MODELS, ZooCase

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning")

NAMES = list(TEST_MODELS)
MODES = ["eval", "train"]


def build(name: str, mode: str) -> ZooCase:
    case = TEST_MODELS[name]()
    case.model.train(mode == "train")
    return case


def plain_forward(case: ZooCase, seed: int, model: nn.Module | None = None) -> Any:
    seed_all(seed)
    with torch.no_grad():
        return (model or case.model)(*case.args, **case.kwargs)


def module_calls(case: ZooCase, seed: int) -> dict[str, int]:
    """How many times each module's forward ran in a plain forward of a copy of the model."""
    model = copy.deepcopy(case.model)
    names = {id(m): name for name, m in model.named_modules()}
    calls: dict[str, int] = {}

    def count(module: nn.Module, _args: Any) -> None:
        name = names.get(id(module))
        if name is not None:
            calls[name] = calls.get(name, 0) + 1

    handle = torch.nn.modules.module.register_module_forward_pre_hook(count)
    try:
        plain_forward(case, seed, model)
    finally:
        handle.remove()
    return calls


def pytree_tensors(obj: Any) -> list[torch.Tensor]:
    return [leaf for leaf in pytree.tree_leaves(obj) if isinstance(leaf, torch.Tensor)]


# ---------------------------------------------------------------- the zoo itself (no tracer)


@pytest.mark.parametrize("name", NAMES)
def test_zoo_model_is_deterministic_in_eval(name: str) -> None:
    a, b = build(name, "eval"), build(name, "eval")
    out_a, out_b = plain_forward(a, 0), plain_forward(b, 1)
    leaves_a, leaves_b = tensor_leaves(out_a), tensor_leaves(out_b)
    assert leaves_a, "model returned no tensors"
    assert all(torch.equal(x, y) for x, y in zip(leaves_a, leaves_b, strict=True))


@pytest.mark.parametrize("name", NAMES)
def test_zoo_train_mode_randomness_is_as_declared(name: str) -> None:
    # Guards the train-mode trace tests: models declared random must give different outputs
    # with two seeds, so a tracer that disturbs the RNG would be caught.
    case = build(name, "train")
    first = tensor_leaves(plain_forward(case, 0))[0]
    second = tensor_leaves(plain_forward(case, 1))[0]
    assert torch.equal(first, second) != case.random_in_train


# ---------------------------------------------------------------- traces


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", NAMES)
def test_trace_is_faithful(name: str, mode: str) -> None:
    case = build(name, mode)
    calls = module_calls(case, seed=7)
    result = compare_with_plain_forward(case.model, case.args, case.kwargs, seed=7)
    log = result.log

    assert log.error is None and log.failed_op is None
    log.validate()
    assert log.model_class == type(case.model).__name__

    ops = log.ops
    assert len(ops) >= case.min_ops, f"only {len(ops)} ops traced"
    assert all(op.kind == "op" for op in ops)
    assert [op.index for op in ops] == sorted(op.index for op in ops), "ops not in execution order"
    funcs = {op.func for op in ops}
    expected = case.expected_ops + (case.train_ops if mode == "train" else ())
    missing = [f for f in expected if f not in funcs]
    assert not missing, f"ops not traced: {missing}"

    # save="all": every op that produced tensors kept them, as plain tensors.
    for op in ops:
        # no_values: inside a torch.func transform (transformers 4.5x builds masks in vmap)
        if op.shape is None or op.no_values is not None:
            continue
        assert op.activations is not None, f"{op.label} ({op.func}) has no saved activation"
        for t in op.activations:
            assert type(t) is torch.Tensor, f"{op.label}: saved {type(t).__qualname__}"
        assert tuple(op.activation.shape) == tuple(op.shape), f"{op.label}: shape mismatch"

    # Each output leaf is the activation of the op the log says produced it.
    leaves = tensor_leaves(result.output)  # walks KV caches too, as the log does
    sinks = [r for r in log.nodes if r.kind == "output"]
    assert len(sinks) == len(leaves), f"{len(sinks)} output nodes for {len(leaves)} output tensors"
    for i, (sink, leaf) in enumerate(zip(sinks, leaves, strict=True)):
        assert len(sink.parents) == 1, f"output {sink.label} has parents {sink.parents}"
        producer = log[sink.parents[0]]
        index = sink.parent_args[0].output_index if sink.parent_args else 0
        assert producer.activations is not None, f"output {i}: producer {producer.label} unsaved"
        saved = producer.activations[index]
        assert torch.equal(saved, leaf.detach()), f"output {i}: {producer.label} activation differs"
        assert producer.feeds_output, f"{producer.label} feeds output but is not marked so"

    # Autograd still works through the traced output: same gradients as the plain forward's.
    traced_loss, plain_loss = (
        sum(t.float().sum() for t in pytree_tensors(out) if t.requires_grad)
        for out in (result.output, result.reference)
    )
    assert isinstance(traced_loss, torch.Tensor), "traced output does not require grad"
    traced_loss.backward()
    plain_loss.backward()
    plain_params = dict(result.reference_model.named_parameters())
    for pname, param in case.model.named_parameters():
        want = plain_params[pname].grad
        assert (param.grad is None) == (want is None), f"{pname}: grad presence differs"
        if want is not None:
            torch.testing.assert_close(param.grad, want, rtol=1e-5, atol=1e-6, msg=pname)

    # Module bookkeeping agrees with what a plain forward actually called.
    named = dict(case.model.named_modules())
    for address, info in log.modules.items():
        # A module built inside forward is named "<Class>" under the module that called it.
        known = address.rsplit(".", 1)[0] if address.endswith(">") else address
        assert known in named or known.startswith("<"), f"unknown module address {address!r}"
        if address in named:
            assert info.class_name == class_label(type(named[address]))
        else:  # the address has the bare name ("lora.Linear" would add a dot to it)
            assert address.endswith(f"<{info.class_name.rsplit('.', 1)[-1]}>")
    for address, count in calls.items():
        module = named[address]
        if address and any(True for _ in module.parameters(recurse=False)):
            assert address in log.modules, f"module {address} ran but is not in log.modules"
            assert log.modules[address].n_passes == count, f"{address}: passes differ"


@pytest.mark.parametrize("name", ["gpt2", "t5", "resnet"])
def test_trace_under_no_grad_and_without_saving(name: str) -> None:
    import lens_widget as lw

    case = build(name, "eval")

    def trace(model: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return lw.trace(model, args, kwargs, save=None)

    with torch.no_grad():
        result = compare_with_plain_forward(case.model, case.args, case.kwargs, trace=trace)
    assert len(result.log.ops) >= case.min_ops
    assert all(op.activations is None for op in result.log.ops)


def _broken_inputs(name: str, case: ZooCase) -> tuple[tuple[Any, ...], dict[str, Any]]:
    if name == "gpt2":  # a token id past the vocabulary: the embedding lookup raises
        ids = case.args[0].clone()
        ids[0, 5] = 10_000
        return (ids,), case.kwargs
    if name == "small_cnn":  # 4 channels into a 3-channel conv, after nothing else ran
        return (torch.randn(2, 4, 32, 32),), {}
    # a bad decoder token: fails in the decoder, after the whole encoder ran
    decoder_ids = case.kwargs["decoder_input_ids"].clone()
    decoder_ids[1, 2] = 10_000
    return case.args, {**case.kwargs, "decoder_input_ids": decoder_ids}


FAILING_FUNC = {"gpt2": "embedding", "small_cnn": "conv2d", "t5": "embedding"}
MIN_OPS_BEFORE_FAILURE = {"gpt2": 1, "small_cnn": 1, "t5": 100}  # t5: the encoder ran


@pytest.mark.parametrize("name", list(FAILING_FUNC))
def test_failing_forward_reraises_and_cleans_up(name: str) -> None:
    import lens_widget as lw

    case = build(name, "train")
    args, kwargs = _broken_inputs(name, case)
    reference = copy.deepcopy(case.model)
    with pytest.raises(Exception) as plain:
        reference(*args, **kwargs)

    modules_before = module_snapshot(case.model)
    globals_before = global_snapshot()
    with pytest.raises(type(plain.value)) as traced:
        lw.trace(case.model, args, kwargs, save="all")
    assert str(traced.value) == str(plain.value)
    assert_globals_unchanged(globals_before)
    assert_modules_unchanged(case.model, modules_before, reference)
    assert_state_equal(case.model, reference)

    log = traced.value.lens_log
    # a built-in exception class takes no weak reference: the log names it by a copy
    assert type(log.error) is type(traced.value) and str(log.error) == str(traced.value)
    assert log.failed_op is not None
    failed = log[log.failed_op]
    assert failed.failed and failed.error
    assert failed.func == FAILING_FUNC[name]
    # Everything up to the failure is kept, and the failed op is the last one.
    assert log.ops[-1].label == log.failed_op
    assert all(not op.failed for op in log.ops[:-1])
    assert len(log.ops) >= MIN_OPS_BEFORE_FAILURE[name]
