"""What the bench promises, and whether a run's figures keep it.

The limits are the benchmark issue's, as written there (the graph limit is ours). The figure
helpers read one row of `results["trace"]`; the report's tables use them too.
"""

from __future__ import annotations

from typing import Any, TypedDict

from .units import ms, ratio

TRACE_ALL_MAX_RATIO = 1.5  # trace(save="all") / plain forward, median over the models
TRACE_NONE_MAX_RATIO = 1.2  # trace(save=None) / plain forward, median over the models
MIN_SPEEDUP_VS_TORCHLENS = 10.0  # TorchLens(all) time / ours(all), on every model
MAX_SAVED_OVER_DISTINCT = 1.1  # bytes we save / bytes of all distinct op outputs
GRAPH_20K_MAX_MS = 1000.0  # log.graph + log.rolled_graph for ~20k ops (ours, not the issue's)
# widget: (row the issue names it for, measurement, limit in ms)
WIDGET_TARGETS_MS = (
    ("synthetic 5000", "first_paint_ms", 1000.0),
    ("synthetic 5000", "expand_ms", 150.0),
    ("synthetic 5000", "click_to_plot_ms", 250.0),
    ("synthetic 5000", "recolor_all_ms", 100.0),  # issue 12: a new metric, every op drawn
    ("synthetic 2000", "pan_frame_median_ms", 20.0),
    ("synthetic 100000", "first_paint_ms", 1500.0),
)
PAYLOAD_20K_MAX_MIB = 8.0  # the synced graph of a ~20k-op trace
NOTEBOOK_5K_MAX_MIB = 3.0  # a notebook saved with a 5k-op widget grows by at most this
# issue #25: RSS growth per repetition of any scenario of bench/memory_bench.py (a plain
# training step grows by a few KiB; a traced one grew by ~1.5 MiB)
MEMORY_MAX_KIB_PER_REP = 16.0


# A target as the report lists it: the promise, the measured figure, kept or not.
Target = TypedDict("Target", {"target": str, "measured": str, "pass": bool})


def median_ms(row: dict[str, Any], mode: str) -> float | None:
    return row["modes"].get(mode, {}).get("median_ms")


def speedup(row: dict[str, Any], ours: str, theirs: str) -> float | None:
    a, b = median_ms(row, ours), median_ms(row, theirs)
    return b / a if a and b else None


def overhead_us_per_op(row: dict[str, Any], mode: str) -> float | None:
    """Time above the plain forward per op `mode` counted, in microseconds."""
    t, plain = median_ms(row, mode), median_ms(row, "plain")
    ops = row["modes"].get(mode, {}).get("ops")
    if t is None or plain is None or not ops:
        return None
    return (t - plain) / ops * 1e3


def overhead_ratio(row: dict[str, Any]) -> float | None:
    """TorchLens's time above the plain forward over ours (save all)."""
    ours, theirs = median_ms(row, "lw_all"), median_ms(row, "tl_all")
    plain = median_ms(row, "plain")
    if ours is None or theirs is None or plain is None:
        return None
    # Our overhead can be within noise of zero: floor it at 1% of the plain forward.
    return (theirs - plain) / max(ours - plain, 0.01 * plain)


def _target(text: str, measured: str, ok: bool) -> Target:
    return {"target": text, "measured": measured, "pass": ok}


