"""The benchmark harness (`python -m bench.run`) runs end to end on tiny sizes and writes
well-formed results: one file per run, and RESULTS.md from it.

No timing asserts: this checks the bench code, not speed.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import pathlib
import subprocess
import sys

import pytest

from bench.targets import evaluate_targets

ROOT = pathlib.Path(__file__).resolve().parents[2]
HAS_TORCHLENS = importlib.util.find_spec("torchlens") is not None


def _run_bench(out: pathlib.Path, *extra: str) -> dict:
    cmd = [sys.executable, "-m", "bench.run", "--quick", "--out", str(out), *extra]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (run_file,) = (out / "results").glob("*.json")
    assert run_file.name.endswith("-quick.json")
    return json.loads(run_file.read_text())


def test_quick_bench_writes_results(tmp_path):
    extra = ["--models", "gpt2,looped", "--repeats", "1", "--graph-sizes", "60", "--no-widget"]
    if not HAS_TORCHLENS:
        extra.append("--no-torchlens")
    results = _run_bench(tmp_path, *extra)

    assert [r["model"] for r in results["trace"]] == ["gpt2", "looped"]
    assert [r["model"] for r in results["trace_grad"]] == ["gpt2"]
    for row in results["trace"]:
        modes = row["modes"]
        for name in ("plain", "floor", "lw_none", "lw_all"):
            entry = modes[name]
            assert len(entry["samples_ms"]) == 1
            assert entry["median_ms"] > 0
            assert entry["peak_rss_bytes"] >= 0
        # Both traces of the same model see the same ops; save=None keeps no activations.
        assert modes["lw_all"]["ops"] == modes["lw_none"]["ops"] > 0
        assert modes["lw_none"]["saved_bytes"] == 0
        assert modes["lw_all"]["saved_bytes"] > 0
        # Every saved op output is one of the op outputs the floor saw (or a copy of one).
        assert modes["floor"]["calls"] >= modes["lw_all"]["ops"]
        if HAS_TORCHLENS:
            assert modes["tl_all"]["ops"] > 0
            assert modes["tl_all"]["saved_bytes"] > 0
            assert modes["tl_none"]["saved_bytes"] == 0

    (graph,) = results["graph"]
    assert graph["ops"] >= 50
    assert graph["graph_nodes"] > graph["ops"]  # sources (inputs, params) are nodes too
    assert graph["rolled_nodes"] <= graph["graph_nodes"]

    meta = results["meta"]
    assert meta["quick"] is True and meta["threads"] == 1
    assert meta["machine"]["torch"]
    assert {"pass", "target", "measured"} <= set(evaluate_targets(results)[0])

    backward = results["backward"]
    assert [r["model"] for r in backward["rows"]] == ["gpt2", "looped"]
    assert all(r["plain_ms"] > 0 and r["lw_ratio"] > 0 for r in backward["rows"])

    # memory per repetition: every scenario, beside a plain training step
    memory_rows = results["memory_reps"]["rows"]
    assert [r["scenario"] for r in memory_rows][:2] == ["plain_step", "trace"]
    assert {"widget", "tracing_grads", "rerun", "save_load"} <= {r["scenario"] for r in memory_rows}
    assert all({"rss_kib", "live_kib", "cyclic_objects"} <= set(r) for r in memory_rows)

    md = (tmp_path / "RESULTS.md").read_text()
    assert "## Tracing time" in md and "| gpt2 |" in md and "## Graph building" in md
    assert "## Training step" in md and "## Memory per repetition" in md


@pytest.mark.skipif(
    not (ROOT / "lens_widget" / "static" / "widget.js").exists()
    or not pathlib.Path("/usr/bin/chromium").exists(),
    reason="needs the built frontend and /usr/bin/chromium",
)
def test_quick_widget_bench_runs(tmp_path):
    results = _run_bench(tmp_path, "--models", "", "--no-graph", "--no-torchlens", "--no-memory")
    widget = results["widget"]
    assert "skipped" not in widget, widget
    assert widget["rows"]
    for row in widget["rows"]:
        assert row["nodes"] > 0
        assert row["first_paint_ms"] > 0
        assert 0 < row["payload_wire_bytes"] < row["payload_json_bytes"]
        # picking a metric recolors the graph (issue 12's recolor row)
        assert row["recolor_ms"] > 0 and row["recolor_all_ms"] > 0, row.get("error")
    # the synced graph's size, and a saved notebook's growth with the ESM bundle in it
    payload = results["payload"]
    assert payload["rows"] and all(0 < r["wire_bytes"] < r["json_bytes"] for r in payload["rows"])
    # the kernel side: each step timed, for the folded chain and the flat loop
    kernel = payload["kernel"]
    assert [r["graph"].split(" ")[0] for r in kernel] == ["chain", "tiny"]
    assert all(r["ops"] > 1000 and r["widget_s"] > 0 and r["wire_bytes"] > 0 for r in kernel)
    notebook = payload["notebook"]
    assert notebook["growth_bytes"] > notebook["esm_bytes"] > 0 and notebook["graph_bytes"] > 0


def test_rows_floor_keeps_one_row_per_recorded_op_with_its_producers():
    """bench/per_op.py's "rows floor" must see the ops a trace records, linked as the trace
    links them, or it is no floor of the same work."""
    import torch

    import lens_widget as lw
    from bench.per_op import TinyLoop
    from bench.tracers import KeepRows

    model, x = TinyLoop(4).eval(), torch.randn(4, 8)
    mode = KeepRows(keep_outputs=True)
    with torch.no_grad(), mode:
        out = model(x)
    log = lw.trace(model, x)
    assert [row[0].__name__ for row in mode.rows] == [op.func for op in log.ops]
    # each op's tensor inputs: the rows that made them (-1: from outside, a param or input)
    made_by = {op.label: i for i, op in enumerate(log.ops)}
    expected = [[made_by.get(arg.parent, -1) for arg in op.parent_args] for op in log.ops]
    assert [row[2] for row in mode.rows] == expected
    assert mode.rows[-1][3] == tuple(out.shape) and mode.rows[-1][7] is out


def test_log_rows_floor_sees_the_ops_sources_and_module_calls_a_trace_records():
    """bench.tracers.KeepLogRows, the floor of this log's content: a row per recorded op and
    per source the trace makes (a parameter's with its name), a row per module call, and
    nn.Module as it was afterwards."""
    import torch
    from torch import nn

    import lens_widget as lw
    from bench.tracers import KeepLogRows

    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Sequential(nn.Linear(4, 2))).eval()
    x = torch.randn(3, 4)
    call_impl = nn.Module.__dict__["_call_impl"]
    code = call_impl.__code__
    mode = KeepLogRows(keep_outputs=True, model=model)
    with torch.no_grad(), mode:
        model(x)
    log = lw.trace(model, x)
    ops = [row for row in mode.rows if row[0] != "source"]
    assert [row[0].__name__ for row in ops] == [op.func for op in log.ops]
    assert len(mode.rows) - len(ops) == sum(1 for n in log.nodes if n.kind != "op") - 1
    # each parameter's source row carries the name the trace gives its node
    named = [row[1] for row in mode.rows if row[0] == "source" and row[1] is not None]
    assert [name for name, kind in named] == [n.label for n in log.nodes if n.kind == "param"]
    assert len(mode.modules) == sum(info.n_passes for info in log.modules.values())
    assert nn.Module.__dict__["_call_impl"] is call_impl and call_impl.__code__ is code


def test_trace_parts_times_every_part(monkeypatch):
    """bench.trace_parts takes lw.trace apart: every part is timed, on a real trace."""
    from types import SimpleNamespace

    import torch
    from torch import nn

    import bench.trace_parts as parts

    case = SimpleNamespace(
        model=nn.Sequential(nn.Linear(4, 4), nn.ReLU()), args=(torch.randn(2, 4),), kwargs={}
    )
    monkeypatch.setattr(parts, "model_case", lambda name: case)
    medians = parts.measure("tiny", rounds=2)
    assert set(medians) == set(parts.PARTS) and all(t > 0 for t in medians.values())


def test_trace_phases_anchors_match_the_recorder(tmp_path):
    """bench.trace_phases patches a copy of lens_widget at anchors in its source: each must
    still occur once, or the phase table silently stops adding up."""
    from bench.trace_phases import instrumented_copy

    instrumented_copy(tmp_path)  # exits naming an anchor that no longer matches
    capture = tmp_path / "lens_widget" / "capture"
    recorder = "".join((capture / n).read_text() for n in ("recorder.py", "op_recording.py"))
    assert recorder.count('PH["') >= 10 and "thread_time_ns" in recorder


def test_real_per_op_tells_two_logs_apart():
    """bench.real_per_op --baseline checks that both versions make the same log before timing
    them: its check must see a difference in any record field and in replay templates."""
    import torch
    from torch import nn

    import lens_widget as lw
    from bench.real_per_op import same_log

    model, x = nn.Sequential(nn.Linear(3, 3), nn.ReLU()).eval(), torch.randn(2, 3)

    def trace() -> lw.ModelLog:  # one line: the same sources
        return lw.trace(model, x)

    same_log(trace(), trace())
    changed = trace()
    changed.ops[1].source_code = "another line"
    with pytest.raises(AssertionError, match="source_code"):
        same_log(trace(), changed)
    changed = trace()
    changed.ops[0].replay[0].args = (changed.ops[0].replay[0].args[0], 7, 7)
    with pytest.raises(AssertionError, match="replay calls differ"):
        same_log(trace(), changed)


def test_real_per_op_baseline_sides_are_copies_imported_alike(tmp_path, monkeypatch):
    """--baseline times two copies of lens_widget, each imported from a directory of its own
    under its own name: the revision's and the working tree's. Both trace, with their own
    code, and the log check takes their functions for the same ones."""
    import sys

    import torch
    from torch import nn

    from bench.real_per_op import package_copy, same_log

    monkeypatch.setattr(sys, "path", list(sys.path))  # package_copy puts its directory first
    try:
        base = package_copy("lens_widget_baseline", tmp_path / "a", "HEAD")
        current = package_copy("lens_widget_current", tmp_path / "b")
        assert base.__file__.startswith(str(tmp_path / "a" / "lens_widget_baseline"))
        assert current.__file__.startswith(str(tmp_path / "b" / "lens_widget_current"))
        model, x = nn.Sequential(nn.Linear(3, 3), nn.ReLU()).eval(), torch.randn(2, 3)
        log_base, log_current = (p.trace(model, x, save="all") for p in (base, current))
        assert type(log_current).__module__.startswith("lens_widget_current.")
        assert [op.func for op in log_current.ops] == ["linear", "relu"]
        same_log(log_current, log_base)
    finally:  # the copies leave nothing for later tests
        for name in list(sys.modules):
            if name.startswith(("lens_widget_baseline", "lens_widget_current")):
                del sys.modules[name]


def test_paired_change_tells_a_shift_from_noise():
    """bench.measure.paired_change: a run slower by 2 µs/op in every round gets an interval
    excluding 0; the same noise without the shift gets one holding 0."""
    import random

    from bench.measure import paired_change

    noise = random.Random(1)
    before = [0.020 + noise.uniform(0, 0.004) for _ in range(31)]  # s per run, 20-24 ms
    jitter = [noise.gauss(0, 0.0002) for _ in before]
    shifted = [b + 0.002 + j for b, j in zip(before, jitter, strict=True)]  # +2 ms = +2 µs/op
    same = [b + j for b, j in zip(before, jitter, strict=True)]
    times = {"before": before, "shifted": shifted, "same": same}
    median, low, high = paired_change(times, 1000, "shifted", "before")
    assert 1.8 < low <= median <= high < 2.2
    median, low, high = paired_change(times, 1000, "same", "before")
    assert low < 0 < high and abs(median) < 0.2


def test_paired_ratio_puts_an_interval_around_a_cost_ratio():
    """bench.measure.paired_ratio: a run costing twice the floor's above plain in every
    round gets a ratio near 2 whose interval excludes 1.5, however much plain itself
    moves between rounds; one costing as much as the floor gets an interval holding 1."""
    import random

    from bench.measure import paired_ratio

    noise = random.Random(2)
    plain = [0.020 + noise.uniform(0, 0.006) for _ in range(31)]  # 20-26 ms: moves a lot
    floor = [p + 0.002 + noise.gauss(0, 0.0002) for p in plain]  # +2 ms above plain
    double = [p + 0.004 + noise.gauss(0, 0.0002) for p in plain]
    same = [p + 0.002 + noise.gauss(0, 0.0002) for p in plain]
    times = {"plain": plain, "floor": floor, "double": double, "same": same}
    ratio, low, high = paired_ratio(times, "double", "floor")
    assert 1.5 < low <= ratio <= high < 2.5 and abs(ratio - 2) < 0.15
    ratio, low, high = paired_ratio(times, "same", "floor")
    assert low < 1 < high


def test_trace_ablation_times_every_stand_in_and_puts_them_back(monkeypatch):
    """bench.trace_ablation times a trace's forward with parts of the per-op path taken
    away: every run is timed on a real model, and lens_widget's own code is back after."""
    import torch
    from torch import nn

    import bench.trace_ablation as ablation
    import lens_widget as lw
    from lens_widget.capture import module_tracker, op_recording
    from model_zoo.case import ZooCase

    record, enter = op_recording.OpRecording.record, module_tracker.ModuleTracker.enter
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Identity()).eval()
    case = ZooCase("tiny", model, (torch.randn(2, 4),))
    monkeypatch.setattr(ablation, "model_case", lambda name, size: case)
    n_ops, times = ablation.measure("tiny", rounds=2, save=None)
    assert n_ops == 3  # linear, relu and the identity op of nn.Identity
    assert set(times) == {"plain", "bare mode", "rows floor", "log-rows floor", *ablation.VARIANTS}
    assert all(len(values) == 2 and min(values) > 0 for values in times.values())
    assert op_recording.OpRecording.record is record
    assert module_tracker.ModuleTracker.enter is enter

    def traced_ops() -> int:
        return len(lw.trace(model, torch.randn(2, 4)).ops)

    with ablation.ablated(("no module calls",)):
        assert traced_ops() == 2  # no identity op without module outputs
    assert traced_ops() == 3


