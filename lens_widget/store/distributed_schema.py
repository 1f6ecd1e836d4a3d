"""The `distributed` field of log.json's schema (version 4): what a trace under
torch.distributed knows, its rank and world, collectives, placements and engine calls.

Apart from schema.py, as store/distributed.py (which encodes and decodes the field and checks
the references the schema cannot: a collective's op, its ranks within the world) is apart
from save.py and load.py.
"""

from __future__ import annotations

from lens_widget.store.schema_checks import (
    COUNT,
    LABEL,
    POSITIVE,
    SHAPE,
    TEXT,
    array,
    boolean,
    nullable,
    one_of,
    record,
    string,
)

_PHASE = one_of("forward", "backward", "optimizer")
_NAME = string(r"[^\x00-\x1f]{1,200}")  # an engine, a collective's kind, a placement
DISTRIBUTED = record(
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
