"""Benchmarks against the field: lens_widget beside a plain forward and TorchLens.

    python -m bench.run            # full run (about 15 min on 2 busy cores)
    python -m bench.run --quick    # tiny models, 2 repeats: checks the harness, not speed
    python -m bench.run --device cuda   # the tracing table on a GPU (no graph/widget/memory)

Each run writes its figures to --out/results/<UTC time>-<commit>.json (quick runs end in
-quick) and renders them into --out/RESULTS.md (default --out: bench/).
"""

from __future__ import annotations

import argparse
import pathlib
import time
import warnings
from typing import Any

import torch

from model_zoo import BENCH_MODELS

from .backward_bench import bench_backward
from .device import DEVICES, device_name, pick_device, synchronizer
from .environment import LoadMeter, machine_info
from .graph_bench import bench_graph
from .history import git_commit, run_file_name, write_run
from .report import write_report
from .trace_bench import bench_case
from .tracers import Mode, TorchLens, all_modes

# What a CUDA run leaves out, and why (the report prints these).
CUDA_SKIPS = {
    "memory": "peak RSS (VmHWM) and RSS per repetition measure host memory, not the GPU's",
    "graph": "graph building runs on the host; measured by CPU runs",
    "widget": "the widget bench runs in a browser on the host; measured by CPU runs",
}

BENCH_DIR = pathlib.Path(__file__).resolve().parent


def _parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--quick", action="store_true", help="tiny models and sizes (smoke test)")
    p.add_argument(
        "--device",
        choices=DEVICES,
        default="cpu",
        help="where models run (cuda: the tracing table only; graph, widget, memory skipped)",
    )
    p.add_argument("--out", type=pathlib.Path, default=BENCH_DIR, help="where results go")
    p.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch.set_num_threads (default 1: steady on a shared machine)",
    )
    p.add_argument("--repeats", type=int, default=None, help="timed rounds (default 5, quick 2)")
    p.add_argument("--models", default=",".join(BENCH_MODELS), help="comma list of models")
    p.add_argument("--grad-model", default="gpt2", help="model for the grad-enabled row ('' off)")
    p.add_argument("--graph-sizes", default=None, help="op counts (default 1000,5000,20000)")
    p.add_argument("--no-torchlens", action="store_true")
    p.add_argument(
        "--no-memory", action="store_true", help="skip peak RSS and memory per repetition"
    )
    p.add_argument(
        "--no-offload", action="store_true", help="skip values on disk (not run with --quick)"
    )
    p.add_argument("--no-graph", action="store_true")
    p.add_argument("--no-widget", action="store_true")
    p.add_argument("--no-backward", action="store_true", help="skip the training-step section")
    return p.parse_args(argv)


def _say(msg: str) -> None:
    print(msg, flush=True)