def test_instructions_reads_callgrind_dumps_and_weighs_misses():
    """bench.instructions: a callgrind dump's summary read by event name, and the cycle
    estimate weighing L1 misses 10 and last-level misses 100."""
    from bench.instructions import cost, parse_dump

    dump = (
        "# callgrind format\nversion: 1\nevents: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw\n"
        "fn=(1) main\n16 3 1 1 0 0 0 0 0 0\nsummary: 1000 300 200 5 20 10 1 2 3\n"
        "totals: 1000 300 200 5 20 10 1 2 3\n"
    )
    counts = parse_dump(dump)
    assert counts["Ir"] == 1000 and counts["D1mw"] == 10 and counts["DLmw"] == 3
    assert cost(counts, cycles=False) == 1000
    assert cost(counts, cycles=True) == 1000 + 10 * (5 + 20 + 10) + 100 * (1 + 2 + 3)
    with pytest.raises(ValueError, match="summary"):
        parse_dump("events: Ir\n")


@pytest.mark.skipif(
    importlib.import_module("bench.instructions").missing_tools() is not None,
    reason="valgrind, its headers or a C compiler missing",
)
def test_instructions_counts_a_run_under_callgrind_the_same_each_time(tmp_path):
    """bench.instructions.Counter under a real callgrind: a run doing 100x the work counts
    ~100x the instructions, and the same run counts the same twice (the point of the bench:
    a figure that does not move with the machine's load)."""
    import os

    from bench.instruction_groups import by_kind
    from bench.instructions import build_helper

    library = build_helper(tmp_path)
    out = tmp_path / "callgrind.out"
    script = (
        "from pathlib import Path\nfrom bench.instructions import Counter\n"
        f"c = Counter({str(library)!r}, Path({str(out)!r}))\n"
        "small = lambda: sum(i * i for i in range(1_000))\n"
        "big = lambda: sum(i * i for i in range(100_000))\n"
        "small(), big(), big(), big()  # warm: specialised bytecode, pymalloc's arenas\n"
        "print(*[c.count(run)['Ir'] for run in (small, big, big)])\n"
        "import json; print(json.dumps(c.per_function(big)[0]))\n"
    )
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--quiet",
         f"--callgrind-out-file={out}", sys.executable, "-c", script],
        capture_output=True, text=True, timeout=300, check=True,
        env={**os.environ, "PYTHONHASHSEED": "0"}, cwd=pathlib.Path(__file__).parents[2],
    )  # fmt: skip
    counts, functions = done.stdout.splitlines()
    small, big, again = map(int, counts.split())
    assert 50 * small < big < 200 * small
    assert abs(again - big) < 0.03 * big  # 2% from the first counted runs (arena state)
    # per C function, self costs: they add up to about the run's count (a fourth run), and a
    # loop of Python arithmetic is the interpreter's loop and int arithmetic (the rest)
    kinds = by_kind(json.loads(functions))
    assert abs(sum(kinds.values()) - big) < 0.1 * big
    assert kinds["the interpreter's loop"] > 0.25 * big and kinds["the rest"] > 0.25 * big


