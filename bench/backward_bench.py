"""Cost of tracing a training step: forward + loss + backward, with every gradient kept.

Per bench model (train mode, a mean-square loss on the first output), interleaved in one
process, each round in a rotated order:
- plain: an untraced forward + backward;
- lw: ``lw.trace(model, inputs, save="all", backward=loss)`` (activations and gradients of
  every op, leaves, the backward graph);
- torchlens: ``torchlens.trace(..., capture=CaptureOptions(layers_to_save="all",
  save_grads=True))`` then ``trace.log_backward(loss)`` on its first logged output
  (its torch wrappers are removed after each call, as in bench/tracers.py).
The row is each contender's median over rounds; the summary is the median over models of
lw / plain (target <= 1.6x) and torchlens / plain.

    python -m bench.backward_bench            # bench-size models
    python -m bench.backward_bench --quick    # tiny models, 3 rounds: a smoke run
"""

from __future__ import annotations

import argparse
import gc
import statistics
from collections.abc import Callable
from typing import Any

import torch
from torch.utils._pytree import tree_leaves

import lens_widget as lw
from model_zoo import BENCH_MODELS, ZooCase

from .measure import median, run_section, timed

TARGET = 1.6


def loss_of(output: Any) -> torch.Tensor:
    first = next(t for t in tree_leaves(output) if isinstance(t, torch.Tensor))
    return first.float().pow(2).mean()


def _clear(case: ZooCase) -> None:
    for p in case.model.parameters():
        p.grad = None
    gc.collect()  # a contender's garbage (TorchLens' logs are cyclic) must not cost the next


def plain(case: ZooCase) -> Any:
    loss_of(case.model(*case.args, **case.kwargs)).backward()


def traced(case: ZooCase) -> Any:
    return lw.trace(case.model, case.args, case.kwargs, save="all", backward=loss_of)


def torchlens_available() -> str | None:
    try:
        import torchlens  # noqa: F401
    except Exception as err:
        return f"{type(err).__name__}: {err}"
    return None


def torchlens_step(case: ZooCase) -> Any:
    import torchlens
    from torchlens.backends.torch.wrappers import unwrap_torch
    from torchlens.options import CaptureOptions

    capture = CaptureOptions(layers_to_save="all", save_grads=True)
    try:
        trace = torchlens.trace(case.model, list(case.args), dict(case.kwargs), capture=capture)
        # The logged first output is in the graph: the loss on it backpropagates the model.
        trace.log_backward(loss_of(trace[trace.output_layers[0]].out))
    finally:
        unwrap_torch()  # its torch wrappers would slow every other contender
    return trace


def bench_model(name: str, size: str, rounds: int, log: Callable[[str], None]) -> dict[str, Any]:
    case = BENCH_MODELS[name](size)  # type: ignore[arg-type]
    case.model.train()
    contenders: dict[str, Callable[[ZooCase], Any]] = {"plain": plain, "lw": traced}
    row: dict[str, Any] = {"model": name, "size": case.description}
    why = torchlens_available()
    if why is None:
        contenders["torchlens"] = torchlens_step
    else:
        row["torchlens_unavailable"] = why
    times: dict[str, list[float]] = {k: [] for k in contenders}
    for key, step in list(contenders.items()):  # warm-up
        _clear(case)
        try:
            timed(lambda step=step: step(case))
        except Exception as err:  # a contender that cannot run this model
            row[f"{key}_error"] = f"{type(err).__name__}: {err}"[:300]
            log(f"  {name}: {key} FAILED {row[f'{key}_error']}")
            del contenders[key], times[key]
    keys = list(contenders)
    for r in range(rounds):
        for key in keys[r % len(keys) :] + keys[: r % len(keys)]:
            _clear(case)
            seconds, result = timed(lambda key=key: contenders[key](case))
            del result
            times[key].append(seconds)
    for key, values in times.items():
        row[f"{key}_ms"] = median(values) * 1e3
    for key in keys:
        if key != "plain":
            row[f"{key}_ratio"] = row[f"{key}_ms"] / row["plain_ms"]
    nan = float("nan")
    log(
        f"  {name:10s} plain {row['plain_ms']:8.1f} ms   lw x{row.get('lw_ratio', nan):5.2f}"
        f"   torchlens x{row.get('torchlens_ratio', nan):6.2f}"
    )
    return row


def bench_backward(
    quick: bool, rounds: int | None = None, models: list[str] | None = None, log: Any = print
) -> dict[str, Any]:
    """The rows (one per model) and the medians over models of lw / plain and torchlens /
    plain; `bench.run` reports them as its "training step" section."""
    size = "tiny" if quick else "bench"
    rounds = rounds or (3 if quick else 7)
    torch.manual_seed(0)
    log(f"forward+backward, save='all' + gradients, {size} models, {rounds} rounds")
    rows = [bench_model(name, size, rounds, log) for name in models or list(BENCH_MODELS)]
    summary: dict[str, Any] = {"rows": rows, "target": TARGET, "rounds": rounds}
    for key in ("lw", "torchlens"):
        ratios = [row[f"{key}_ratio"] for row in rows if f"{key}_ratio" in row]
        summary[f"{key}_median_ratio"] = statistics.median(ratios) if ratios else None
    lw_ratio, tl_ratio = summary["lw_median_ratio"], summary["torchlens_median_ratio"]
    log(
        "forward+backward trace(save='all', grads) / untraced forward+backward: "
        f"median x{lw_ratio:.2f} (target <= {TARGET}x)"
        + (f"; TorchLens save_grads x{tl_ratio:.2f}" if tl_ratio is not None else "")
    )
    return summary


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny models, 3 rounds")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--models", nargs="*", default=list(BENCH_MODELS))
    return run_section(parser, lambda a: bench_backward(a.quick, a.rounds, a.models), argv)


if __name__ == "__main__":
    main()
