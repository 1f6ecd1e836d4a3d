"""Parse log.json and check its shape (versions 1 to 4), field by field (docs/log-format.md).

Small combinators: each check takes a JSON value and its path and raises LogFormatError
naming the path and the problem. Checks test types, ranges and names only; references
between records (a parent label, a tensor index) are checked by the loader.
Tagged values ("$tuple", ...) inside argument templates and the output are checked by
values_codec as it decodes them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from lens_widget.log.replay import AUTOCAST_DEVICES
from lens_widget.store.format import FORMAT_NAME, FORMAT_VERSION, fail

Check = Callable[[Any, str], None]


def _describe(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:60] + "…"


# JSON integers have no bound; counts, sizes and indices beyond int64 are no real log's
# (and 10**400 overflowed later, in a float conversion).
_INT64_MAX = 2**63 - 1


def integer(minimum: int = 0) -> Check:
    def check(value: Any, path: str) -> None:
        if isinstance(value, bool) or not isinstance(value, int):
            raise fail(path, f"{_describe(value)} is not an integer")
        if value < minimum:
            raise fail(path, f"{value} is less than {minimum}")
        if value > _INT64_MAX:
            raise fail(path, f"{str(value)[:20]}... is larger than any int64")

    return check


def number(value: Any, path: str) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise fail(path, f"{_describe(value)} is not a non-negative number")


def string(pattern: str | None = None, non_empty: bool = False) -> Check:
    compiled = re.compile(pattern) if pattern else None

    def check(value: Any, path: str) -> None:
        if not isinstance(value, str):
            raise fail(path, f"{_describe(value)} is not a string")
        if non_empty and not value:
            raise fail(path, "is empty")
        if compiled is not None and not compiled.fullmatch(value):
            raise fail(path, f"{_describe(value)} does not match {pattern}")

    return check


def boolean(value: Any, path: str) -> None:
    if not isinstance(value, bool):
        raise fail(path, f"{_describe(value)} is not true or false")


def anything(value: Any, path: str) -> None:
    """Checked later by the decoder of what it holds."""


def one_of(*allowed: Any) -> Check:
    def check(value: Any, path: str) -> None:
        if value not in allowed or isinstance(value, bool) != isinstance(allowed[0], bool):
            raise fail(path, f"{_describe(value)} is not one of {', '.join(map(repr, allowed))}")

    return check


def nullable(inner: Check) -> Check:
    def check(value: Any, path: str) -> None:
        if value is not None:
            inner(value, path)

    return check


def array(item: Check) -> Check:
    def check(value: Any, path: str) -> None:
        if not isinstance(value, list):
            raise fail(path, f"{_describe(value)} is not an array")
        for i, element in enumerate(value):
            item(element, f"{path}[{i}]")

    return check


def pair(first: Check, second: Check) -> Check:
    def check(value: Any, path: str) -> None:
        if not isinstance(value, list) or len(value) != 2:
            raise fail(path, f"{_describe(value)} is not a pair [a, b]")
        first(value[0], f"{path}[0]")
        second(value[1], f"{path}[1]")

    return check


def record(required: dict[str, Check], optional: dict[str, Check] | None = None) -> Check:
    """An object with exactly these keys (optional ones may be left out)."""
    known = {**required, **(optional or {})}

    def check(value: Any, path: str) -> None:
        if not isinstance(value, dict):
            raise fail(path, f"{_describe(value)} is not an object")
        missing = [key for key in required if key not in value]
        if missing:
            raise fail(path, f"missing field(s) {', '.join(missing)}")
        unknown = [key for key in value if key not in known]
        if unknown:
            raise fail(path, f"unknown field(s) {', '.join(map(_describe, unknown[:5]))}")
        for key, element in value.items():
            known[key](element, f"{path}.{key}")

    return check


def mapping(key_pattern: str, item: Check) -> Check:
    key_check = string(key_pattern)

    def check(value: Any, path: str) -> None:
        if not isinstance(value, dict):
            raise fail(path, f"{_describe(value)} is not an object")
        for key, element in value.items():
            key_check(key, f"{path} key")
            item(element, f"{path}.{key}")

    return check


def first_match(options: list[tuple[str, Check]]) -> Check:
    """An object told apart by which of these keys it has (the first key present decides)."""

    def check(value: Any, path: str) -> None:
        for key, inner in options:
            if isinstance(value, dict) and key in value:
                inner(value, path)
                return
        raise fail(path, f"{_describe(value)} has none of the fields {[k for k, _ in options]}")

    return check


# ---- version 2 (version 1: the same without `backward` and `replay.autocast`) -----------

COUNT = integer(0)
POSITIVE = integer(1)
TEXT = string()
LABEL = string(non_empty=True)
SHAPE = array(COUNT)
TENSOR_ID = COUNT

_MODULE = record(
    {
        "address": TEXT,
        "class_name": TEXT,
        "parent": nullable(TEXT),
        "n_passes": COUNT,
        "n_ops": COUNT,
        "outputs": array(pair(POSITIVE, array(TEXT))),
    }
)

_REPLAY = nullable(
    first_match(
        [
            ("unavailable", record({"unavailable": TEXT}, {"func": TEXT})),
            (
                "func",
                record(
                    {
                        "func": string(non_empty=True),
                        "args": anything,
                        "kwargs": mapping(r".{1,200}", anything),
                        "literals": mapping(r"0|[1-9][0-9]{0,8}", TENSOR_ID),
                        "rng_state": nullable(TENSOR_ID),
                    },
                    {
                        "autocast": array(pair(one_of(*AUTOCAST_DEVICES), TEXT)),
                        "in_transform": boolean,
                        "written_slots": array(COUNT),
                    },
                ),
            ),
        ]
    )
)

_NODE = record(
    {
        "label": LABEL,
        "kind": one_of("input", "param", "buffer", "const", "op", "output"),
        "func": TEXT,
        "index": COUNT,
        "layer": LABEL,
        "pass_index": POSITIVE,
        "n_passes": POSITIVE,
        "module": TEXT,
        "module_stack": array(pair(TEXT, POSITIVE)),
        "shape": nullable(SHAPE),
        "dtype": nullable(TEXT),
        "device": nullable(TEXT),
        "nbytes": COUNT,
        "shapes": array(SHAPE),
        "params": array(record({"name": TEXT, "shape": SHAPE, "numel": COUNT})),
        "parents": array(TEXT),
        "parent_args": array(record({"parent": TEXT, "position": TEXT, "output_index": COUNT})),
        "children": array(TEXT),
        "from_input": boolean,
        "feeds_output": boolean,
        "source": TEXT,
        "source_code": TEXT,
        "inplace": boolean,
        "failed": boolean,
        "error": nullable(TEXT),
        "activations": nullable(array(TENSOR_ID)),
        "replay": _REPLAY,
    },
    {
        "requires_grad": boolean,
        "function": TEXT,
        "time_ms": nullable(number),
        "intervened": boolean,
        "grads": nullable(array(nullable(TENSOR_ID))),
    },
)

_DENSE_TENSOR = record(
    {"storage": COUNT, "dtype": TEXT, "shape": SHAPE, "stride": array(COUNT), "offset": COUNT},
    {"conj": boolean, "neg": boolean},
)
_SPARSE_TENSOR = record(
    {"sparse_coo": pair(COUNT, COUNT), "dtype": TEXT, "shape": SHAPE, "coalesced": boolean}
)


def _tensor(value: Any, path: str) -> None:
    """A view on a storage, or a sparse COO tensor naming its indices and values entries."""
    is_sparse = isinstance(value, dict) and "sparse_coo" in value
    (_SPARSE_TENSOR if is_sparse else _DENSE_TENSOR)(value, path)


_STORAGE = record(
    {"name": string(r"s[0-9]{1,9}"), "dtype": TEXT, "shape": SHAPE, "nbytes": COUNT},
    {"complex_as_real": boolean, "file": COUNT},
)
# A file of values beside tensors.safetensors (version 3): a name inside the directory
SHARD_NAME = r"[A-Za-z0-9][A-Za-z0-9_.-]{0,126}\.safetensors"
_TENSOR_FILE = record({"name": string(SHARD_NAME), "id": string(r"[0-9a-f]{32}")})

_LOG = record(
    {
        "model_class": TEXT,
        "elapsed": number,
        "n_params": COUNT,
        "param_bytes": COUNT,
        "failed_op": nullable(TEXT),
        "error": nullable(
            # any class name Python gave it (ÜberError, a type() made "my-error"), no control
            # characters; loading only names a new class with it
            record({"type": string(r"[^\x00-\x1f]{1,200}"), "message": TEXT})
        ),
        "output": anything,
    }
)

_LEAF = record(
    {
        "name": string(non_empty=True),
        "kind": one_of("param", "input", "other"),
        "shape": SHAPE,
        "dtype": TEXT,
        "label": nullable(LABEL),
        "source": TEXT,
        "grads": array(nullable(TENSOR_ID)),
    }
)

_BACKWARD_PASS = record(
    {
        "index": POSITIVE,
        "call": one_of("backward", "autograd.grad"),
        "retain_graph": boolean,
        "source": TEXT,
        "nodes": array(TEXT),
        "error": nullable(TEXT),
        "error_op": nullable(TEXT),
        "error_source": nullable(TEXT),
        "freed_by": nullable(POSITIVE),
        "inplace_op": nullable(TEXT),
    },
    {"in_transform": boolean},
)

_AUTOGRAD_NODE = record(
    {
        "id": LABEL,
        "grad_fn": TEXT,
        "forward_op": nullable(TEXT),
        "within_op": nullable(TEXT),
        "order": COUNT,
        "backward_pass": nullable(POSITIVE),
        "passes": array(POSITIVE),
        "grad_shapes": array(nullable(SHAPE)),
        "leaf": nullable(TEXT),
    }
)

# Version 2: what a traced backward left (store/training_step.py).
_BACKWARD = record(
    {
        "leaves": array(_LEAF),
        "passes": array(_BACKWARD_PASS),
        "graph": record({"nodes": array(_AUTOGRAD_NODE), "edges": array(pair(TEXT, TEXT))}),
        "recomputed": array(record({"op": TEXT, "func": TEXT, "backward_pass": POSITIVE})),
    }
)

# Version 4: what a trace under torch.distributed knows (store/distributed.py, which checks
# the references: a collective's op, its ranks within the world).
_PHASE = one_of("forward", "backward", "optimizer")
_NAME = string(r"[^\x00-\x1f]{1,200}")  # an engine, a collective's kind, a placement
_DISTRIBUTED = record(
    {
        "rank": nullable(COUNT),
        "world_size": nullable(POSITIVE),
        "collectives": array(
            record(
                {
                    "label": LABEL,
                    "kind": _NAME,
                    "group_ranks": array(COUNT),
                    "nbytes": COUNT,
                    "phase": _PHASE,
                    "engine": TEXT,
                    "observed": boolean,
                    "params": array(string(non_empty=True)),
                }
            )
        ),
        "placements": array(
            record(
                {
                    "name": string(non_empty=True),
                    "full_shape": SHAPE,
                    "local_shape": SHAPE,
                    "placements": array(_NAME),
                    "mesh_shape": array(POSITIVE),
                    "mesh_dim_names": array(TEXT),
                    "grad": TEXT,
                }
            )
        ),
        "engine_calls": array(
            record({"engine": TEXT, "func": TEXT, "module": TEXT, "phase": _PHASE, "nbytes": COUNT})
        ),
    }
)

DOCUMENT = record(
    {
        "format": TEXT,
        "version": POSITIVE,
        "save_id": string(r"[0-9a-f]{32}"),
        "tensor_file": one_of("tensors.safetensors"),
        "log": _LOG,
        "modules": array(_MODULE),
        "nodes": array(_NODE),
        "tensors": array(_tensor),
        "storages": array(_STORAGE),
    },
    {
        "created_by": TEXT,
        "backward": _BACKWARD,
        "tensor_files": array(_TENSOR_FILE),
        "distributed": _DISTRIBUTED,
    },
)


def _reject_constant(name: str) -> float:
    # Python's json accepts NaN/Infinity; the format writes non-finite floats as tagged values.
    raise ValueError(f"{name} is not JSON")


def parse_document(text: bytes, where: str) -> dict[str, Any]:
    """The JSON document, checked for format name, version and shape."""
    try:
        document = json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as err:  # JSONDecodeError and bad UTF-8 are ValueErrors
        raise fail(where, f"not valid JSON ({err}); the file is truncated or damaged") from None
    if not isinstance(document, dict) or document.get("format") != FORMAT_NAME:
        raise fail(where, f'not a lens_widget log (no "format": "{FORMAT_NAME}" field)')
    version = document.get("version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise fail(where, f"version must be a positive integer, got {_describe(version)}")
    if version > FORMAT_VERSION:
        raise fail(
            where,
            f"written in format version {version}, newer than the {FORMAT_VERSION} this "
            "lens_widget reads; upgrade lens_widget to open it",
        )
    DOCUMENT(document, where)
    return document