def test_instruction_groups_sum_differences_by_kind_of_work():
    """bench.instruction_groups: C functions as callgrind_annotate names them are put in
    their kind of work, the first kind matching; a difference of two runs per function."""
    from bench.instruction_groups import OTHER, by_kind, difference, kind_of

    build = "/tmp/python-build/Python-3.11.7/"
    assert kind_of(build + "Python/ceval.c:_PyEval_EvalFrameDefault'2 [libpython]") == (
        "the interpreter's loop"
    )
    assert kind_of(build + "Objects/dictobject.c:dict_dealloc") == "allocation and freeing"
    assert kind_of(build + "Objects/dictobject.c:_Py_dict_lookup") == "dict and attribute lookups"
    assert kind_of("???:c10::DispatchKeySet::iterator::operator++() [libc10.so]") == (
        "torch (libtorch, libc10, pybind11)"
    )
    assert kind_of("???:strlen [libc.so.6]") == OTHER
    before = {"ceval.c:_PyEval_EvalFrameDefault": 100, "obmalloc.c:_PyObject_Free": 10}
    after = {"ceval.c:_PyEval_EvalFrameDefault": 160, "???:strlen": 5}
    change = by_kind(difference(after, before))
    assert change["the interpreter's loop"] == 60
    assert change["allocation and freeing"] == -10
    assert change[OTHER] == 5 and sum(change.values()) == 55


