"""What the inspector says of one op's call ("opDetails"): every argument by the role it
plays, non-tensor values printed and tensors named by the node that produced them; the whole
source statement; the op's FLOPs, time and parameter count.

Built from the replay template every op keeps (log/replay.py): the call's own Python
values, with a slot where each tensor was.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import torch

from lens_widget.log.records import OpRecord, ParentRef
from lens_widget.log.replay import PytreeTemplate, TensorSlot
from lens_widget.store.torch_functions import describe_function, function_name
from lens_widget.widget import protocol
from lens_widget.widget.argument_roles import argument_names
from lens_widget.widget.checks import cut
from lens_widget.widget.source_statement import statement_at

# The longest value text sent (a long list of sizes is cut with an ellipsis).
MAX_VALUE = 120
# A list of tensors (torch.cat's) lists at most this many, then says how many more.
MAX_TENSORS = 64


def op_details(
    record: OpRecord, reach: Callable[[], Mapping[str, bool]] | None = None
) -> protocol.OpDetailsResult:
    """The answer for `record`; `reach` gives log/nonfinite.py's `nonfinite_reach` of its log,
    asked only when the op's own output holds NaN/Inf."""
    call, refs = record.replay if record.replay is not None else (None, [])
    arguments: list[protocol.CallArgument] = []
    function = ""
    if call is not None and call.unavailable is None:
        function = function_name(call.func) or describe_function(call.func)
        names, defaults = argument_names(call.func, len(call.args), list(call.kwargs))
        for name, value in _grouped(names, call.args):
            arguments += _arguments(name, value, refs)
        for name, value in call.kwargs.items():
            arguments += _arguments(name, value, refs)
        arguments += [_value(name, value, default=True) for name, value in defaults]
    elif record.kind == "output" and refs:
        arguments = _arguments("value", TensorSlot(0), refs)
    flops = record.flops if record.kind == "op" else None
    stats = record.output_stats
    nonfinite: protocol.NonfiniteReach | None = None
    if reach is not None and stats is not None and not all(s.finite for s in stats):
        nonfinite = "masked" if reach().get(record.label) is False else "reaches"
    return {
        "id": record.label,
        "function": function,
        "arguments": arguments,
        "statement": statement_at(record.source, record.source_code) if record.source else "",
        "flops": flops,
        "timeMs": record.time_ms,
        "paramCount": record.param_count,
        "nonfinite": nonfinite,
    }


def _grouped(names: list[str], args: tuple[Any, ...]) -> list[tuple[str, Any]]:
    """(name, value) of each positional argument; the sizes of `x.view(2, -1)`, passed one by
    one into one parameter, as one tuple."""
    pairs: list[tuple[str, Any]] = []
    i = 0
    while i < len(args):
        j = i + 1
        while j < len(args) and names[j] == names[i]:
            j += 1
        pairs.append((names[i], args[i] if j == i + 1 else tuple(args[i:j])))
        i = j
    return pairs


def _arguments(name: str, value: Any, refs: list[ParentRef]) -> list[protocol.CallArgument]:
    """One entry per tensor in `value` (a list of tensors gives "tensors[0]", ...), or one
    for the whole value when it holds none."""
    if type(value) is TensorSlot:
        return [_tensor(name, value.index, refs)]
    if type(value) in (tuple, list) and any(type(v) is TensorSlot for v in value):
        items = [
            _tensor(f"{name}[{i}]", v.index, refs)
            if type(v) is TensorSlot
            else _value(f"{name}[{i}]", v)
            for i, v in enumerate(value[:MAX_TENSORS])
        ]
        if len(value) > MAX_TENSORS:
            items.append(_value(f"{name}[…]", f"{len(value) - MAX_TENSORS} more"))
        return items
    return [_value(name, value)]


def _tensor(name: str, slot: int, refs: list[ParentRef]) -> protocol.CallArgument:
    if slot >= len(refs):  # a tensor no node produced (kept as a literal of the call)
        return _value(name, "a tensor")
    _, parent, output = refs[slot]
    shape = parent.shapes[output] if output < len(parent.shapes) else parent.shape
    return {
        "name": name,
        "value": None,
        "producer": parent.label,
        "output": output,
        "shape": "x".join(map(str, shape)) if shape is not None else None,
        "default": False,
    }


def _value(name: str, value: Any, default: bool = False) -> protocol.CallArgument:
    return {
        "name": name,
        "value": cut(value_text(value), MAX_VALUE),
        "producer": None,
        "output": 0,
        "shape": None,
        "default": default,
    }


def value_text(value: Any) -> str:
    """A non-tensor argument as Python would write it (`slice(None, 3)` as `:3`)."""
    kind = type(value)
    if value is None or kind in (bool, int, str):
        return repr(value)
    if kind is float:
        return repr(value) if math.isfinite(value) else f"float('{value}')"
    if kind is slice:
        parts = [value_text(v) if v is not None else "" for v in (value.start, value.stop)]
        step = f":{value_text(value.step)}" if value.step is not None else ""
        return ":".join(parts) + step
    if value is Ellipsis:
        return "..."
    if isinstance(value, (torch.dtype, torch.device, torch.layout)):
        return str(value)
    if kind is torch.Size:
        return value_text(tuple(value))
    if kind is tuple:
        inner = ", ".join(value_text(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if kind is list:
        return "[" + ", ".join(value_text(v) for v in value) + "]"
    if kind is dict:
        return "{" + ", ".join(f"{k!r}: {value_text(v)}" for k, v in value.items()) + "}"
    if kind is TensorSlot:
        return "a tensor"
    if kind is PytreeTemplate:
        return "a structure of tensors"
    return f"<{kind.__name__}>"
