"""The `graph` trait on the wire: any JSON-like value (a GraphPayload) as compact bytes.

JSON repeats every key and most strings once per node (~1.3 KiB an op). Here each list of
dicts (nodes, edges, modules) becomes one column per key, every string is stored once in a
string table, numbers and string indices travel as little-endian typed arrays, and the whole
is zlib-compressed. Nothing here names a payload field: a key added to NodeInfo travels as
it is. js/src/kernel/wire.ts decodes the bytes back to the same objects; `decode` below does
the same in Python (tests, saved notebooks).

Layout before compression: b"LWG1", uint32 header length, the header (ASCII JSON:
{"strings": [...], "blocks": [[dtype, offset, count], ...], "root": column}), zero padding
to a multiple of 8, then the blocks, each at a multiple of 8 from there.

A column describes n values (n comes from its parent; the root is a column of one value):
  {"c": "str", "d": data}                      strings: indices into "strings"
  {"c": "int" | "float" | "bool", "d": data}   numbers (bool: 0/1)
  {"c": "null"}                                all None
  {"c": "opt", "m": data, "v": column}         some None: "m" 1 where present, "v" those values
  {"c": "list", "n": data, "v": column}        lists: lengths, then all items flattened
  {"c": "tuple", "v": [column, ...]}           lists of one length whose positions differ in type
  {"c": "obj", "k": [key, ...], "v": [column, ...], "m": [data | null, ...]}
                                               dicts: a column per key; "m": where a key is present
  {"c": "json", "v": [...]}                    anything else, as plain JSON
`data` is a block index, or the numbers themselves (a JSON list) when there are few.
"""

from __future__ import annotations

import array
import base64
import json
import struct
import sys
import zlib
from collections.abc import Mapping
from operator import itemgetter
from typing import Any

MAGIC = b"LWG1"
_NONE = type(None)
_INLINE_MAX = 8  # integer data this short goes in the header, not in a block
_EXACT_INT = 2**53  # beyond this a JavaScript number is not exact: such ints travel as JSON
# dtype -> array typecode; "u32"/"i32" need a 4-byte typecode ("I"/"i" on every platform we run on)
_TYPECODES = {"u8": "B", "u16": "H", "u32": "I", "i8": "b", "i16": "h", "i32": "i", "f64": "d"}
_INT_RANGES = (("u8", 0, 0xFF), ("u16", 0, 0xFFFF), ("u32", 0, 0xFFFFFFFF))
_SIGNED_RANGES = (("i8", -0x80, 0x7F), ("i16", -0x8000, 0x7FFF), ("i32", -(2**31), 2**31 - 1))


class WireError(ValueError):
    """The value cannot travel (a type JSON has no form for), or the bytes are not a graph."""


class _Strings(dict[str, int]):
    """String -> its index in the table, adding strings as they are first seen."""

    def __missing__(self, key: str) -> int:
        self[key] = index = len(self)
        return index