def test_bytecodes_counts_the_same_each_run_and_finds_the_recorder():
    """bench.bytecodes on a small real model: the trace's per-op path shows by function (the
    recorder's hook, the floor's own), and two counts of the same forward are equal."""
    from types import SimpleNamespace

    import torch
    from torch import nn

    from bench.bytecodes import count_bytecodes, measure

    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)).eval()
    case = SimpleNamespace(model=model, args=(torch.randn(3, 4),), kwargs={})
    n_ops, counts = measure(case)
    assert n_ops == 3
    hook = ("lens_widget/capture/recorder.py", "Recorder.__torch_function__")
    floor_hook = ("bench/tracers.py", "KeepLogRows.__torch_function__")
    assert counts["trace"][hook] > 0 and counts["plain"][hook] == 0
    assert counts["floor"][floor_hook] > 0 and counts["trace"][floor_hook] == 0
    assert sum(counts["trace"].values()) > sum(counts["floor"].values()) > 0

    def forward(start, stop):
        start()
        with torch.no_grad():
            model(*case.args)
        stop()

    assert count_bytecodes(forward) == count_bytecodes(forward)


def test_bytecodes_of_a_training_step_count_the_backward_capture():
    """bench.bytecodes --step: the traced step's count holds its backward hooks and its
    exit; the floor's holds its own pre-hooks, the plain step neither."""
    from types import SimpleNamespace

    import torch
    from torch import nn

    from bench.bytecodes import measure

    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    case = SimpleNamespace(model=model, args=(torch.randn(3, 4),), kwargs={})
    n_ops, counts = measure(case, step=True)
    assert n_ops == 3 and model.training
    before_node = (
        "lens_widget/capture/backward/backward_capture.py",
        "BackwardCapture._before_node",
    )
    step_end = ("lens_widget/capture/backward/backward_log.py", "end_step")  # at the exit
    floor_walk = ("bench/training_step.py", "_reachable")
    assert counts["trace"][before_node] > 0 and counts["trace"][step_end] > 0
    assert counts["floor"][floor_walk] > 0 and counts["floor"][before_node] == 0
    assert not any(counts["plain"][f] for f in (before_node, step_end, floor_walk))


