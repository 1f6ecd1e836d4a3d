"""Cost of turning a log into graphs, against op count.

Each repetition traces a fresh synthetic chain model (save=None) so nothing is cached, then
times the first access of `log.graph` and of `log.rolled_graph`, and the widget payload when
the package exposes a builder for it (with its size as JSON and, when the package has
lens_widget/widget/wire.py, as the bytes the widget syncs).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import torch

from model_zoo import chain

from .measure import median, settle, timed


def _payload_builder() -> Callable[[Any], Any] | None:
    """The function the widget uses to serialise a log for the frontend, if there is one."""
    try:
        from lens_widget.widget import payload
    except Exception:
        return None
    for name in ("build_payload", "graph_payload", "make_payload", "to_payload"):
        fn = getattr(payload, name, None)
        if callable(fn):
            return fn
    return None


def _wire_encoder() -> Callable[[Any], bytes] | None:
    """How the widget encodes the payload for the wire, if this version does."""
    try:
        from lens_widget.widget import wire
    except Exception:
        return None
    return wire.encode


def bench_graph(
    sizes: list[int], repeats: int, log: Callable[[str], None] = print
) -> list[dict[str, Any]]:
    import lens_widget

    build_payload = _payload_builder()
    encode = _wire_encoder()
    rows = []
    for n in sizes:
        case = chain(n)
        samples: dict[str, list[float]] = {"trace": [], "graph": [], "rolled_graph": []}
        if build_payload is not None:
            samples["payload"] = []
        facts: dict[str, Any] = {}
        for _ in range(repeats):
            settle()
            with torch.no_grad():
                t, result = timed(lambda c=case: lens_widget.trace(c.model, c.args, save=None))
            samples["trace"].append(t * 1e3)
            t, graph = timed(lambda r=result: r.graph)
            samples["graph"].append(t * 1e3)
            t, rolled = timed(lambda r=result: r.rolled_graph)
            samples["rolled_graph"].append(t * 1e3)
            if build_payload is not None:
                t, payload = timed(lambda r=result: build_payload(r))
                samples["payload"].append(t * 1e3)
                facts["payload_json_bytes"] = len(json.dumps(payload))
                if encode is not None:
                    t, data = timed(lambda p=payload: encode(p))
                    samples.setdefault("wire_encode", []).append(t * 1e3)
                    facts["payload_wire_bytes"] = len(data)
                del payload
            facts |= {
                "ops": len(result.ops),
                "graph_nodes": graph.number_of_nodes(),
                "graph_edges": graph.number_of_edges(),
                "rolled_nodes": rolled.number_of_nodes(),
            }
            del result, graph, rolled
        row = {
            "target_ops": n,
            **facts,
            **{f"{k}_ms": median(v) for k, v in samples.items()},
            "samples_ms": {k: [round(x, 3) for x in v] for k, v in samples.items()},
        }
        log(
            f"  chain {facts['ops']} ops: trace {row['trace_ms']:.0f}ms, graph "
            f"{row['graph_ms']:.0f}ms, rolled {row['rolled_graph_ms']:.0f}ms"
        )
        rows.append(row)
    return rows
