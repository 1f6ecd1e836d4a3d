"""`trace(..., intervene={target: fn})`: which op or module call gets its output replaced.

A target is an op's layer label ("relu_1_2": every pass), a label with a pass
("relu_1_2:3": that pass only), a module address ("transformer.h.3.attn": every call) or an
address with a pass ("transformer.h.3.attn:2"). Labels exist only while tracing, so an op
target is matched against the label each op gets as it runs; a target that never matched
is reported after the pass, with the names it might have meant.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import torch
from torch.utils import _pytree as pytree

Tensor = torch.Tensor
InterventionFn = Callable[[Tensor], Tensor]


def _split_pass(target: str) -> tuple[str, int | None]:
    name, sep, tail = target.rpartition(":")
    if sep and tail.isdigit() and int(tail) >= 1:
        return name, int(tail)
    return target, None


class Interventions:
    """The functions to apply, by (name, pass or None), and which targets matched."""

    def __init__(self, spec: Mapping[str, InterventionFn], module_addresses: Iterable[str]) -> None:
        if not isinstance(spec, Mapping):
            raise TypeError(
                f"intervene must be a mapping of op label or module address to a function, "
                f"got {type(spec).__name__}"
            )
        modules = set(module_addresses)
        self.ops: dict[tuple[str, int | None], tuple[str, InterventionFn]] = {}
        self.modules: dict[tuple[str, int | None], tuple[str, InterventionFn]] = {}
        self._module_names: set[str] = set()
        for target, fn in spec.items():
            if not isinstance(target, str):
                raise TypeError(f"intervene targets are strings, got {target!r}")
            if not callable(fn):
                raise TypeError(f"intervene[{target!r}] must be a function, got {fn!r}")
            name, pass_index = _split_pass(target)
            if name in modules:
                self.modules[(name, pass_index)] = (target, fn)
                self._module_names.add(name)
            else:
                self.ops[(name, pass_index)] = (target, fn)
        self.matched: set[str] = set()

    def for_op(self, layer: str, pass_index: int) -> tuple[str, InterventionFn] | None:
        ops = self.ops
        found = ops.get((layer, pass_index)) or ops.get((layer, None))
        if found is not None:
            self.matched.add(found[0])
        return found

    def for_module(self, address: str, pass_index: int) -> tuple[str, InterventionFn] | None:
        if address not in self._module_names:
            return None
        modules = self.modules
        found = modules.get((address, pass_index)) or modules.get((address, None))
        if found is not None:
            self.matched.add(found[0])
        return found

    def unmatched_error(self, known_names: Iterable[str]) -> ValueError | None:
        """The error for targets that matched no op or module call, None if all matched."""
        targets = [t for t, _ in (*self.ops.values(), *self.modules.values())]
        missing = [t for t in targets if t not in self.matched]
        if not missing:
            return None
        names = sorted(set(known_names))
        lines = []
        for target in missing:
            close = difflib.get_close_matches(target, names, n=5, cutoff=0.6)
            hint = f" (close: {', '.join(close)})" if close else ""
            lines.append(f"{target!r}{hint}")
        return ValueError(
            "lens_widget: intervene targets matched no op label or module call of this pass: "
            + "; ".join(lines)
            + ". Op targets are labels such as 'relu_1_2' (every pass) or 'relu_1_2:3' (one "
            "pass); module targets are addresses such as 'encoder.layer.0' (or 'addr:2')."
        )


def apply_intervention(target: str, fn: InterventionFn, value: Tensor, where: str) -> Tensor:
    """fn(value), checked to be a tensor of the same shape and dtype."""
    new = fn(value)
    if not isinstance(new, Tensor):
        raise TypeError(
            f"lens_widget: intervene[{target!r}] at {where} returned {type(new).__name__}, "
            "not a tensor"
        )
    if new.shape != value.shape or new.dtype != value.dtype:
        raise ValueError(
            f"lens_widget: intervene[{target!r}] at {where} returned a {new.dtype} tensor of "
            f"shape {tuple(new.shape)}; the output it replaces is {value.dtype} "
            f"{tuple(value.shape)}"
        )
    return new


def replace_tensor(output: Any, old: Tensor, new: Tensor, where: str) -> Any:
    """`output` with the tensor `old` (wherever it sits in the container) replaced by `new`."""
    if output is old:
        return new
    replaced = pytree.tree_map_only(Tensor, lambda v: new if v is old else v, output)
    if not any(leaf is new for leaf in pytree.tree_leaves(replaced)):
        raise TypeError(
            f"lens_widget: cannot replace the output of {where} inside a "
            f"{type(output).__name__} (not a container torch.utils._pytree can rebuild)"
        )
    return replaced
