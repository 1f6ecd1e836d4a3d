"""Turn a ModelLog into the `graph` trait the frontend draws (protocol.ts `GraphPayload`).

Every step is a single pass over nodes or edges (dict lookups only), so a 5,000-op log
converts in well under a second.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from lens_widget.graph.rolled import roll_layers
from lens_widget.graph.unrolled import by_source, unrolled_edges
from lens_widget.log.attention import has_attention_map
from lens_widget.log.distributed import CollectiveInfo, ParamPlacement
from lens_widget.log.function_groups import function_address, function_groups
from lens_widget.log.gc_pause import gc_paused
from lens_widget.log.model_log import ModelLog
from lens_widget.log.pass_through import pass_through_modules
from lens_widget.log.records import ModuleInfo, OpRecord
from lens_widget.widget import protocol
from lens_widget.widget.gradient_payload import gradient_info

# Between the shapes of a rolled edge whose passes carried different ones.
SHAPES_APART = " | "

# Sources that the frontend draws beside the op that first reads them.
_PLACED_AT_CONSUMER = frozenset({"param", "buffer", "const"})


def error_text(error: BaseException | None) -> str | None:
    return None if error is None else f"{type(error).__name__}: {error}"


def unrolled_groups(record: OpRecord) -> list[str]:
    """ "address:pass" of the enclosing modules, outermost first, then of its function group
    (log/function_groups.py, in its module's pass); the root is not a group."""
    groups = [f"{address}:{p}" for address, p in record.module_stack if address]
    if record.function:
        module_pass = record.module_stack[-1][1] if record.module_stack else 1
        groups.append(f"{function_address(record.module, record.function)}:{module_pass}")
    return groups


def rolled_groups(record: OpRecord) -> list[str]:
    groups = [address for address, _ in record.module_stack if address]
    if record.function:
        groups.append(function_address(record.module, record.function))
    return groups


def _node(record: OpRecord, groups: list[str], passes: list[str]) -> protocol.NodeInfo:
    return {
        "id": record.label,
        "kind": record.kind,
        "func": record.func,
        "groups": groups,
        "module": record.module,
        "shape": list(record.shape) if record.shape is not None else None,
        "dtype": record.dtype,
        "device": record.device,
        "nbytes": int(record.nbytes),
        "params": [[p.name, list(p.shape)] for p in record.params],
        "hasParams": bool(record.params),
        "fromInput": bool(record.from_input),
        "feedsOutput": bool(record.feeds_output),
        "failed": bool(record.failed),
        "intervened": bool(record.intervened),
        "saved": record.saved,
        "noValues": record.no_values,
        "source": record.source,
        "sourceCode": record.source_code,
        "nPasses": 1,
        "passes": passes,
        "attention": has_attention_map(record),
    }


def collective_info(info: CollectiveInfo) -> protocol.CollectiveNodeInfo:
    """NodeInfo.collective of a collective op (drawn as one, colored by bytes moved)."""
    return {
        "kind": info.kind,
        "groupRanks": [int(r) for r in info.group_ranks],
        "nbytes": int(info.nbytes),
        "phase": info.phase,
        "engine": info.engine,
    }


def placement_info(p: ParamPlacement) -> protocol.PlacementInfo:
    """NodeInfo.placement of a parameter an engine sharded (FSDP2, tensor parallel)."""
    return {
        "fullShape": [int(d) for d in p.full_shape],
        "localShape": [int(d) for d in p.local_shape],
        "placements": list(p.placements),
        "meshShape": [int(d) for d in p.mesh_shape],
        "meshDimNames": list(p.mesh_dim_names),
        "grad": p.grad,
    }


def first_consumers(by_label: Mapping[str, OpRecord]) -> dict[str, OpRecord]:
    """For every param/buffer/const: the earliest node that reads it."""
    found: dict[str, OpRecord] = {}
    for r in by_label.values():
        if r.kind in _PLACED_AT_CONSUMER and r.children:
            consumers = [by_label[c] for c in r.children if c in by_label]
            if consumers:
                found[r.label] = min(consumers, key=lambda c: c.index)
    return found


def module_list(
    modules: Mapping[str, ModuleInfo], by_label: Mapping[str, OpRecord] | None = None
) -> list[protocol.ModuleInfo]:
    """Every module that ran, each after its parent (the frontend builds the tree in one pass);
    with `by_label`, each with its outputs per pass (module_outputs)."""
    out: list[protocol.ModuleInfo] = []
    done: set[str] = set()
    # A loop, not a recursive closure: a function that refers to itself is a reference
    # cycle, which kept the log's modules alive until the cyclic collector ran.
    for address in modules:  # call order: parents mostly come first
        chain: list[str] = []  # address and its ancestors not emitted yet, innermost first
        at: str | None = address
        while at is not None and at not in done and at in modules:
            chain.append(at)
            at = modules[at].parent
        for pending in reversed(chain):
            done.add(pending)
            out.append(_module_info(modules[pending], by_label))
    return out


def marked_pass_through(
    modules: list[protocol.ModuleInfo], ops: Sequence[OpRecord]
) -> list[protocol.ModuleInfo]:
    """`modules`, those that return their input unchanged (log/pass_through.py) marked
    `passThrough`: the first screen folds them away until opened."""
    found = pass_through_modules(ops)
    for m in modules:
        if m["address"] in found:
            m["passThrough"] = True
    return modules


def function_list(nodes: Sequence[OpRecord]) -> list[protocol.ModuleInfo]:
    """Every function group, as a module of kind "function" inside the module that called it."""
    return [
        {
            "address": group.address,
            "className": group.function,
            "parent": group.module,
            "nPasses": group.n_passes,
            "nOps": group.n_ops,
            "kind": "function",
        }
        for group in function_groups(nodes).values()
    ]


def _module_info(info: ModuleInfo, by_label: Mapping[str, OpRecord] | None) -> protocol.ModuleInfo:
    entry: protocol.ModuleInfo = {
        "address": info.address,
        "className": info.class_name,
        "parent": info.parent,
        "nPasses": int(info.n_passes),
        "nOps": int(info.n_ops),
    }
    if by_label is not None and info.outputs:
        entry["outputs"] = module_outputs(info, by_label)
    return entry


def module_outputs(
    info: ModuleInfo, by_label: Mapping[str, OpRecord]
) -> list[list[protocol.ModuleOutputInfo]]:
    """Per pass (1, 2, ...), every tensor the module returned: its path in the value returned,
    the node and output that made it, its shape. The box's shape line and the inspector's
    list of outputs both read this one list."""
    passes = range(1, max(info.outputs) + 1)
    return [
        [
            {
                "path": leaf.path,
                "node": label,
                "output": leaf.output,
                "shape": _output_shape(by_label.get(label), leaf.output),
            }
            for label, leaf in zip(info.outputs.get(p, []), info.output_leaves_of(p), strict=True)
        ]
        for p in passes
    ]


def _output_shape(record: OpRecord | None, output: int) -> list[int] | None:
    if record is None:
        return None
    shapes = record.shapes or ((record.shape,) if record.shape is not None else ())
    return list(shapes[output]) if output < len(shapes) else None


# GraphPayload.noRerun of a widget showing a log without its model
NO_MODEL = "this widget shows a log: there is no model to re-run"


def build_payload(log: ModelLog) -> protocol.GraphPayload:
    """The GraphPayload dict for `log` (see js/src/**/protocol.ts)."""
    with gc_paused():
        return _build_payload(log)


def _build_payload(log: ModelLog) -> protocol.GraphPayload:
    records = log.nodes
    by_label = log.by_label
    consumer = first_consumers(by_label)
    order = [r.label for r in records]
    collectives, placements = log.collectives, log.placements

    # ---- unrolled view: one node per record, edges as the log's graph has them ----
    u_nodes: list[protocol.NodeInfo] = []
    groups_of: dict[tuple[tuple[tuple[str, int], ...], str], list[str]] = {}  # one call's ops share
    for r in records:
        placed = consumer.get(r.label, r)
        where = (placed.module_stack, placed.function)
        groups = groups_of.get(where)
        if groups is None:
            groups = groups_of[where] = unrolled_groups(placed)
        u_nodes.append(_node(r, groups.copy(), [r.label]))
        if r.label in collectives:
            u_nodes[-1]["collective"] = collective_info(collectives[r.label])
        elif r.kind == "param" and r.func in placements:
            u_nodes[-1]["placement"] = placement_info(placements[r.func])
    u_edges: list[protocol.EdgeInfo] = []
    edge_shape: dict[tuple[str, str], str] = {}  # (source layer, target layer) -> its shapes
    # the same edges, in the same order, as log.graph.edges: without building that graph
    for src, dst, data in by_source(unrolled_edges(records, by_label), order):
        text = data["shape"]
        u_edges.append({"source": src, "target": dst, "shape": text, "passes": []})
        pair = (by_label[src].layer, by_label[dst].layer)
        seen = edge_shape.get(pair)
        if seen is None:
            edge_shape[pair] = text
        elif text not in seen.split(SHAPES_APART):  # passes of other shapes: each one, once
            edge_shape[pair] = f"{seen}{SHAPES_APART}{text}"

    # ---- rolled view: one node per layer, passes folded (log.rolled_graph as dicts) ----
    rolled = roll_layers(records, by_label, log.folded_layers)
    r_nodes: list[protocol.NodeInfo] = []
    for layer, passes in rolled.records.items():
        first = passes[0]
        node = _node(first, rolled_groups(consumer.get(first.label, first)), [])
        node.update(
            id=layer,
            nPasses=len(passes),
            passes=[p.label for p in passes],
            saved=all(p.saved for p in passes),
            failed=any(p.failed for p in passes),
            intervened=any(p.intervened for p in passes),
            fromInput=any(p.from_input for p in passes),
            feedsOutput=any(p.feeds_output for p in passes),
        )
        if first.label in collectives:  # every pass ran the same collective: the first's
            node["collective"] = collective_info(collectives[first.label])
        elif first.kind == "param" and first.func in placements:
            node["placement"] = placement_info(placements[first.func])
        shapes = list(dict.fromkeys(p.shape for p in passes if p.shape is not None))
        if len(shapes) > 1:  # a rolled node says its passes differ, never shows one for all
            node["passShapes"] = [list(shape) for shape in shapes]
        r_nodes.append(node)
    r_edges: list[protocol.EdgeInfo] = [
        {
            "source": src,
            "target": dst,
            "shape": edge_shape.get((src, dst), ""),
            "passes": [int(p) for p in data["passes"]],
        }
        for src, dst, data in by_source(rolled.edges, rolled.records)
    ]

    payload: protocol.GraphPayload = {
        "modelClass": log.model_class,
        "error": error_text(log.error),
        "failedOp": log.failed_op,
        "nOps": len(log.ops),
        "modules": marked_pass_through(module_list(log.modules, by_label), log.ops)
        + function_list(log.ops),
        "repeatedBlocks": [list(group) for group in log.repeated_blocks],
        "unrolled": {"nodes": u_nodes, "edges": u_edges},
        "rolled": {"nodes": r_nodes, "edges": r_edges},
    }
    if log.recurrent_layers:
        fold = log.folded_layers
        payload["recurrentLayers"] = list(
            dict.fromkeys(fold.get(layer, layer) for layer in log.recurrent_layers)
        )
    gradients = gradient_info(log)
    if gradients is not None:
        payload["gradients"] = gradients
    return payload
