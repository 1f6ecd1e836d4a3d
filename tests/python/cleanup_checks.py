"""Shared assertions: a traced forward must behave exactly like a plain one and leave no trace.

Main entry point: `compare_with_plain_forward(model, args, kwargs)` runs a plain forward on a
deep copy of the model and a trace on the model itself, each from the same seeds, and checks
outputs, state, RNG, inputs, hooks and patched globals. The smaller helpers are usable alone.
"""

from __future__ import annotations

import copy
import gc
import random
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.utils._pytree as pytree
from torch import nn
from torch.utils._python_dispatch import _get_current_dispatch_mode_stack

# ---------------------------------------------------------------- tensors in a return value


def tensor_leaves(obj: Any) -> list[torch.Tensor]:
    """Every tensor in `obj`, in pytree order; objects pytree treats as leaves (e.g. the KV
    caches of transformers) are searched through their attributes."""
    found: list[torch.Tensor] = []
    seen: set[int] = set()

    def visit(value: Any) -> None:
        if isinstance(value, torch.Tensor):
            found.append(value)
            return
        if id(value) in seen or value is None or isinstance(value, (str, bytes, int, float)):
            return
        seen.add(id(value))
        leaves = pytree.tree_leaves(value)
        if len(leaves) != 1 or leaves[0] is not value:
            for leaf in leaves:
                visit(leaf)
        elif isinstance(value, dict):
            for item in value.values():
                visit(item)
        elif isinstance(value, (list, tuple, set)):
            for item in value:
                visit(item)
        elif hasattr(value, "__dict__") and not isinstance(value, (type, types.ModuleType)):
            for item in vars(value).values():
                visit(item)

    visit(obj)
    return found


def assert_tensors_equal(actual: Any, expected: Any, what: str = "output") -> None:
    """Same structure, every tensor bit-identical (NaNs equal), same dtype/shape/requires_grad."""
    got, want = tensor_leaves(actual), tensor_leaves(expected)
    assert len(got) == len(want), f"{what}: {len(got)} tensors, expected {len(want)}"
    for i, (a, b) in enumerate(zip(got, want, strict=True)):
        assert a.shape == b.shape, f"{what}[{i}]: shape {tuple(a.shape)} != {tuple(b.shape)}"
        assert a.dtype == b.dtype, f"{what}[{i}]: dtype {a.dtype} != {b.dtype}"
        torch.testing.assert_close(
            a.detach(),
            b.detach(),
            rtol=0,
            atol=0,
            equal_nan=True,
            msg=lambda m, i=i: f"{what}[{i}]: {m}",
        )
        assert a.requires_grad == b.requires_grad, f"{what}[{i}]: requires_grad differs"


def assert_plain_tensors(obj: Any, what: str = "output") -> None:
    """Every tensor in `obj` is exactly torch.Tensor (no tracer subclass leaked out)."""
    for i, t in enumerate(tensor_leaves(obj)):
        assert type(t) is torch.Tensor, f"{what}[{i}] has type {type(t).__qualname__}"


# ---------------------------------------------------------------- hooks on modules


_MODULE_HOOK_DICTS = (
    "_forward_hooks",
    "_forward_pre_hooks",
    "_forward_hooks_with_kwargs",
    "_forward_hooks_always_called",
    "_forward_pre_hooks_with_kwargs",
    "_backward_hooks",
    "_backward_pre_hooks",
    "_state_dict_hooks",
    "_state_dict_pre_hooks",
    "_load_state_dict_pre_hooks",
    "_load_state_dict_post_hooks",
)


def _hook_names(hooks: Any) -> list[str]:
    # deepcopy turns some hooks into torch's _WrappedHook around the same function
    fns = [getattr(fn, "hook", fn) for fn in hooks.values()]
    return [getattr(fn, "__qualname__", type(fn).__qualname__) for fn in fns]


def module_snapshot(model: nn.Module) -> dict[str, Any]:
    """Hooks, instance attributes, class, training flag and parameter identity of each module."""
    snap: dict[str, Any] = {}
    for name, module in model.named_modules(remove_duplicate=False):
        snap[name] = {
            "class": type(module),
            "training": module.training,
            "attrs": sorted(vars(module)),
            "forward": vars(module).get("forward"),
            # By function name: hook ids differ between a model and its deep copy.
            "hooks": {h: _hook_names(getattr(module, h, {})) for h in _MODULE_HOOK_DICTS},
            "params": {n: id(p) for n, p in module.named_parameters(recurse=False)},
            "buffers": {n: id(b) for n, b in module.named_buffers(recurse=False)},
        }
    return snap


