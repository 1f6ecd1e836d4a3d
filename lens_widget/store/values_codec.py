"""Plain Python values <-> JSON: an op's non-tensor arguments and the model's output tree.

JSON numbers, strings, booleans, null and lists stand for themselves; every other value is
an object with one "$tag" key (docs/log-format.md lists them). Decoding builds only the
values listed here: tuples, dicts, slices, torch dtypes/devices/layouts/memory formats by
name from tables of torch's own objects. Nothing is imported or evaluated.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable
from typing import Any

import torch

from lens_widget.log.replay import TensorSlot
from lens_widget.store.format import LogFormatError, fail

_MAX_OBJECT_DEPTH = 6
_NON_FINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


class Unencodable(TypeError):
    """A value of a type the format does not store (a Generator, a Python object)."""


@functools.cache
def _named(kind: type) -> dict[str, Any]:
    """torch's objects of one kind by their str(): dtypes, layouts, memory formats."""
    return {str(v): v for v in vars(torch).values() if isinstance(v, kind)}


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def dtype_from_name(name: str, where: str) -> torch.dtype:
    dtype = _named(torch.dtype).get(f"torch.{name}")
    if dtype is None:
        raise fail(where, f"unknown dtype {name[:80]!r}")
    return dtype


# ---- encoding ------------------------------------------------------------------------


def encode_value(value: Any, tensor_ref: Callable[[torch.Tensor], int] | None = None) -> Any:
    """JSON for one argument template (TensorSlot -> "$slot") or output tree (tensors ->
    "$tensor" via `tensor_ref`). Raises Unencodable for a value the format cannot hold."""
    kind = type(value)
    if value is None or kind in (bool, int, str):
        return value
    if kind is float:
        return value if math.isfinite(value) else {"$float": repr(value)}
    if kind is TensorSlot:
        return {"$slot": value.index}
    if tensor_ref is not None and issubclass(kind, torch.Tensor):  # (kind: value stays Any)
        return {"$tensor": tensor_ref(value)}
    if kind is list:
        return [encode_value(v, tensor_ref) for v in value]
    if kind is tuple:
        return {"$tuple": [encode_value(v, tensor_ref) for v in value]}
    if kind is dict:
        return {"$dict": [[encode_value(k), encode_value(v, tensor_ref)] for k, v in value.items()]}
    if kind is torch.Size:
        return {"$size": list(value)}
    if kind is slice:
        return {
            "$slice": [
                encode_value(value.start),
                encode_value(value.stop),
                encode_value(value.step),
            ]
        }
    if value is Ellipsis:
        return {"$ellipsis": None}
    if kind is complex:
        return {"$complex": [encode_value(value.real), encode_value(value.imag)]}
    if kind is torch.dtype:
        return {"$dtype": dtype_name(value)}
    if kind is torch.device:
        return {"$device": str(value)}
    if kind is torch.layout:
        return {"$layout": str(value)}
    if kind is torch.memory_format:
        return {"$memory_format": str(value)}
    raise Unencodable(f"{kind.__module__}.{kind.__qualname__}")


def encode_output(value: Any, tensor_ref: Callable[[torch.Tensor], int], depth: int = 0) -> Any:
    """The model's return value: containers and objects (a ModelOutput, a KV cache) become
    "$object" (type name and fields); what cannot be stored becomes "$unsaved"."""
    try:
        return encode_value(value, tensor_ref)
    except Unencodable:
        pass
    kind = type(value)
    if kind in (list, tuple) or isinstance(value, (list, tuple)):
        items = [encode_output(v, tensor_ref, depth + 1) for v in value]
        return items if isinstance(value, list) else {"$tuple": items}
    fields = _fields(value) if depth < _MAX_OBJECT_DEPTH else None
    if fields is None:
        return {"$unsaved": kind.__qualname__}
    return {
        "$object": {
            "type": kind.__qualname__,
            "fields": [[str(k), encode_output(v, tensor_ref, depth + 1)] for k, v in fields],
        }
    }


def _fields(value: Any) -> list[tuple[Any, Any]] | None:
    if isinstance(value, dict):  # a ModelOutput is an OrderedDict
        return list(value.items())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [(f.name, getattr(value, f.name)) for f in dataclasses.fields(value)]
    if isinstance(value, (torch.nn.Module, type)) or callable(value):
        return None
    attributes = getattr(value, "__dict__", None)
    return list(attributes.items()) if isinstance(attributes, dict) else None


# ---- decoding ------------------------------------------------------------------------


class SavedObject(dict):
    """A container of the saved output (a ModelOutput, a cache): fields by key or attribute.

    `type_name` is the class it was when saved; the class itself is not recreated.
    """

    type_name: str = ""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __repr__(self) -> str:
        return f"{self.type_name}({dict.__repr__(self)})"


