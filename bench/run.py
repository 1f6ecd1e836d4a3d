"""Benchmarks against the field: lens_widget beside a plain forward pass and TorchLens.

    python bench/run.py            # full run (about 15 min on 2 busy cores)
    python bench/run.py --quick    # tiny models, 2 repeats: checks the harness, not speed

Writes results.json and RESULTS.md into --out (default: bench/).
"""

from __future__ import annotations

import argparse
import json
import math
import pathlib
import sys
import time
import warnings
from typing import Any

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))  # run from a checkout without installing

import torch  # noqa: E402
from environment import LoadMeter, machine_info  # noqa: E402
from models import REALISTIC  # noqa: E402
from report import evaluate_targets, render  # noqa: E402
from trace_bench import bench_case  # noqa: E402
from tracers import Floor, LensWidget, Mode, Plain, TorchLens  # noqa: E402


def _parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--quick", action="store_true", help="tiny models and sizes (smoke test)")
    p.add_argument("--out", type=pathlib.Path, default=HERE, help="where results go")
    p.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch.set_num_threads (default 1: steady on a shared machine)",
    )
    p.add_argument("--repeats", type=int, default=None, help="timed rounds (default 5, quick 2)")
    p.add_argument("--models", default=",".join(REALISTIC), help="comma list of models")
    p.add_argument("--grad-model", default="gpt2", help="model for the grad-enabled row ('' off)")
    p.add_argument("--graph-sizes", default=None, help="op counts (default 1000,5000,20000)")
    p.add_argument("--no-torchlens", action="store_true")
    p.add_argument("--no-memory", action="store_true")
    p.add_argument("--no-graph", action="store_true")
    p.add_argument("--no-widget", action="store_true")
    return p.parse_args(argv)


def _clean(obj: Any) -> Any:
    """JSON has no NaN: write null."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    return obj


def _say(msg: str) -> None:
    print(msg, flush=True)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = _parse(argv)
    warnings.filterwarnings("ignore", message=".*TorchLens observed.*")
    warnings.filterwarnings("ignore", category=UserWarning, module="torchlens")
    torch.set_num_threads(args.threads)
    repeats = args.repeats or (2 if args.quick else 5)
    max_rounds = repeats if args.quick or args.repeats else 30
    meter = LoadMeter()
    meter.start()
    started = time.strftime("%Y-%m-%d %H:%M", time.gmtime())
    _say(f"bench: threads={torch.get_num_threads()} repeats={repeats} quick={args.quick}")

    modes: list[Mode] = [Plain(), Floor(), LensWidget(None), LensWidget("all")]
    if not args.no_torchlens:
        modes += [TorchLens(False), TorchLens(True)]
    results: dict[str, Any] = {"trace": [], "trace_grad": [], "graph": [], "widget": {}}
    skipped: dict[str, str] = {}

    _say("tracing:")
    for name in [m for m in args.models.split(",") if m]:
        case = REALISTIC[name](args.quick)
        results["trace"].append(
            bench_case(
                case,
                modes,
                repeats,
                grad=False,
                memory=not args.no_memory,
                max_rounds=max_rounds,
                log=_say,
            )
        )
        if name == args.grad_model:
            grad_modes = [m for m in modes if m.name in ("plain", "lw_all", "tl_all")]
            results["trace_grad"].append(
                bench_case(
                    case,
                    grad_modes,
                    repeats,
                    grad=True,
                    memory=False,
                    max_rounds=max_rounds,
                    log=_say,
                )
            )
        del case

    if not args.no_graph:
        _say("graphs:")
        from graph_bench import bench_graph

        sizes = [int(s) for s in (args.graph_sizes or "1000,5000,20000").split(",")]
        if args.quick and args.graph_sizes is None:
            sizes = [100, 300]
        try:
            results["graph"] = bench_graph(sizes, 2 if args.quick else 3, log=_say)
        except Exception as err:  # report, keep the rest of the results
            skipped["graph"] = f"{type(err).__name__}: {err}"
            _say(f"  graph bench failed: {skipped['graph']}")

    if not args.no_widget:
        _say("widget:")
        from widget_bench import bench_widget

        try:
            results["widget"] = bench_widget(quick=args.quick, log=_say)
        except Exception as err:
            results["widget"] = {"skipped": f"{type(err).__name__}: {err}"}
            _say(f"  widget bench failed: {results['widget']['skipped']}")

    results["meta"] = {
        "started": started,
        "quick": args.quick,
        "threads": torch.get_num_threads(),
        "repeats": repeats,
        "grad": False,
        "machine": machine_info(),
        "load": meter.stop(),
        "skipped": skipped,
    }
    results["targets"] = evaluate_targets(results)
    results = _clean(results)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    (args.out / "RESULTS.md").write_text(render(results))
    _say(f"wrote {args.out / 'results.json'} and {args.out / 'RESULTS.md'}")
    return results


if __name__ == "__main__":
    main()