def assert_modules_unchanged(
    model: nn.Module, before: dict[str, Any], reference: nn.Module | None = None
) -> None:
    """Classes, forward, parameters and training flags as `before`; hooks and instance
    attribute names as on `reference`, a deep copy that ran a plain forward (transformers
    caches attributes and installs output-capturing hooks on a first forward)."""
    after = module_snapshot(model)
    assert list(after) == list(before), "module tree changed"
    expected = module_snapshot(reference) if reference is not None else before
    for name, snap in before.items():
        now = after[name]
        where = name or "<root>"
        for key in snap:
            want = expected[name][key] if key in ("attrs", "hooks") else snap[key]
            assert now[key] == want, f"module {where}: {key} changed: {want} -> {now[key]}"
    for name, p in model.named_parameters():
        assert type(p) is nn.Parameter, f"parameter {name} has type {type(p).__qualname__}"
        assert p.grad is None, f"parameter {name} got a .grad"
    for name, b in model.named_buffers():
        assert type(b) is torch.Tensor, f"buffer {name} has type {type(b).__qualname__}"


# ---------------------------------------------------------------- process-wide state


def _global_hook_dicts() -> dict[str, Any]:
    mod = torch.nn.modules.module
    return {
        n: getattr(mod, n) for n in dir(mod) if n.startswith("_global_") and n.endswith("hooks")
    }


def _callables(namespace: Any) -> dict[str, Any]:
    if hasattr(namespace, "__dict__"):
        items = list(vars(namespace).items())
    else:  # C namespaces such as torch._C._VariableFunctions
        # (dunders there are method-wrappers, created anew on each access)
        items = [(n, getattr(namespace, n)) for n in dir(namespace) if not n.startswith("__")]
    return {
        name: value
        for name, value in items
        if callable(value) and not isinstance(value, (type, types.ModuleType))
    }


def _codes(namespace: Any) -> dict[str, Any]:
    """(code, defaults, keyword defaults) of each Python function in `namespace`."""
    return {
        name: (f.__code__, f.__defaults__, f.__kwdefaults__)
        for name, f in _callables(namespace).items()
        if isinstance(f, types.FunctionType)
    }


# Namespaces a tracer might patch; every callable in them must be the same object afterwards.
_PATCHABLE = {
    "torch": torch,
    "torch.nn.functional": torch.nn.functional,
    "torch.functional": torch.functional,
    "torch._tensor": sys.modules["torch._tensor"],
    "torch.overrides": torch.overrides,  # has_torch_function: the fast paths' stand-in
    "torch.Tensor": torch.Tensor,
    "torch._C.TensorBase": torch._C.TensorBase,
    "torch._C._VariableFunctions": torch._C._VariableFunctions,
    "torch.nn.Module": nn.Module,
    "torch.nn.modules.module": sys.modules["torch.nn.modules.module"],
    "torch.nn.Parameter": nn.Parameter,
}


@dataclass
class GlobalSnapshot:
    hooks: dict[str, list[Any]]
    functions: dict[str, dict[str, Any]]
    # each Python function's code and defaults: a tracer may give a function object other
    # code while it runs (module_calls.py does, to nn.Module._call_impl)
    codes: dict[str, dict[str, Any]]
    # the names in torch's modules (a tracer may add one for the time it runs)
    module_names: dict[str, set[str]]
    grad_enabled: bool
    profile: Any
    trace: Any


def global_snapshot() -> GlobalSnapshot:
    hooks = {name: list(d.keys()) for name, d in _global_hook_dicts().items() if hasattr(d, "keys")}
    return GlobalSnapshot(
        hooks=hooks,
        functions={name: _callables(ns) for name, ns in _PATCHABLE.items()},
        codes={name: _codes(ns) for name, ns in _PATCHABLE.items()},
        module_names={
            name: set(vars(ns))
            for name, ns in _PATCHABLE.items()
            if isinstance(ns, types.ModuleType)
        },
        grad_enabled=torch.is_grad_enabled(),
        profile=sys.getprofile(),
        trace=sys.gettrace(),
    )


def assert_globals_unchanged(before: GlobalSnapshot) -> None:
    after = global_snapshot()
    assert after.hooks == before.hooks, (
        f"global module hooks changed: {before.hooks} -> {after.hooks}"
    )
    for ns, funcs in before.functions.items():
        now = after.functions[ns]
        changed = [n for n, f in funcs.items() if now.get(n) is not f]
        assert not changed, f"{ns}: functions replaced or removed: {changed[:10]}"
    for ns, codes in before.codes.items():
        now_codes = after.codes[ns]
        changed = [n for n, c in codes.items() if now_codes.get(n) != c]
        assert not changed, f"{ns}: functions given other code or defaults: {changed[:10]}"
    for ns, names in before.module_names.items():
        added = sorted(after.module_names[ns] - names)
        assert not added, f"{ns}: names left in the module: {added[:10]}"
    assert torch._C._len_torch_function_stack() == 0, "a TorchFunctionMode is still active"
    assert not _get_current_dispatch_mode_stack(), "a TorchDispatchMode is still active"
    assert torch.is_grad_enabled() == before.grad_enabled, "grad mode changed"
    assert sys.getprofile() is before.profile, "sys.setprofile left changed"
    assert sys.gettrace() is before.trace, "sys.settrace left changed"


# ---------------------------------------------------------------- RNG


