"""The distributed half of a saved log (a trace made under torch.distributed): the rank,
the world's size, each collective op's group and bytes, each sharded parameter's placement
and the engines' own bookkeeping calls. The `distributed` field of log.json (version 4,
docs/log-format.md); absent for a log made outside torch.distributed.

Loading checks what the schema cannot: the rank within the world, a collective's label
naming an op of the log (once), its group's ranks within the world and not repeated, a
placement's shapes and mesh agreeing with each other.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple, Protocol, cast

from lens_widget.log.distributed import CollectiveInfo, EngineCall, ParamPlacement, StepPhase
from lens_widget.log.records import OpRecord
from lens_widget.store.format import JSON_FILE, fail

_WHERE = f"{JSON_FILE}: distributed"


class Distributed(NamedTuple):
    """ModelLog's fields for torch.distributed; None and empty outside it."""

    rank: int | None
    world_size: int | None
    collectives: dict[str, CollectiveInfo]
    placements: dict[str, ParamPlacement]
    engine_calls: list[EngineCall]


class HasDistributed(Protocol):
    """What encoding reads of a log: ModelLog's fields for torch.distributed."""

    rank: int | None
    world_size: int | None
    collectives: dict[str, CollectiveInfo]
    placements: dict[str, ParamPlacement]
    engine_calls: list[EngineCall]


def encode_distributed(log: HasDistributed) -> dict[str, Any] | None:
    """The `distributed` field of log.json, None for a log made outside torch.distributed."""
    if (
        log.rank is None
        and log.world_size is None
        and not (log.collectives or log.placements or log.engine_calls)
    ):
        return None
    return {
        "rank": log.rank,
        "world_size": log.world_size,
        "collectives": [
            {
                "label": label,
                "kind": c.kind,
                "group_ranks": list(c.group_ranks),
                "nbytes": c.nbytes,
                "phase": c.phase,
                "engine": c.engine,
                "observed": c.observed,
                "params": list(c.params),
            }
            for label, c in log.collectives.items()
        ],
        "placements": [
            {
                "name": name,
                "full_shape": list(p.full_shape),
                "local_shape": list(p.local_shape),
                "placements": list(p.placements),
                "mesh_shape": list(p.mesh_shape),
                "mesh_dim_names": list(p.mesh_dim_names),
                "grad": p.grad,
            }
            for name, p in log.placements.items()
        ],
        "engine_calls": [
            {
                "engine": e.engine,
                "func": e.func,
                "module": e.module,
                "phase": e.phase,
                "nbytes": e.nbytes,
            }
            for e in log.engine_calls
        ],  # fmt: skip
    }


def decode_distributed(
    data: dict[str, Any] | None, by_label: Mapping[str, OpRecord]
) -> Distributed:
    """The distributed fields of a loaded log (schema-checked `data`). Raises
    LogFormatError for a rank outside the world, a collective of no op, and the like."""
    if data is None:
        return Distributed(None, None, {}, {}, [])
    rank, world = data["rank"], data["world_size"]
    if rank is not None and world is not None and rank >= world:
        raise fail(f"{_WHERE}.rank", f"rank {rank} is not below world_size {world}")
    collectives: dict[str, CollectiveInfo] = {}
    for i, entry in enumerate(data["collectives"]):
        where = f"{_WHERE}.collectives[{i}]"
        label = entry["label"]
        node = by_label.get(label)
        if node is None or node.kind != "op":
            raise fail(where, f"label {label[:80]!r} is not an op of the log")
        if label in collectives:
            raise fail(where, f"op {label[:80]!r} is described twice")
        ranks = entry["group_ranks"]
        if len(set(ranks)) != len(ranks):
            raise fail(where, f"group_ranks {ranks[:16]} repeats a rank")
        if world is not None and any(r >= world for r in ranks):
            raise fail(where, f"group_ranks {ranks[:16]}: a rank not below world_size {world}")
        collectives[label] = CollectiveInfo(
            kind=entry["kind"],
            group_ranks=tuple(ranks),
            nbytes=entry["nbytes"],
            phase=cast(StepPhase, entry["phase"]),  # one of them: the schema checked it
            engine=entry["engine"],
            observed=entry["observed"],
            params=tuple(entry["params"]),
        )
    placements: dict[str, ParamPlacement] = {}
    for i, entry in enumerate(data["placements"]):
        where = f"{_WHERE}.placements[{i}]"
        name = entry["name"]
        if name in placements:
            raise fail(where, f"parameter {name[:80]!r} is described twice")
        full, local = entry["full_shape"], entry["local_shape"]
        if len(full) != len(local) or any(a > b for a, b in zip(local, full, strict=True)):
            raise fail(where, f"local_shape {local[:8]} is not a shard of full_shape {full[:8]}")
        mesh, names = entry["mesh_shape"], entry["mesh_dim_names"]
        if len(entry["placements"]) != len(mesh) or (names and len(names) != len(mesh)):
            raise fail(where, f"placements and mesh_dim_names need one per mesh dim of {mesh[:8]}")
        placements[name] = ParamPlacement(
            full_shape=tuple(full),
            local_shape=tuple(local),
            placements=tuple(entry["placements"]),
            mesh_shape=tuple(mesh),
            mesh_dim_names=tuple(names),
            grad=entry["grad"],
        )
    engine_calls = [
        EngineCall(e["engine"], e["func"], e["module"], cast(StepPhase, e["phase"]), e["nbytes"])
        for e in data["engine_calls"]
    ]
    return Distributed(rank, world, collectives, placements, engine_calls)
