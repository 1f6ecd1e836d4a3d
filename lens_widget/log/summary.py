"""print(log): what a user wants to know at a glance."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from lens_widget.log.records import ModuleInfo, OpRecord

_MAX_OPS_LISTED = 40
_MAX_MODULE_LINES = 40


def human_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GB"


class Summarized(Protocol):
    """What the summary reads from a log (ModelLog has all of it)."""

    @property
    def model_class(self) -> str: ...
    @property
    def error(self) -> BaseException | None: ...
    @property
    def failed_op(self) -> str | None: ...
    @property
    def elapsed(self) -> float: ...
    @property
    def n_params(self) -> int: ...
    @property
    def param_bytes(self) -> int: ...
    @property
    def saved_bytes(self) -> int: ...
    @property
    def structure(self) -> str: ...
    @property
    def modules(self) -> Mapping[str, ModuleInfo]: ...
    @property
    def ops(self) -> Sequence[OpRecord]: ...
    @property
    def inputs(self) -> Sequence[OpRecord]: ...
    @property
    def outputs(self) -> Sequence[OpRecord]: ...


def summarize(log: Summarized) -> str:
    ops = log.ops
    saved = [n for n in ops if n.saved]
    lines = [
        f"ModelLog of {log.model_class}"
        + (
            f"  [PARTIAL: forward raised {type(log.error).__name__}: {log.error}]"
            if log.error
            else ""
        ),
        f"  structure: {log.structure}; {len(log.modules)} modules ran; {len(ops)} ops "
        f"({len({n.layer for n in ops})} distinct layers)",
        f"  inputs: {', '.join(f'{n.label} {_shape(n.shape)}' for n in log.inputs) or 'none'}",
        f"  outputs: {', '.join(f'{n.label} {_shape(n.shape)}' for n in log.outputs) or 'none'}",
        f"  saved: {len(saved)} of {len(ops)} op activations, {human_bytes(log.saved_bytes)}",
        f"  parameters: {log.n_params:,} ({human_bytes(log.param_bytes)})",
        f"  traced in {log.elapsed * 1000:.1f} ms",
    ]
    if log.failed_op:
        lines.append(f"  failed op: {log.failed_op}")
    lines.append("Modules (address: class, passes, ops):")
    modules = list(log.modules.values())  # in the order they first ran
    for info in modules[:_MAX_MODULE_LINES]:
        depth = _depth(log.modules, info.address)
        passes = f" x{info.n_passes}" if info.n_passes > 1 else ""
        name = info.address or "(root)"
        lines.append(f"  {'  ' * depth}{name}: {info.class_name}{passes}, {info.n_ops} ops")
    if len(modules) > _MAX_MODULE_LINES:
        lines.append(f"  ... {len(modules) - _MAX_MODULE_LINES} more modules")
    lines.append("Ops (label: function -> shape  [module]):")
    shown = (
        ops
        if len(ops) <= _MAX_OPS_LISTED
        else ops[: _MAX_OPS_LISTED // 2] + ops[-_MAX_OPS_LISTED // 2 :]
    )
    for i, node in enumerate(shown):
        if len(ops) > _MAX_OPS_LISTED and i == _MAX_OPS_LISTED // 2:
            lines.append(f"  ... {len(ops) - _MAX_OPS_LISTED} more ops ...")
        flag = "  <- raised" if node.failed else ""
        lines.append(f"  {node.label}: {node.func} -> {_shape(node.shape)}  [{node.module}]{flag}")
    return "\n".join(lines)


def _shape(shape: tuple[int, ...] | None) -> str:
    return str(tuple(shape)) if shape is not None else "-"


def _depth(modules: Mapping[str, ModuleInfo], address: str) -> int:
    """Nesting depth among the modules that ran (a ModuleList never runs: no level)."""
    depth, parent = 0, modules[address].parent
    while parent is not None:
        depth += 1
        parent = modules[parent].parent if parent in modules else None
    return depth