def test_training_step_contenders_step_the_model_alike():
    """bench.training_step's contenders (what it times and bench.instructions --step
    counts): plain first, then the floor and the traced step, each leaving the same .grad;
    the traced one a log of the step, its floor walking every node the loss reaches."""
    from types import SimpleNamespace

    import torch
    from torch import nn

    import lens_widget as lw
    from bench.training_step import FLOOR, LW, _reachable, step_runs

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    case = SimpleNamespace(model=model, args=(torch.randn(3, 4),), kwargs={})
    runs, clear_grads = step_runs(case, lw)
    assert list(runs) == ["plain", FLOOR, LW]
    grads = []
    for run in runs.values():
        clear_grads()
        result = run()
        grads.append([p.grad.clone() for p in model.parameters()])
    assert all(torch.equal(a, b) for g in grads[1:] for a, b in zip(grads[0], g, strict=True))
    assert len(result.leaves) == 4 and len(result.backward_passes) == 1
    loss = model(*case.args).pow(2).mean()
    nodes = _reachable(loss.grad_fn)
    assert len(nodes) == len(set(nodes)) == len(result.backward_graph)  # each ran once


def test_monitor_phases_without_stats_replaces_every_statistic_and_puts_them_back():
    """bench.monitor_phases --without-stats: the monitored step's statistics, from the
    worker and from the batch after it, are all the constant; the functions are back after."""
    import numpy as np
    import torch
    from torch import nn

    import bench.monitor_phases as phases
    import lens_widget as lw
    from lens_widget.capture.monitor import background_stats
    from lens_widget.log.monitor.step_history import STAT_NAMES

    originals = background_stats.host_stats, background_stats.activation_stats
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    monitor = lw.Monitor(model, every=1)
    with phases._without_stats(monitor.step, background_stats)():
        model(torch.randn(3, 4)).sum().backward()
    with monitor.step():  # the real statistics again
        model(torch.randn(3, 4)).sum().backward()
    constant, real = monitor.history.steps
    expected = np.array([phases._CONSTANT[name] for name in STAT_NAMES], dtype=np.float64)
    assert constant.gradient is not None
    with_grad = ~np.isnan(constant.gradient).all(axis=1)  # the ops a gradient reached
    assert with_grad.sum() >= 3
    assert (constant.activation == expected).all()
    assert (constant.gradient[with_grad] == expected).all()
    assert not (real.activation == expected).all(axis=1).any()
    assert (background_stats.host_stats, background_stats.activation_stats) == originals