class _Encoder:
    def __init__(self) -> None:
        self.strings = _Strings()
        self.blocks: list[list[Any]] = []  # [dtype, offset, count]
        self.chunks: list[bytes] = []
        self.size = 0

    def ints(
        self, values: list[int], lo: int | None = None, hi: int | None = None
    ) -> int | list[int]:
        """Integers (within 2**53) as a block (its index), or inline when they are few;
        `lo`, `hi`: their min and max, when the caller has them."""
        if len(values) <= _INLINE_MAX:
            return list(values)
        if lo is None or hi is None:
            lo, hi = min(values), max(values)
        return self._block(_int_dtype(lo, hi), values)

    def floats(self, values: list[float]) -> int:
        return self._block("f64", values)

    def _block(self, dtype: str, values: list[int] | list[float]) -> int:
        packed = array.array(_TYPECODES[dtype], values)
        if sys.byteorder == "big":
            packed.byteswap()
        raw = packed.tobytes()
        self.blocks.append([dtype, self.size, len(values)])
        self.chunks.append(raw)
        self.size += len(raw)
        if self.size % 8:
            pad = 8 - self.size % 8
            self.chunks.append(b"\0" * pad)
            self.size += pad
        return len(self.blocks) - 1

    def column(self, values: list[Any]) -> dict[str, Any]:
        if not values:
            return {"c": "json", "v": []}
        types = set(map(type, values))
        if _NONE in types:
            if len(types) == 1:
                return {"c": "null"}
            present = [v is not None for v in values]
            kept = [v for v in values if v is not None]
            return {
                "c": "opt",
                "m": self.ints(list(map(int, present)), 0, 1),
                "v": self.column(kept),
            }
        if len(types) == 1:
            (kind,) = types
            if kind is str:
                before = len(self.strings)
                indices = list(map(self.strings.__getitem__, values))
                hi = len(self.strings) - 1 if len(self.strings) > before else max(indices)
                return {"c": "str", "d": self.ints(indices, 0, hi)}
            if kind is bool:
                return {"c": "bool", "d": self.ints(list(map(int, values)), 0, 1)}
            if kind is int:
                lo, hi = min(values), max(values)
                if lo >= -_EXACT_INT and hi <= _EXACT_INT:
                    return {"c": "int", "d": self.ints(values, lo, hi)}
            if kind is float:
                return {"c": "float", "d": self.floats(values)}
            if kind is dict:
                return self._dicts(values)
        if types <= {int, float} and all(abs(v) <= _EXACT_INT for v in values if type(v) is int):
            return {"c": "float", "d": self.floats(list(map(float, values)))}
        if types <= {list, tuple}:
            return self._lists(values)
        return {"c": "json", "v": _plain_json(values)}

    def _lists(self, values: list[list[Any] | tuple[Any, ...]]) -> dict[str, Any]:
        lengths = list(map(len, values))
        flat = [x for v in values for x in v]
        kinds = set(map(type, flat)) - {_NONE}
        mixed = len(kinds) > 1 and not kinds <= {int, float}
        if mixed and len(set(lengths)) == 1:  # e.g. [name, shape] pairs: a column per position
            return {
                "c": "tuple",
                "v": [self.column([v[i] for v in values]) for i in range(lengths[0])],
            }
        return {"c": "list", "n": self.ints(lengths), "v": self.column(flat)}

    def _dicts(self, values: list[dict[Any, Any]]) -> dict[str, Any]:
        shapes = dict.fromkeys(map(tuple, values))  # key sequences, in order of first use
        keys = list(dict.fromkeys(k for shape in shapes for k in shape))
        bad = [k for k in keys if type(k) is not str]
        if bad:
            raise WireError(f"dict keys must be strings, got {bad[0]!r}")
        columns: list[dict[str, Any]] = []
        masks: list[int | list[int] | None] = []
        for key in keys:
            if len(shapes) == 1 or all(key in shape for shape in shapes):
                columns.append(self.column(list(map(itemgetter(key), values))))
                masks.append(None)
            else:
                present = [int(key in v) for v in values]
                columns.append(self.column([v[key] for v in values if key in v]))
                masks.append(self.ints(present, 0, 1))
        return {"c": "obj", "k": keys, "v": columns, "m": masks}


def _int_dtype(lo: int, hi: int) -> str:
    for dtype, low, high in _INT_RANGES if lo >= 0 else _SIGNED_RANGES:
        if low <= lo and hi <= high:
            return dtype
    return "f64"  # exact: callers keep ints within 2**53


def _plain_json(values: list[Any]) -> list[Any]:
    try:  # what JSON.parse can read back: no NaN, no infinities
        json.dumps(values, allow_nan=False)
    except (TypeError, ValueError) as err:
        raise WireError(f"cannot encode {_short(values)}: {err}") from None
    return values


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 200 else text[:200] + "…"