def seed_all(seed: int) -> None:
    torch.manual_seed(seed)
    random.seed(seed)
    np.random.seed(seed)


def rng_state() -> tuple[torch.Tensor, Any, Any]:
    return torch.get_rng_state(), random.getstate(), np.random.get_state()


def assert_rng_equal(actual: tuple[Any, ...], expected: tuple[Any, ...]) -> None:
    assert torch.equal(actual[0], expected[0]), "torch RNG state differs from a plain forward's"
    assert actual[1] == expected[1], "python random state differs from a plain forward's"
    a, b = actual[2], expected[2]
    assert a[0] == b[0] and np.array_equal(a[1], b[1]) and a[2:] == b[2:], "numpy RNG differs"


# ---------------------------------------------------------------- model state and inputs


def assert_state_equal(model: nn.Module, reference: nn.Module) -> None:
    """state_dicts equal: e.g. BatchNorm running stats updated exactly as a plain forward does."""
    got, want = model.state_dict(), reference.state_dict()
    assert list(got) == list(want), "state_dict keys differ"
    for key, value in want.items():
        assert torch.equal(got[key], value), f"state_dict[{key!r}] differs from a plain forward's"


@dataclass
class InputGuard:
    """Copies of the inputs and their version counters, taken before any forward."""

    tensors: list[torch.Tensor]
    copies: list[torch.Tensor]
    versions: list[int]
    requires_grad: list[bool]

    @classmethod
    def take(cls, *inputs: Any) -> InputGuard:
        tensors = tensor_leaves(inputs)
        return cls(
            tensors=tensors,
            copies=[t.detach().clone() for t in tensors],
            versions=[t._version for t in tensors],
            requires_grad=[t.requires_grad for t in tensors],
        )

    def version_deltas(self) -> list[int]:
        return [t._version - v for t, v in zip(self.tensors, self.versions, strict=True)]

    def assert_unchanged(
        self, inputs: Any, allowed_version_deltas: list[int] | None = None
    ) -> None:
        now = tensor_leaves(inputs)
        assert len(now) == len(self.tensors), "inputs changed structure"
        for i, (t, orig, copy_) in enumerate(zip(now, self.tensors, self.copies, strict=True)):
            assert t is orig, f"input[{i}] was replaced"
            assert type(t) is torch.Tensor, f"input[{i}] has type {type(t).__qualname__}"
            assert torch.equal(t, copy_), f"input[{i}] values changed"
            assert t.requires_grad == self.requires_grad[i], f"input[{i}] requires_grad changed"
        if allowed_version_deltas is not None:
            assert self.version_deltas() == allowed_version_deltas, "inputs were modified in place"


# ---------------------------------------------------------------- the whole comparison


@dataclass
class Comparison:
    log: Any
    output: Any  # the traced call's return value
    reference: Any  # the plain forward's return value
    reference_model: nn.Module


def default_trace(model: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    import lens_widget as lw

    return lw.trace(model, args, kwargs, save="all")


def compare_with_plain_forward(
    model: nn.Module,
    args: tuple[Any, ...],
    kwargs: dict[str, Any] | None = None,
    *,
    seed: int = 0,
    trace: Callable[[nn.Module, tuple[Any, ...], dict[str, Any]], Any] = default_trace,
) -> Comparison:
    """Plain forward on a deep copy, then a trace of `model`, both from `seed`; assert that the
    trace changed nothing a plain forward would not have. Returns the log and both outputs."""
    kwargs = kwargs or {}
    reference_model = copy.deepcopy(model)
    inputs = (args, kwargs)
    guard = InputGuard.take(args, kwargs)
    modules_before = module_snapshot(model)
    globals_before = global_snapshot()

    seed_all(seed)
    reference = reference_model(*args, **kwargs)
    rng_after_plain = rng_state()
    plain_deltas = guard.version_deltas()
    guard.assert_unchanged(inputs)

    # Undo the plain forward's version bumps from the bookkeeping, if any, so both compare alike.
    guard.versions = [t._version for t in guard.tensors]
    seed_all(seed)
    log = trace(model, args, kwargs)
    rng_after_trace = rng_state()

    assert_rng_equal(rng_after_trace, rng_after_plain)
    guard.assert_unchanged(inputs, allowed_version_deltas=plain_deltas)
    assert_globals_unchanged(globals_before)
    assert_modules_unchanged(model, modules_before, reference_model)
    assert_state_equal(model, reference_model)
    output = log.output
    assert_plain_tensors(output)
    assert_tensors_equal(output, reference)
    return Comparison(log=log, output=output, reference=reference, reference_model=reference_model)


def captures_alive() -> int:
    """BackwardCapture objects alive after a full collection. Tests compare counts before and
    after their own trace: a log kept by an earlier test (a widget stays registered with
    ipywidgets, a partial log's traceback holds its frames) may hold one of its own."""
    from lens_widget.capture.backward.backward_capture import BackwardCapture

    gc.collect()
    return sum(type(o) is BackwardCapture for o in gc.get_objects())