def _trace_ratio_targets(rows: list[dict[str, Any]]) -> list[Target]:
    targets = []
    for mode, limit in (("lw_all", TRACE_ALL_MAX_RATIO), ("lw_none", TRACE_NONE_MAX_RATIO)):
        ratios = [
            r["modes"][mode]["ratio_to_plain"]
            for r in rows
            if "ratio_to_plain" in r["modes"].get(mode, {})
        ]
        if ratios:
            median = sorted(ratios)[len(ratios) // 2]
            save = "'all'" if mode == "lw_all" else "None"
            targets.append(
                _target(
                    f"trace(save={save}) <= {limit}x plain, median over {len(ratios)} models",
                    f"{ratio(median)} (worst {ratio(max(ratios))})",
                    median <= limit,
                )
            )
    return targets


def _model_targets(row: dict[str, Any]) -> list[Target]:
    name, modes = row["model"], row["modes"]
    targets = []
    faster = speedup(row, "lw_all", "tl_all")
    if faster is not None:
        targets.append(
            _target(
                f"{name}: >= {MIN_SPEEDUP_VS_TORCHLENS:.0f}x faster than TorchLens (save all)",
                f"{ratio(faster)} (TorchLens itself is "
                f"{ratio(modes['tl_all']['ratio_to_plain'])} plain; our overhead is "
                f"1/{overhead_ratio(row):.0f} of its)",
                faster >= MIN_SPEEDUP_VS_TORCHLENS,
            )
        )
    ours, theirs = modes.get("lw_all", {}), modes.get("tl_all", {})
    if "outputs" in ours and "ops" in theirs:
        targets.append(
            _target(
                f"{name}: op outputs captured >= TorchLens's ops",
                f"{ours['outputs']} vs {theirs['ops']}",
                ours["outputs"] >= theirs["ops"],
            )
        )
    distinct = modes.get("floor", {}).get("output_bytes")
    if distinct and "saved_bytes" in ours:
        share = ours["saved_bytes"] / distinct
        targets.append(
            _target(
                f"{name}: saved bytes <= {MAX_SAVED_OVER_DISTINCT}x distinct op outputs",
                f"{share:.2f}x",
                share <= MAX_SAVED_OVER_DISTINCT,
            )
        )
    return targets


def _graph_targets(graph: list[dict[str, Any]]) -> list[Target]:
    if not graph:
        return []
    big = max(graph, key=lambda r: r.get("ops", 0))
    total = (big.get("graph_ms") or 0) + (big.get("rolled_graph_ms") or 0)
    return [
        _target(
            f"{big.get('ops')} ops: log.graph + log.rolled_graph <= {GRAPH_20K_MAX_MS:.0f} ms",
            f"{ms(total)} ms",
            total <= GRAPH_20K_MAX_MS,
        )
    ]


def _widget_targets(widget: dict[str, Any]) -> list[Target]:
    rows = {r["graph"]: r for r in widget.get("rows", [])}
    targets = []
    for graph_name, key, limit in WIDGET_TARGETS_MS:
        value = rows.get(graph_name, {}).get(key)
        if isinstance(value, (int, float)):
            targets.append(
                _target(
                    f"widget {graph_name}: {key[:-3].replace('_', ' ')} < {limit:.0f} ms",
                    f"{ms(value)} ms",
                    value < limit,
                )
            )
    return targets


def _payload_targets(payload: dict[str, Any]) -> list[Target]:
    targets = []
    near_20k = [r for r in payload.get("rows", []) if 15_000 <= r.get("ops", 0) <= 25_000]
    if near_20k:
        big = max(near_20k, key=lambda r: r["wire_bytes"])
        mib = big["wire_bytes"] / 2**20
        targets.append(
            _target(
                f"~20k-op graph synced in <= {PAYLOAD_20K_MAX_MIB:.0f} MiB "
                f"(largest: {big['graph']})",
                f"{mib:.2f} MiB",
                mib <= PAYLOAD_20K_MAX_MIB,
            )
        )
    nb = payload.get("notebook")
    if nb:
        mib = nb["growth_bytes"] / 2**20
        targets.append(
            _target(
                f"notebook saved with a {nb['ops']}-op widget grows "
                f"<= {NOTEBOOK_5K_MAX_MIB:.0f} MiB",
                f"{mib:.2f} MiB",
                mib <= NOTEBOOK_5K_MAX_MIB,
            )
        )
    return targets


def _memory_reps_targets(memory_reps: dict[str, Any]) -> list[Target]:
    rows = memory_reps.get("rows", [])
    if not rows:
        return []
    worst = max(rows, key=lambda r: r["rss_kib"])
    return [
        _target(
            f"memory flat: every repeated trace, step, widget or request grows RSS by "
            f"<= {MEMORY_MAX_KIB_PER_REP:.0f} KiB per repetition (worst: {worst['scenario']})",
            f"{worst['rss_kib']:.1f} KiB",
            worst["rss_kib"] <= MEMORY_MAX_KIB_PER_REP,
        )
    ]


def _backward_targets(backward: dict[str, Any]) -> list[Target]:
    ratio = backward.get("lw_median_ratio")
    if ratio is None:
        return []
    return [
        _target(
            f"forward+backward traced with every gradient <= {backward['target']}x an untraced "
            "step (median over the models)",
            f"{ratio:.2f}x",
            ratio <= backward["target"],
        )
    ]


def evaluate_targets(results: dict[str, Any]) -> list[Target]:
    """Every target the run has figures for, in the order the report lists them."""
    rows = results.get("trace", [])
    targets = _trace_ratio_targets(rows)
    for row in rows:
        targets += _model_targets(row)
    return (
        targets
        + _backward_targets(results.get("backward", {}))
        + _memory_reps_targets(results.get("memory_reps", {}))
        + _graph_targets(results.get("graph", []))
        + _payload_targets(results.get("payload", {}))
        + _widget_targets(results.get("widget", {}))
    )
