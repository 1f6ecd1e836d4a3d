"""Parse log.json and check its shape (versions 1 to 4), field by field (docs/log-format.md).

Written with schema_checks.py's combinators (each check takes a JSON value and its path and
raises LogFormatError naming the path and the problem); the `distributed` field's part is
distributed_schema.py's. Checks test types, ranges and names only; references between
records (a parent label, a tensor index) are checked by the loader.
Tagged values ("$tuple", ...) inside argument templates and the output are checked by
values_codec as it decodes them.
"""

from __future__ import annotations

import json
from typing import Any

from lens_widget.log.replay import AUTOCAST_DEVICES
from lens_widget.store.distributed_schema import DISTRIBUTED
from lens_widget.store.format import FORMAT_NAME, FORMAT_VERSION, fail
from lens_widget.store.schema_checks import (
    COUNT,
    LABEL,
    POSITIVE,
    SHAPE,
    TENSOR_ID,
    TEXT,
    anything,
    array,
    boolean,
    describe,
    first_match,
    mapping,
    nullable,
    number,
    one_of,
    pair,
    record,
    string,
)

# ---- version 2 (version 1: the same without `backward` and `replay.autocast`) -----------

_MODULE = record(
    {
        "address": TEXT,
        "class_name": TEXT,
        "parent": nullable(TEXT),
        "n_passes": COUNT,
        "n_ops": COUNT,
        "outputs": array(pair(POSITIVE, array(TEXT))),
    },
    # each output's path in the value returned and output index (absent before they were kept)
    {"output_leaves": array(pair(POSITIVE, array(pair(TEXT, COUNT))))},
)

_REPLAY = nullable(
    first_match(
        [
            (
                "unavailable",
                record({"unavailable": TEXT}, {"func": TEXT, "in_transform": boolean}),
            ),
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
        "nested_shapes": array(nullable(array(SHAPE))),
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
    },
    {"notes": array(TEXT)},
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
        "distributed": DISTRIBUTED,
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
        raise fail(where, f"version must be a positive integer, got {describe(version)}")
    if version > FORMAT_VERSION:
        raise fail(
            where,
            f"written in format version {version}, newer than the {FORMAT_VERSION} this "
            "lens_widget reads; upgrade lens_widget to open it",
        )
    DOCUMENT(document, where)
    return document