def test_monitor_phases_baseline_times_a_revisions_monitor_in_the_same_rounds(monkeypatch, capsys):
    """bench.monitor_phases --baseline REV: the revision's Monitor, a package copy beside a
    copy of the working tree's, steps in the same rounds; each monitored variant's ratio to
    its round's plain step is printed."""
    import sys

    import torch

    import bench.monitor_phases as phases

    monkeypatch.setattr(sys, "path", list(sys.path))  # package_copy puts its directory first
    threads = torch.get_num_threads()
    try:
        phases.main(["--rounds", "1", "--width", "64", "--without-stats", "--baseline", "HEAD"])
    finally:
        torch.set_num_threads(threads)
        for name in list(sys.modules):
            if name.startswith(("lens_widget_baseline", "lens_widget_current")):
                del sys.modules[name]
    out = capsys.readouterr().out
    table, per_round = out.split("x the plain step of the same round")
    monitored = ["Monitor(every=1)", "Monitor(every=1), no statistics", "Monitor(every=1) at HEAD"]
    names = [line[:32].strip() for line in table.splitlines()[2:]]
    assert names[0] == "plain" and names[-3:] == monitored
    lines = per_round.splitlines()[1:]
    assert [line[:32].strip() for line in lines] == monitored
    for line in lines:
        median, spread = line[32:].split()
        assert 0.5 < float(median) < 20 and spread.startswith("(") and spread.endswith(")")


