"""A run's figures -> RESULTS.md: targets with pass/miss, tables, and how we measured.

python -m bench.report [bench/results/<run>.json]   # re-render (default: the newest run)
"""

from __future__ import annotations

import argparse
import pathlib
from typing import Any

from .history import newest_run, read_run
from .targets import evaluate_targets, median_ms, overhead_ratio, overhead_us_per_op, speedup
from .units import mib, mib2, ms, ratio, us

BENCH_DIR = pathlib.Path(__file__).resolve().parent


def _cell(row: dict[str, Any], mode: str) -> str:
    entry = row["modes"].get(mode, {})
    if "median_ms" not in entry:
        return "n/a" if "unavailable" in entry else ("failed" if "error" in entry else "-")
    return f"{ms(entry['median_ms'])} ({ratio(entry['ratio_to_plain'])})"


def trace_table(rows: list[dict[str, Any]]) -> list[str]:
    out = [
        "| model | plain ms | floor | ours save=None | ours save=all | TorchLens none "
        "| TorchLens all | speed-up all | speed-up none | overhead us/op ours / TL (all) "
        "| overhead ratio | ops ours (outputs) / TL / floor calls |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        m = row["modes"]
        ours = m.get("lw_all", {})
        counts = " / ".join(
            [
                f"{ours.get('ops', '-')} ({ours.get('outputs', '-')})",
                str(m.get("tl_all", {}).get("ops", "-")),
                str(m.get("floor", {}).get("calls", "-")),
            ]
        )
        name = row["model"] + (" (grad)" if row.get("grad") else "")
        out.append(
            f"| {name} | {ms(median_ms(row, 'plain'))} | {_cell(row, 'floor')} "
            f"| {_cell(row, 'lw_none')} | {_cell(row, 'lw_all')} | {_cell(row, 'tl_none')} "
            f"| {_cell(row, 'tl_all')} | {ratio(speedup(row, 'lw_all', 'tl_all'))} "
            f"| {ratio(speedup(row, 'lw_none', 'tl_none'))} "
            f"| {us(overhead_us_per_op(row, 'lw_all'))} / "
            f"{us(overhead_us_per_op(row, 'tl_all'))} "
            f"| {ratio(overhead_ratio(row))} | {counts} |"
        )
    return out


def memory_table(rows: list[dict[str, Any]]) -> list[str]:
    out = [
        "| model | all op outputs MiB | ours saved MiB | TL saved MiB | peak RSS plain "
        "| peak ours none | peak ours all | peak TL none | peak TL all |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        m = row["modes"]

        def peak(k: str, m: dict[str, Any] = m) -> str:
            return mib(m.get(k, {}).get("peak_rss_bytes"))

        out.append(
            f"| {row['model']} | {mib(m.get('floor', {}).get('output_bytes'))} "
            f"| {mib(m.get('lw_all', {}).get('saved_bytes'))} "
            f"| {mib(m.get('tl_all', {}).get('saved_bytes'))} | {peak('plain')} "
            f"| {peak('lw_none')} | {peak('lw_all')} | {peak('tl_none')} | {peak('tl_all')} |"
        )
    return out


def graph_table(rows: list[dict[str, Any]]) -> list[str]:
    out = [
        "| ops | nodes / edges | rolled nodes | trace ms | log.graph ms | log.rolled_graph ms "
        "| payload ms | payload JSON MiB | payload wire MiB (encode ms) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        out.append(
            f"| {r.get('ops', '-')} | {r.get('graph_nodes', '-')} / {r.get('graph_edges', '-')} "
            f"| {r.get('rolled_nodes', '-')} | {ms(r.get('trace_ms'))} | {ms(r.get('graph_ms'))} "
            f"| {ms(r.get('rolled_graph_ms'))} | {ms(r.get('payload_ms'))} "
            f"| {mib(r.get('payload_json_bytes'))} "
            f"| {mib2(r.get('payload_wire_bytes'))} ({ms(r.get('wire_encode_ms'))}) |"
        )
    return out


def payload_lines(payload: dict[str, Any]) -> list[str]:
    """The payload bench (bench/payload_bench.py): sizes per graph, the saved notebook."""
    out = [
        "| graph | ops | nodes (both views) | JSON MiB (before) | wire MiB | encode ms |",
        "|---|---|---|---|---|---|",
    ]
    for r in payload.get("rows", []):
        out.append(
            f"| {r['graph']} | {r['ops']} | {r['nodes']} | {mib(r['json_bytes'])} "
            f"| {mib2(r['wire_bytes'])} | {ms(r['encode_ms'])} |"
        )
    kernel = payload.get("kernel")
    if kernel:
        out += [
            "",
            "Kernel side, seconds (one run each): the trace (save=None), `LensWidget.from_log` "
            "(payload built and encoded), then each step alone on a fresh trace.",
            "",
            "| graph | ops | trace | LensWidget.from_log | repeated_blocks | log.graph "
            "| log.rolled_graph | build_payload | wire.encode | wire MiB |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for r in kernel:
            out.append(
                f"| {r['graph']} | {r['ops']} | {r['trace_s']:.2f} | {r['widget_s']:.2f} "
                f"| {r['repeated_blocks_s']:.2f} | {r['graph_s']:.2f} | {r['rolled_graph_s']:.2f} "
                f"| {r['payload_s']:.2f} | {r['encode_s']:.2f} | {mib2(r['wire_bytes'])} |"
            )
    nb = payload.get("notebook")
    if nb:
        out += [
            "",
            f"A notebook saved with one {nb['ops']}-op GPT-2 widget grows by "
            f"{mib2(nb['growth_bytes'])} MiB: the graph {mib2(nb['graph_bytes'])} MiB (base64), "
            f"the widget's ESM bundle {mib2(nb['esm_bytes'])} MiB (anywidget saves it with "
            "every widget), the rest other traits and the output.",
        ]
    return out


WIDGET_COLUMNS = [
    ("first_paint_ms", "first paint"),
    ("module_load_ms", "of which module load"),
    ("decode_ms", "of which graph inflate"),
    ("expand_ms", "expand module"),
    ("expand_all_ms", "expand all"),
    ("toggle_ms", "to rolled"),
    ("toggle_back_ms", "back to unrolled"),
    ("recolor_ms", "recolor for a new metric"),
    ("recolor_all_ms", "recolor, all expanded"),
    ("click_first_ms", "first click to plot (Plotly already loaded)"),
    ("click_to_plot_ms", "click to plot (median of 3)"),
    ("pan_default_frame_median_ms", "pan frame, default view (median/p95)"),
    ("pan_frame_median_ms", "pan frame, all expanded (median/p95)"),
    ("pan_draw_median_ms", "draw per frame, all expanded (median/p95)"),
]


def widget_table(rows: list[dict[str, Any]]) -> list[str]:
    out = [
        "| graph | nodes | " + " | ".join(t for _, t in WIDGET_COLUMNS) + " |",
        "|---|---|" + "---|" * len(WIDGET_COLUMNS),
    ]
    for r in rows:
        cells = []
        samples = r.get("click_samples_ms") or []
        for key, _ in WIDGET_COLUMNS:
            v = samples[0] if key == "click_first_ms" and samples else r.get(key)
            cell = ms(v) if isinstance(v, (int, float)) else "-"
            if key.endswith("draw_median_ms"):
                cell += f" / {ms(r.get('pan_draw_p95_ms'))} ({r.get('pan_drawn_items', '-')} drawn)"
            if key.endswith("frame_median_ms"):
                cell += " / " + ms(r.get(key.replace("median", "p95")))
            if key == "click_to_plot_ms" and r.get("plotted_numel"):
                cell += f" ({r['plotted_numel'] / 1e6:.2g}M el.)"
            cells.append(cell)
        name = r["graph"] + (f" **error**: {r['error'][:120]}" if r.get("error") else "")
        out.append(f"| {name} | {r.get('nodes', '-')} | " + " | ".join(cells) + " |")
    return out


WIDGET_METHOD = """\
Headless Chromium (software rendering: `--disable-gpu`), viewport 1300x900, device scale 1.
widget.js {widget_js_mib} MiB. *first paint*: from just before `import(widget.js)` to the
widget's `lens:first-paint` mark (default expansion), decoding the graph's wire bytes
included (*graph inflate*: unzipping and checking the bytes; each view is decoded when first
drawn); the 100,000-op row times first paint, then one expand (a chunk of blocks, then a
block in it: median of those 2) and one click to plot. *expand*: click a collapsed module
(median of 3 modules); *to rolled*: the Rolled button (first time: layouts not cached),
*back*: Unrolled, both before any node is selected; *click to plot*: click an op until its
Plotly plot is drawn, through lens_widget's real request handler (synthetic graphs: a
1000x1000 float32 tensor, reduced in Python to 256x256; real model: the largest visible
activations); median of 3 ops. *real gpt2* is the tracing bench's GPT-2 (12 layers, seq
128), traced with save='all'. *pan*: a 120-step mouse drag after Expand all + Fit (the zoom
stops at 2%, so on big graphs a slice of the tall graph is in view: *drawn* items); frame =
interval between animation frames during the drag (in the run's file also the draw time per
frame, and the same for the default view).
"""

HOW = """\
## How we measured

- **Tracing.** One process, models built from configs with random weights (`model_zoo/`),
  inputs from fixed seeds, `model.eval()`, all contenders under the same grad mode
  (`torch.no_grad()`; rows marked *(grad)* use grad mode on). Per model: one untimed warm-up
  of every contender (its result gives the op counts and saved bytes), then at least
  {repeats} rounds (more for fast models: up to 30, about 3 s of the slowest contender) in
  which every contender runs once, in an order rotated each round; the table shows the
  median (all samples are in the run's file in `bench/results/`). `gc.collect()` before
  every timed call. *floor* is a bare `TorchFunctionMode` that forwards each call and keeps
  its output: what any tracer of this kind pays at least.
- **TorchLens** {torchlens}: `torchlens.trace(model, args, kwargs,
  capture=CaptureOptions(layers_to_save="all" | None))` (the 2.x spelling of
  `log_forward_pass(..., layers_to_save="all", vis_opt="none")`; 2.x renders nothing unless
  asked). TorchLens keeps torch wrapped after a call; we install its wrappers before and
  remove them after each call, untimed (a user pays the ~0.2 s install once per process, and
  left in place they would slow every other contender here). Installed with plain
  `pip install torchlens`: its requirements do not include torchvision, and it never
  imports torchvision itself, so no stub was needed.
- **Op counts.** ours: `len(log.ops)`; TorchLens: `trace.num_ops` (unrolled, without
  input/output nodes); floor: the number of `__torch_function__` calls.
- **Bytes.** Sum of `nbytes` over *distinct* storages (views share one), leaving out the
  storages of parameters, buffers and inputs. "all op outputs" comes from the floor (which
  keeps every output alive, so no storage is reused); "ours saved" from the activations in
  `log.ops`; "TL saved" from the `out` of every TorchLens layer with a saved activation.
- **Peak memory.** torch's CPU allocator keeps no statistics and tracemalloc does not see it,
  so we read `/proc/self/status`: `malloc_trim(0)` + `gc.collect()`, write `5` to
  `/proc/self/clear_refs` (resets the high-water mark), run the contender once, and report
  `VmHWM` minus the RSS just before the call, i.e. the extra resident memory the call needed
  at its peak (including what the log still holds).
- **Graphs.** A synthetic chain of `Linear(8,8)+ReLU` blocks in nested `Sequential`s sized
  to ~1k/5k/20k ops; each repetition traces afresh (`save=None`) and times the first access
  of `log.graph`, then `log.rolled_graph`, then the widget payload (`build_payload`, which
  reuses the graphs already built).
- **Widget.** See the widget section.
- **Widget payload.** `bench/payload_bench.py`: the `graph` trait as JSON (before) and as
  lens_widget/widget/wire.py's bytes (now); the notebook growth from executing a notebook with
  nbclient and saving it with nbformat, with and without a widget cell.
- **Threads.** `torch.set_num_threads(1)` by default (`--threads N`): with 2 threads on this
  shared 2-core machine the same plain forward varied by up to 15x between rounds. With more
  threads the forward gets faster while tracing (single-threaded Python) does not, so ratios
  to plain grow.
- **Reading TorchLens numbers.** TorchLens costs a few ms per op whatever the op's size, so
  its ratio to a plain forward depends on how heavy the ops are: ~2-5x on these full-size
  models at 1 thread, 10-300x on small ones (see a `--quick` run). Compare the per-op
  overhead columns.
- **Load.** The machine is shared; *others busy* is the share of all CPUs used by other
  processes while the bench ran (from `/proc/stat` minus our own CPU time). Compare ratios
  within a row, not absolute times across runs.
"""


def render(results: dict[str, Any], source: str) -> str:
    """RESULTS.md for one run; `source` names the run's file."""
    meta = results["meta"]
    env = meta["machine"]
    commit = f" at commit {meta['commit']}" if meta.get("commit") else ""
    device = meta.get("device", "cpu")  # runs from before --device ran on the CPU
    flags = ("" if device == "cpu" else f" --device {device.split()[0]}") + (
        " --quick" if meta.get("quick") else ""
    )
    lines = [
        "# lens_widget benchmarks",
        "",
        f"Generated by `python -m bench.run{flags}`{commit} "
        f"at {meta['started']} UTC in {meta['load']['wall_s']:.0f} s; figures in `{source}`.",
        "",
        "## Machine",
        "",
        f"- device: {device} (models, inputs and traces live there)",
        f"- CPU: {env['cpu']}, {env['cores']} cores, {env['ram_gib']} GiB RAM; {env['os']}",
        f"- torch threads: {meta['threads']} (`torch.set_num_threads`), grad mode: "
        f"{'no_grad' if not meta.get('grad') else 'enabled'}",
        f"- versions: Python {env['python']}, torch {env['torch']}, transformers "
        f"{env['transformers']}, TorchLens {env['torchlens']}, networkx {env['networkx']}, "
        f"playwright {env['playwright']}, {env['chromium'] or 'chromium: not found'}",
        f"- load while running: machine {meta['load']['machine_busy']:.0%} busy, of which "
        f"others {meta['load']['others_busy']:.0%} (load average "
        f"{' '.join(meta['load']['loadavg_start'])} at start, "
        f"{' '.join(meta['load']['loadavg_end'])} at end)",
        "",
    ]
    if meta.get("quick"):
        lines += ["**Quick smoke run on tiny models: these numbers mean nothing.**", ""]

    targets = evaluate_targets(results)
    if targets:
        passed = sum(t["pass"] for t in targets)
        lines += [
            f"## Targets: {passed}/{len(targets)} met",
            "",
            "| target | measured | |",
            "|---|---|---|",
        ]
        lines += [
            f"| {t['target']} | {t['measured']} | {'pass' if t['pass'] else '**miss**'} |"
            for t in targets
        ]
        lines.append("")

    trace = results.get("trace", [])
    if trace:
        lines += [
            "## Tracing time",
            "",
            "Median ms (ratio to the plain forward). *speed-up* = TorchLens time / ours. "
            "*overhead* = time above the plain forward; *overhead ratio* = TorchLens's overhead "
            "/ ours (ours floored at 1% of the plain forward: below that it is noise).",
            "",
        ]
        lines += trace_table(trace + results.get("trace_grad", []))
        lines += ["", "Models:", ""]
        lines += [f"- **{r['model']}**: {r['size']} ({r.get('rounds', '?')} rounds)" for r in trace]
        lines += [
            "",
            "## Memory",
            "",
            "Bytes of distinct storages (MiB) and peak RSS above the start of the call (MiB).",
            "",
        ]
        lines += memory_table(trace)
        lines.append("")
    skipped = {k: v for k, v in meta.get("skipped", {}).items() if v}
    if skipped:
        lines += ["Not run: " + "; ".join(f"{k}: {v}" for k, v in skipped.items()), ""]

    backward = results.get("backward", {})
    if backward.get("rows"):
        lines += ["## Training step", "", BACKWARD_METHOD, ""]
        lines += backward_table(backward) + [""]

    memory_reps = results.get("memory_reps", {})
    if memory_reps.get("rows"):
        lines += ["## Memory per repetition", "", MEMORY_REPS_METHOD.format(**memory_reps), ""]
        lines += memory_reps_table(memory_reps["rows"]) + [""]

    offload = results.get("offload", {})
    if offload:
        lines += ["## Values on disk (offload)", "", OFFLOAD_METHOD, ""]
        lines += offload_lines(offload) + [""]

    graph = results.get("graph", [])
    if graph:
        lines += ["## Graph building", "", "Median ms over fresh traces.", ""]
        lines += graph_table(graph)
        lines.append("")

    if results.get("payload", {}).get("rows"):
        lines += ["## Widget payload", "", "The synced `graph` trait, before and now.", ""]
        lines += payload_lines(results["payload"]) + [""]

    widget = results.get("widget", {})
    if widget.get("rows"):
        lines += ["## Widget (headless Chromium)", ""]
        lines += widget_table(widget["rows"])
        js_mib = mib(widget.get("widget_js_bytes"))
        lines += ["", WIDGET_METHOD.format(widget_js_mib=js_mib).replace("\n", " ").strip(), ""]
    elif widget.get("skipped"):
        lines += ["## Widget", "", f"Not run: {widget['skipped']}", ""]

    tl = env.get("torchlens") or "(not installed)"
    lines.append(HOW.format(repeats=meta["repeats"], torchlens=tl))
    return "\n".join(lines)


BACKWARD_METHOD = (
    "`python -m bench.backward_bench`: train mode, a mean-square loss on the first output, "
    "forward + backward. Median ms per contender over interleaved rounds: untraced, "
    "`lw.trace(save='all', backward=loss)` (every activation and gradient, leaves, the backward "
    "graph) and TorchLens with `save_grads=True` then `log_backward`."
)


def backward_table(backward: dict[str, Any]) -> list[str]:
    lines = ["| model | plain ms | lw traced | TorchLens save_grads |", "|---|---|---|---|"]
    for r in backward["rows"]:
        tl = r.get("torchlens_ratio")
        lines.append(
            f"| {r['model']} | {r['plain_ms']:.1f} | {r['lw_ratio']:.2f}x "
            f"| {f'{tl:.2f}x' if tl is not None else '-'} |"
        )
    tl_median = backward.get("torchlens_median_ratio")
    lines.append(
        f"| **median** | | **{backward['lw_median_ratio']:.2f}x** "
        f"| {f'{tl_median:.2f}x' if tl_median is not None else '-'} |"
    )
    return lines


MEMORY_REPS_METHOD = (
    "`python -m bench.memory_bench`: the 2-layer GPT-2 of issue #25 (train mode, 16 tokens); "
    "each scenario {warmup} times, then {reps} times. *RSS*: growth of the resident set per "
    "repetition, `gc.collect()` before both readings (what a user watching the process "
    "sees: memory only Python's cyclic collector frees piles up between its full runs); "
    "*live*: the same with freed heap handed back to the OS (`malloc_trim`) before both "
    "readings; *cyclic objects*: objects one repetition leaves to the cyclic collector "
    "(0: all freed as soon as dropped; a widget's 43 are the class traitlets makes for each "
    "widget, save_load's are ctypes pointers safetensors makes while writing)."
)


def memory_reps_table(rows: list[dict[str, Any]]) -> list[str]:
    out = [
        "| scenario | one repetition | RSS KiB/rep | live KiB/rep | cyclic objects/rep |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        out.append(
            f"| {r['scenario']} | {r['what']} | {r['rss_kib']:.1f} | {r['live_kib']:.1f} "
            f"| {r['cyclic_objects']:.0f} |"
        )
    return out


def write_report(run_file: pathlib.Path, out: pathlib.Path) -> pathlib.Path:
    """Render `run_file` into `out`/RESULTS.md."""
    target = out / "RESULTS.md"
    try:
        source = run_file.resolve().relative_to(BENCH_DIR.parent)
    except ValueError:
        source = run_file
    results = read_run(run_file)
    text = render(results, str(source))
    if results["meta"].get("device", "cpu") == "cpu":
        text += gpu_section(run_file.parent)
    target.write_text(text)
    return target


def gpu_section(results_dir: pathlib.Path) -> str:
    """The newest full `--device cuda` run's tracing table, under a CPU run's report (a GPU is
    lent only now and then, so its figures are kept beside the CPU ones, with their card)."""
    runs = sorted(p for p in results_dir.glob("*-cuda.json"))
    if not runs:
        return ""
    gpu = read_run(runs[-1])
    meta, env = gpu["meta"], gpu["meta"]["machine"]
    lines = [
        "",
        f"## On a GPU: {meta['device']}",
        "",
        f"The newest `python -m bench.run --device cuda` run, commit {meta.get('commit', '?')} at "
        f"{meta['started']} UTC (`{runs[-1].name}`), torch {env.get('torch')}, "
        f"{env.get('cpu')}; wall time, synchronised after every call. "
        "`bash bench/gpu_session.sh` makes it in one run, with the per-op table "
        "(`bench.per_op --device cuda`) and the count of synchronising CUDA calls per pass "
        "(`bench.host_sync`) beside it in `bench/results/cuda-<date>-<commit>/`.",
        "",
    ]
    lines += trace_table(gpu.get("trace", []) + gpu.get("trace_grad", []))
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description="Re-render bench/RESULTS.md from a run's file.")
    p.add_argument("run", nargs="?", type=pathlib.Path, help="default: the newest run")
    p.add_argument("--out", type=pathlib.Path, default=BENCH_DIR, help="folder of RESULTS.md")
    args = p.parse_args(argv)
    print(f"wrote {write_report(args.run or newest_run(args.out), args.out)}")


if __name__ == "__main__":
    main()


OFFLOAD_METHOD = (
    "bench/offload_bench.py, each row a fresh process: 1 GiB of saved values (32 elementwise "
    "ops over 32 MiB tensors) under a 256 MiB budget, against the forward alone and an "
    "in-memory trace; then an offloaded log of 20,000 ops (2.6 GB on disk) in the widget."
)


def offload_lines(offload: dict[str, Any]) -> list[str]:
    plain, memory, disk = offload["plain"], offload["memory"], offload["offload"]
    summary, widget = offload["summary"], offload["widget"]
    return [
        "| run | peak RSS MiB | seconds |",
        "|---|---|---|",
        f"| plain forward | {plain['peak_mib']:.0f} | {plain['seconds']:.2f} |",
        f"| trace, in memory | {memory['peak_mib']:.0f} | {memory['seconds']:.2f} |",
        f"| trace, offload, budget {summary['budget_mib']:.0f} MiB | {disk['peak_mib']:.0f} "
        f"| {disk['seconds']:.2f} |",
        "",
        f"Peak limit (budget + plain x 1.1): {summary['peak_limit_mib']:.0f} MiB. Disk bytes / "
        f"bytes sent to disk: {summary['disk_over_offloaded']:.3f}. Time against the in-memory "
        f"trace: {summary['time_vs_memory_trace']:.2f}x. Widget on {widget['ops']:.0f} ops "
        f"({widget['disk_gb']:.1f} GB): opened in {widget['open_s']:.2f} s reading "
        f"{widget['read_at_open_kib']:.0f} KiB of values; one click-to-plot "
        f"{widget['click_to_plot_ms']:.0f} ms reading {widget['read_by_click_kib']:.0f} KiB "
        f"(the value: {widget['value_kib']:.0f} KiB).",
    ]