def encode(value: Any, level: int = 4) -> bytes:
    """`value` (dicts, lists, str, int, float, bool, None) as compressed bytes."""
    enc = _Encoder()
    root = enc.column([value])
    header = json.dumps(
        {"strings": list(enc.strings), "blocks": enc.blocks, "root": root},
        ensure_ascii=True,  # exact for any str, lone surrogates included
        separators=(",", ":"),
        allow_nan=False,
    ).encode("ascii")
    head = MAGIC + struct.pack("<I", len(header)) + header
    head += b"\0" * (-len(head) % 8)
    return zlib.compress(head + b"".join(enc.chunks), level)


# ---- decoding (the same steps as js/src/kernel/wire.ts) -----------------------------------


class _Decoder:
    def __init__(self, raw: bytes) -> None:
        if raw[:4] != MAGIC:
            raise WireError("not a lens_widget graph (bad magic)")
        (length,) = struct.unpack_from("<I", raw, 4)
        header = json.loads(raw[8 : 8 + length])
        self.base = 8 + length + (-(8 + length) % 8)
        self.raw = raw
        self.strings: list[str] = header["strings"]
        self.blocks: list[list[Any]] = header["blocks"]
        self.root = header["root"]

    def data(self, ref: int | list[int]) -> list[Any]:
        if isinstance(ref, list):
            return ref
        dtype, offset, count = self.blocks[ref]
        packed = array.array(_TYPECODES[dtype])
        start = self.base + offset
        packed.frombytes(self.raw[start : start + count * packed.itemsize])
        if sys.byteorder == "big":
            packed.byteswap()
        return packed.tolist()

    def column(self, col: dict[str, Any], n: int) -> list[Any]:
        kind = col["c"]
        if kind == "str":
            return [self.strings[i] for i in self.data(col["d"])]
        if kind == "int":
            return [int(v) for v in self.data(col["d"])]
        if kind == "float":
            return [float(v) for v in self.data(col["d"])]
        if kind == "bool":
            return [bool(v) for v in self.data(col["d"])]
        if kind == "null":
            return [None] * n
        if kind == "json":
            return list(col["v"])
        if kind == "opt":
            mask = self.data(col["m"])
            it = iter(self.column(col["v"], sum(mask)))
            return [next(it) if m else None for m in mask]
        if kind == "list":
            lengths = self.data(col["n"])
            flat = self.column(col["v"], sum(lengths))
            out, pos = [], 0
            for length in lengths:
                out.append(flat[pos : pos + length])
                pos += length
            return out
        if kind == "tuple":
            return [list(row) for row in zip(*(self.column(c, n) for c in col["v"]), strict=True)]
        if kind == "obj":
            return self._dicts(col, n)
        raise WireError(f"unknown column kind {kind!r}")

    def _dicts(self, col: dict[str, Any], n: int) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = [{} for _ in range(n)]
        for key, sub, mask_ref in zip(col["k"], col["v"], col["m"], strict=True):
            if mask_ref is None:
                for row, value in zip(rows, self.column(sub, n), strict=True):
                    row[key] = value
                continue
            mask = self.data(mask_ref)
            present = (row for row, m in zip(rows, mask, strict=True) if m)
            for row, value in zip(present, self.column(sub, sum(mask)), strict=True):
                row[key] = value
        return rows


def decode(data: bytes | bytearray | memoryview) -> Any:
    """The value `encode` was given (tuples come back as lists)."""
    try:
        raw = zlib.decompress(bytes(data))
    except zlib.error as err:
        raise WireError(f"not a lens_widget graph: {err}") from None
    decoder = _Decoder(raw)
    (value,) = decoder.column(decoder.root, 1)
    return value


def saved_graph(widget_state: Mapping[str, Any]) -> Any | None:
    """The `graph` trait of one widget's saved state (`{"state", "buffers"}` as ipywidgets
    writes it into a notebook or a page): a base64 buffer of these bytes; None without one."""
    for buffer in widget_state.get("buffers", ()):
        if buffer.get("path") == ["graph"] and buffer.get("encoding", "base64") == "base64":
            return decode(base64.b64decode(buffer["data"]))
    return None