def decode_value(
    data: Any, where: str, tensor: Callable[[int, str], Any] | None = None, depth: int = 0
) -> Any:
    """The inverse of encode_value / encode_output. `tensor(id, where)` gives a saved tensor
    for "$tensor"; without it "$tensor" is an error (argument templates hold "$slot")."""
    if depth > 200:
        raise fail(where, "values nested deeper than 200 levels")
    if data is None or isinstance(data, (bool, int, float, str)):
        return data
    if isinstance(data, list):
        return [decode_value(v, where, tensor, depth + 1) for v in data]
    if not isinstance(data, dict) or len(data) != 1:
        raise fail(where, f"a tagged value must be an object with one key, got {_peek(data)}")
    tag, body = next(iter(data.items()))
    decoder = _DECODERS.get(tag)
    if decoder is None or (tag == "$tensor" and tensor is None):
        raise fail(where, f"unknown value tag {tag[:40]!r}")
    try:
        return decoder(body, where, tensor, depth + 1)
    except LogFormatError:
        raise
    except (TypeError, ValueError, RuntimeError) as err:
        raise fail(where, f"bad {tag} value {_peek(body)}: {err}") from None


def _peek(data: Any) -> str:
    text = repr(data)
    return text if len(text) <= 80 else text[:80] + "…"


def _items(body: Any, where: str, tensor: Any, depth: int) -> list[Any]:
    if not isinstance(body, list):
        raise TypeError("expected a list")
    return [decode_value(v, where, tensor, depth) for v in body]


def _count(body: Any) -> int:
    if isinstance(body, bool) or not isinstance(body, int) or body < 0:
        raise TypeError("expected a non-negative integer")
    return body


def _pairs(body: Any, where: str, tensor: Any, depth: int) -> list[tuple[Any, Any]]:
    items = _items(body, where, tensor, depth)
    if not all(isinstance(p, list) and len(p) == 2 for p in items):
        raise TypeError("expected [key, value] pairs")
    for key, _ in items:
        if isinstance(key, (list, dict)):
            raise TypeError(f"unhashable key {_peek(key)}")
    return [(k, v) for k, v in items]


def _from_table(kind: type) -> Callable[[Any, str, Any, int], Any]:
    def decode(body: Any, where: str, tensor: Any, depth: int) -> Any:
        value = _named(kind).get(body) if isinstance(body, str) else None
        if value is None:
            raise ValueError(f"not a torch {kind.__name__}")
        return value

    return decode


def _float(body: Any, where: str, tensor: Any, depth: int) -> float:
    if body not in _NON_FINITE:
        raise ValueError("expected 'nan', 'inf' or '-inf'")
    return _NON_FINITE[body]


def _complex(body: Any, where: str, tensor: Any, depth: int) -> complex:
    parts = _items(body, where, tensor, depth)
    if len(parts) != 2 or not all(isinstance(p, (int, float)) for p in parts):
        raise TypeError("expected [real, imag]")
    return complex(parts[0], parts[1])


def _slice(body: Any, where: str, tensor: Any, depth: int) -> slice:
    parts = _items(body, where, tensor, depth)
    if len(parts) != 3:
        raise TypeError("expected [start, stop, step]")
    return slice(*parts)


def _device(body: Any, where: str, tensor: Any, depth: int) -> torch.device:
    if not isinstance(body, str) or len(body) > 64:
        raise TypeError("expected a device name")
    return torch.device(body)


def _size(body: Any, where: str, tensor: Any, depth: int) -> torch.Size:
    if not isinstance(body, list) or not all(type(v) is int for v in body):
        raise TypeError("expected a list of integers")
    return torch.Size(body)


def _object(body: Any, where: str, tensor: Any, depth: int) -> SavedObject:
    if not isinstance(body, dict) or set(body) != {"type", "fields"}:
        raise TypeError('expected {"type", "fields"}')
    if not isinstance(body["type"], str):
        raise TypeError("type must be a string")
    result = SavedObject(_pairs(body["fields"], where, tensor, depth))
    result.type_name = body["type"]
    return result


def _unsaved(body: Any, where: str, tensor: Any, depth: int) -> str:
    if not isinstance(body, str):
        raise TypeError("expected a type name")
    return f"<{body} not saved>"


def _tensor(body: Any, where: str, tensor: Any, depth: int) -> Any:
    return tensor(_count(body), where)


_DECODERS: dict[str, Callable[[Any, str, Any, int], Any]] = {
    "$float": _float,
    "$slot": lambda body, where, tensor, depth: TensorSlot(_count(body)),
    "$tensor": _tensor,
    "$tuple": lambda body, where, tensor, depth: tuple(_items(body, where, tensor, depth)),
    "$dict": lambda body, where, tensor, depth: dict(_pairs(body, where, tensor, depth)),
    "$size": _size,
    "$slice": _slice,
    "$ellipsis": lambda body, where, tensor, depth: Ellipsis,
    "$complex": _complex,
    "$dtype": lambda body, where, tensor, depth: dtype_from_name(str(body), where),
    "$device": _device,
    "$layout": _from_table(torch.layout),
    "$memory_format": _from_table(torch.memory_format),
    "$object": _object,
    "$unsaved": _unsaved,
}