def _trace_rows(
    args: argparse.Namespace,
    modes: list[Mode],
    repeats: int,
    device: torch.device,
    skipped: dict[str, str],
) -> dict[str, Any]:
    max_rounds = repeats if args.quick or args.repeats else 30
    sync = synchronizer(device)
    rows: dict[str, Any] = {"trace": [], "trace_grad": []}
    for name in [m for m in args.models.split(",") if m]:
        try:
            case = BENCH_MODELS[name]("tiny" if args.quick else "bench").to(device)
        except Exception as err:  # e.g. a transformers without this model class: skip the row
            skipped[f"model {name}"] = f"could not build: {type(err).__name__}: {err}"
            _say(f"  {name}: SKIPPED ({skipped[f'model {name}']})")
            continue
        rows["trace"].append(
            bench_case(
                case,
                modes,
                repeats,
                grad=False,
                memory=not args.no_memory,
                max_rounds=max_rounds,
                log=_say,
                sync=sync,
            )
        )
        if name == args.grad_model:
            grad_modes = [m for m in modes if m.name in ("plain", "lw_all", "tl_all")]
            rows["trace_grad"].append(
                bench_case(
                    case,
                    grad_modes,
                    repeats,
                    grad=True,
                    memory=False,
                    max_rounds=max_rounds,
                    log=_say,
                    sync=sync,
                )
            )
        del case
    return rows


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = _parse(argv)
    device = pick_device(args.device)
    skipped: dict[str, str] = {}
    if device.type == "cuda":
        args.no_memory = args.no_graph = args.no_widget = True
        skipped |= CUDA_SKIPS
    warnings.filterwarnings("ignore", message=".*TorchLens observed.*")
    warnings.filterwarnings("ignore", category=UserWarning, module="torchlens")
    torch.set_num_threads(args.threads)
    repeats = args.repeats or (2 if args.quick else 5)
    meter = LoadMeter()
    meter.start()
    now = time.gmtime()
    commit, dirty = git_commit()
    _say(
        f"bench: device={device_name(device)} threads={torch.get_num_threads()} "
        f"repeats={repeats} quick={args.quick}"
    )
    for what, why in skipped.items():
        _say(f"  not run: {what} ({why})")

    modes = [m for m in all_modes() if not (args.no_torchlens and isinstance(m, TorchLens))]
    _say("tracing:")
    results: dict[str, Any] = _trace_rows(args, modes, repeats, device, skipped)
    results |= {"graph": [], "widget": {}}

    if not args.no_backward:
        _say("training step (forward + backward with gradients):")
        models = args.models.split(",") if args.models else None
        try:
            results["backward"] = bench_backward(args.quick, None, models, log=_say)
        except Exception as err:  # report, keep the rest of the results
            skipped["backward"] = f"{type(err).__name__}: {err}"
            _say(f"  backward bench failed: {skipped['backward']}")

    if not args.no_memory:
        _say("memory per repetition (issue #25: flat across repeated traces and widgets):")
        try:
            # Imported here: it needs transformers and the widget, like the sections below.
            from .memory_bench import bench_memory

            results["memory_reps"] = bench_memory(args.quick, log=_say)
        except Exception as err:  # report, keep the rest of the results
            skipped["memory_reps"] = f"{type(err).__name__}: {err}"
            _say(f"  memory bench failed: {skipped['memory_reps']}")

    if not (args.no_offload or args.quick):
        _say("values on disk (issue #21: peak under a budget, a 20,000-op log in the widget):")
        try:
            from .offload_bench import measure

            results["offload"] = measure()
        except Exception as err:  # report, keep the rest of the results
            skipped["offload"] = f"{type(err).__name__}: {err}"
            _say(f"  offload bench failed: {skipped['offload']}")

    if not args.no_graph:
        _say("graphs:")
        sizes = [int(s) for s in (args.graph_sizes or "1000,5000,20000").split(",")]
        if args.quick and args.graph_sizes is None:
            sizes = [100, 300]
        try:
            results["graph"] = bench_graph(sizes, 2 if args.quick else 3, log=_say)
        except Exception as err:  # report, keep the rest of the results
            skipped["graph"] = f"{type(err).__name__}: {err}"
            _say(f"  graph bench failed: {skipped['graph']}")

    if not args.no_widget:
        _say("widget payload:")
        try:
            # Imported in the widget sections: they need the widget (anywidget, nbformat) and
            # playwright, which a tracing-only run (--no-widget, --device cuda) must not require.
            from .payload_bench import bench_payload

            results["payload"] = bench_payload(quick=args.quick, log=_say)
        except Exception as err:
            skipped["payload"] = f"{type(err).__name__}: {err}"
            _say(f"  payload bench failed: {skipped['payload']}")
        _say("widget:")
        try:
            from .widget_bench import bench_widget

            results["widget"] = bench_widget(quick=args.quick, log=_say)
        except Exception as err:
            results["widget"] = {"skipped": f"{type(err).__name__}: {err}"}
            _say(f"  widget bench failed: {results['widget']['skipped']}")

    results["meta"] = {
        "started": time.strftime("%Y-%m-%d %H:%M", now),
        "commit": commit,
        "dirty": dirty,
        "quick": args.quick,
        "device": device_name(device),
        "threads": torch.get_num_threads(),
        "repeats": repeats,
        "grad": False,
        "machine": machine_info(),
        "load": meter.stop(),
        "skipped": skipped,
    }
    name = run_file_name(time.strftime("%Y-%m-%dT%H%M%SZ", now), commit, args.quick, device.type)
    run_file = write_run(results, args.out, name)
    report = write_report(run_file, args.out)
    _say(f"wrote {run_file} and {report}")
    return results


if __name__ == "__main__":
    main()