def test_training_step_baseline_steps_a_revision_in_the_same_rounds(monkeypatch, tmp_path):
    """bench.training_step --baseline REV: the revision's traced step, a package copy, runs in
    the same rounds as the working tree's, and both give the same log."""
    import sys

    import bench.training_step as training
    from bench.real_per_op import model_case, package_copy

    monkeypatch.setattr(sys, "path", list(sys.path))  # package_copy puts its directory first
    try:
        baseline = package_copy("lens_widget_baseline", tmp_path / "a", "HEAD")
        current = package_copy("lens_widget_current", tmp_path / "b")
        case = model_case("bert")
        n_ops, times = training.measure(case, 2, current, baseline)
        logs = [training._lw_step(case, package) for package in (current, baseline)]
    finally:
        for name in list(sys.modules):
            if name.startswith(("lens_widget_baseline", "lens_widget_current")):
                del sys.modules[name]
    assert len(logs[0].ops) == len(logs[1].ops) > n_ops > 50  # the loss adds its ops
    assert [n.label for n in logs[0].nodes] == [n.label for n in logs[1].nodes]
    assert sorted(logs[0].leaves) == sorted(logs[1].leaves) and len(logs[0].leaves) > 10
    assert list(times) == ["plain", "floor (rows + a pre-hook per autograd node)", training.LW,
                           "baseline"]  # fmt: skip
    assert all(len(t) == 2 and min(t) > 0 for t in times.values())


def test_training_step_read_fills_each_traced_steps_log():
    """bench.training_step --read: the step's log is read after it, so what the step left to
    the first read is counted; without it the fill waits."""
    from types import SimpleNamespace

    import torch
    from torch import nn

    import bench.training_step as training

    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    case = SimpleNamespace(model=model, args=(torch.randn(3, 4),), kwargs={})
    waiting = training._lw_step(case)
    read = training._lw_step(case, read=True)
    assert "_details_later" in waiting.__dict__ and "_details_later" not in read.__dict__
    assert [n.label for n in read.nodes] == [n.label for n in waiting.nodes]
