"""Per-op cost of `lens_widget.trace` on real models, the sizes of issue #27.

    python -m bench.real_per_op [--models gpt2,bert,llama,resnet] [--rounds 15]
                                [--baseline REV] [--size issue|bench] [--floors]

Models (random weights, eval, `torch.no_grad()`, one thread): GPT-2 of 6 layers, d=384, seq
128; BERT (bare encoder) of 4 layers, d=256, seq 128 with an attention mask; Llama of 4
layers, d=256 (4 query / 2 kv heads, SwiGLU 688, vocab 32k), seq 128; ResNet-50 on one 64x64
image (`--size bench`: the zoo's bench sizes instead: GPT-2 small, bert-base, a 4-layer
d=768 Llama, ResNet-50 at 224x224).

Per model, in µs per recorded op above a plain forward (CPU time of this process: on a busy
machine wall time counts the waits for a core), median and min of interleaved rounds, each
after `gc.collect()`: the bare floor (a TorchFunctionMode that only forwards each call), the
floor keeping every output, the rows floor (a mode keeping one row per op of what a record
is made of and the output: `bench.tracers.KeepRows`, below which no tracer recording each op
in Python goes), the log-rows floor for `save=None` and `save="all"` (the rows floor plus
what this log cannot rebuild after the pass, each the cheapest way: module stack, call paths,
source rows, replay templates, input versions, and the walk that names the model's
modules, parameters and buffers, once per trace; `bench.tracers.KeepLogRows`: the floor of
the rows-then-records design), `trace(save=None)`, `trace(save="all")`, and `trace(save=None)`
with the first read of its records (`log.nodes`), which fills their links, source lines and output
metadata (lens_widget/log/filled_on_read.py). Each also ÷ the rows floor's, with a 95%
bootstrap interval over rounds (`bench.measure.paired_ratio`): issue #37's measure, and
where its 1.5x sits against this run's noise.

`--baseline REV` also times the lens_widget of git revision REV in the same process (its
package is extracted to a temporary directory and imported as `lens_widget_baseline`; the
working tree's is copied and imported as `lens_widget_current` the same way, so that the two
sides differ in their code alone), in
the same rounds, and checks first that both versions make the same log (every record field,
saved values and modules): the before/after figures of a change, measured alike. Each
trace's change against the baseline's is printed as the median of their difference by round
with a 95% bootstrap interval (`bench.measure.paired_change`): an interval holding 0 is a
change this run cannot tell from the noise.

Kernels push the tracer's Python objects out of the CPU caches between ops, so the per-op
figure of a real model is two to three times that of `bench.per_op`'s tiny-op loop. The
allocator adds noise to `save="all"` (keeping outputs alive changes which memory later
allocations get): the run re-executes itself with glibc's thresholds fixed
(`bench.measure.with_fixed_allocator`), and the mins are printed too.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable
from io import BytesIO
from pathlib import Path
from types import ModuleType
from typing import Any

import torch
import transformers
from torch.overrides import TorchFunctionMode

import lens_widget as lw
from model_zoo import BENCH_MODELS
from model_zoo.case import ZooCase, build, generator

from .measure import (
    interleaved_cpu_times,
    paired_change,
    paired_ratio,
    per_op_above,
    with_fixed_allocator,
)
from .tracers import KeepLogRows, KeepOutputs, KeepRows

SEQ = 128
ROWS_FLOOR = "rows floor (a row per op, kept)"
ROOT = Path(__file__).resolve().parent.parent


def _ids(vocab: int) -> torch.Tensor:
    return torch.randint(0, vocab, (1, SEQ), generator=generator(1))


def gpt2() -> ZooCase:
    cfg = transformers.GPT2Config(n_layer=6, n_embd=384, n_head=6)
    return ZooCase("gpt2", build(lambda: transformers.GPT2LMHeadModel(cfg)), (_ids(50257),))


def bert() -> ZooCase:
    cfg = transformers.BertConfig(
        hidden_size=256, num_hidden_layers=4, num_attention_heads=4, intermediate_size=1024
    )
    mask = torch.ones(1, SEQ, dtype=torch.long)
    model = build(lambda: transformers.BertModel(cfg))
    return ZooCase("bert", model, (_ids(cfg.vocab_size),), {"attention_mask": mask})


def llama() -> ZooCase:
    cfg = transformers.LlamaConfig(
        vocab_size=32000, hidden_size=256, num_hidden_layers=4, num_attention_heads=4,
        num_key_value_heads=2, intermediate_size=688,
    )  # fmt: skip
    return ZooCase("llama", build(lambda: transformers.LlamaForCausalLM(cfg)), (_ids(32000),))


def resnet() -> ZooCase:
    model = build(lambda: transformers.ResNetModel(transformers.ResNetConfig()))
    return ZooCase("resnet", model, (torch.randn(1, 3, 64, 64, generator=generator(2)),))


MODELS: dict[str, Callable[[], ZooCase]] = {
    "gpt2": gpt2,
    "bert": bert,
    "llama": llama,
    "resnet": resnet,
}
_BENCH_NAMES = {"gpt2": "gpt2", "bert": "bert", "llama": "llama", "resnet": "resnet50"}


def model_case(name: str, size: str = "issue") -> ZooCase:
    case = MODELS[name]() if size == "issue" else BENCH_MODELS[_BENCH_NAMES[name]]("bench")
    case.model.eval()
    return case


class Forwarding(TorchFunctionMode):
    """The bare floor: sees every call and only forwards it."""

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        return func(*args, **kwargs) if kwargs else func(*args)


def package_copy(name: str, into: Path, rev: str | None = None) -> ModuleType:
    """lens_widget as of git revision `rev` (None: the working tree's files), copied into
    `into` and imported as `name`. `--baseline` times two such copies, so that both sides
    are imported the same way (from a fresh directory, by a name of their own)."""
    if rev is None:
        shutil.copytree(
            ROOT / "lens_widget", into / "lens_widget",
            ignore=shutil.ignore_patterns("__pycache__", "static"),
        )  # fmt: skip
    else:
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", rev, "lens_widget"],
            check=True, capture_output=True,
        ).stdout  # fmt: skip
        with tarfile.open(fileobj=BytesIO(archive)) as tar:
            tar.extractall(into, filter="data")
    package = into / name
    (into / "lens_widget").rename(package)
    for path in package.rglob("*.py"):
        text = path.read_text()
        text = text.replace("from lens_widget.", f"from {name}.")
        text = text.replace("from lens_widget import", f"from {name} import")
        text = text.replace("import lens_widget\n", f"import {name}\n")
        path.write_text(text)
    static = ROOT / "lens_widget" / "static"  # the built widget bundle: import needs it
    (package / "static").mkdir(exist_ok=True)
    for built in static.glob("*.js"):
        (package / "static" / built.name).write_bytes(built.read_bytes())
    sys.path.insert(0, str(into))
    return importlib.import_module(name)


def _template(value: Any) -> Any:
    """A replay template comparable across the two packages: slots as ("slot", index)."""
    if type(value).__name__ == "TensorSlot":
        return ("slot", value.index)
    if isinstance(value, (tuple, list)):
        return type(value)(_template(v) for v in value)
    if isinstance(value, dict):
        return {k: _template(v) for k, v in value.items()}
    return value


def _same_func(f: Any, g: Any) -> bool:
    """The same torch function, or the same function of two copies of lens_widget."""
    if f is g:
        return True
    name_f = getattr(f, "__module__", "") or ""
    name_g = getattr(g, "__module__", "") or ""
    return (
        name_f.startswith("lens_widget")
        and name_g.startswith("lens_widget")
        and name_f.partition(".")[2] == name_g.partition(".")[2]
        and f.__qualname__ == g.__qualname__
    )


def same_log(a: Any, b: Any) -> None:
    """Raise unless two logs hold the same records (every field set when made, saved values
    equal, the same replay calls and templates) and the same modules."""
    if len(a.nodes) != len(b.nodes):
        raise AssertionError(f"{len(a.nodes)} nodes != {len(b.nodes)}")
    for x, y in zip(a.nodes, b.nodes, strict=True):
        for f in dataclasses.fields(x):
            if not f.init or f.name in ("activations", "replay"):
                continue
            vx, vy = getattr(x, f.name), getattr(y, f.name)
            if f.name in ("parent_args", "params"):  # NamedTuples of two packages
                vx, vy = [tuple(v) for v in vx], [tuple(v) for v in vy]
            if vx != vy or type(vx) is not type(vy):
                raise AssertionError(f"{x.label}.{f.name}: {vx!r} != {vy!r}")
        if (x.activations is None) != (y.activations is None) or (
            x.activations is not None and not all(map(torch.equal, x.activations, y.activations))  # type: ignore[arg-type]
        ):
            raise AssertionError(f"{x.label}: saved values differ")
        if x.kind == "op":
            (call_x, refs_x), (call_y, refs_y) = x.replay, y.replay
            same = (
                _same_func(call_x.func, call_y.func)
                and _template(call_x.args) == _template(call_y.args)
                and _template(dict(call_x.kwargs)) == _template(dict(call_y.kwargs))
                and [(p, n.label, i) for p, n, i in refs_x]
                == [(p, n.label, i) for p, n, i in refs_y]
            )
            if not same:
                raise AssertionError(f"{x.label}: replay calls differ")
    modules_a = {k: dataclasses.asdict(v) for k, v in a.modules.items()}
    if modules_a != {k: dataclasses.asdict(v) for k, v in b.modules.items()}:
        raise AssertionError("modules differ")


def variants(
    case: ZooCase, baseline: ModuleType | None, floors: bool, current: ModuleType
) -> dict[str, Callable[[], Any]]:
    """What `measure` times, by name: the plain forward first, the floors, and each
    package's traces (the baseline's prefixed "baseline ")."""
    model, args, kwargs = case.model, case.args, case.kwargs

    def in_mode(make: Callable[[], TorchFunctionMode]) -> Callable[[], Any]:
        def run() -> Any:
            with make() as mode:
                model(*args, **kwargs)
            return mode

        return run

    runs: dict[str, Callable[[], Any]] = {"plain": lambda: model(*args, **kwargs)}
    if not floors:
        runs["floor (bare mode)"] = in_mode(Forwarding)
        runs["floor keeping outputs"] = in_mode(KeepOutputs)
    runs |= {
        ROWS_FLOOR: in_mode(lambda: KeepRows(keep_outputs=True)),
        "log-rows floor, save=None": in_mode(lambda: KeepLogRows(False, model)),
        "log-rows floor, save=all": in_mode(lambda: KeepLogRows(True, model)),
    }
    versions = {"": current} if baseline is None else {"baseline ": baseline, "": current}
    for prefix, package in versions.items():
        for save in (None, "all"):
            runs[f"{prefix}trace(save={save!r})"] = lambda p=package, s=save: p.trace(
                model, args, kwargs, save=s
            )
        # A plain trace fills its records on their first read: the trace and that read
        if not floors:
            runs[f"{prefix}trace(save=None), records read"] = lambda p=package: (
                p.trace(model, args, kwargs, save=None).nodes
            )
    return runs


def checked_ops(case: ZooCase, baseline: ModuleType | None, current: ModuleType) -> int:
    """How many ops a trace of `case` records, after checking (with a baseline) that both
    versions make the same log in both save modes."""
    model, args, kwargs = case.model, case.args, case.kwargs
    if baseline is not None:
        for save in (None, "all"):
            same_log(current.trace(model, args, kwargs, save=save),
                     baseline.trace(model, args, kwargs, save=save))  # fmt: skip
    return len(current.trace(model, args, kwargs, save=None).ops)


Interval = tuple[float, float, float]  # a median and its 95% interval


def measure(
    case: ZooCase,
    rounds: int,
    baseline: ModuleType | None = None,
    floors: bool = False,
    current: ModuleType = lw,
) -> tuple[int, float, dict[str, tuple[float, float]], dict[str, Interval], dict[str, Interval]]:
    """(ops, plain ms, {variant: (median, min) over rounds of µs/op above the same round's
    plain forward}, {variant: its cost ÷ the rows floor's, with a 95% interval},
    {each trace against the baseline's: (median, 95% interval) of their difference by round,
    µs/op}); one thread, CPU time. `floors`: only the rows and log-rows
    floors and the two traces (more rounds in the same time). `current`: the lens_widget
    timed as this revision (with a baseline, a copy imported as the baseline is)."""
    runs = variants(case, baseline, floors, current)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with torch.no_grad():
            n_ops = checked_ops(case, baseline, current)
            times = interleaved_cpu_times(runs, rounds)
    finally:
        torch.set_num_threads(threads)
    changes = {}
    if baseline is not None:  # this revision against the baseline, round by round
        for save in (None, "all"):
            name = f"trace(save={save!r})"
            changes[f"{name} - baseline"] = paired_change(times, n_ops, name, f"baseline {name}")
    ratios = {name: paired_ratio(times, name, ROWS_FLOOR) for name in times if name != "plain"}
    plain_ms = statistics.median(times["plain"]) * 1e3
    return n_ops, plain_ms, per_op_above(times, n_ops), ratios, changes


def main(argv: list[str] | None = None) -> None:
    with_fixed_allocator("bench.real_per_op", argv)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--size", choices=("issue", "bench"), default="issue")
    parser.add_argument("--baseline", metavar="REV", help="also time lens_widget at this rev")
    parser.add_argument(
        "--floors", action="store_true", help="only the rows floors and the two traces"
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        baseline = current = None
        if args.baseline:  # both sides copies, imported alike
            baseline = package_copy("lens_widget_baseline", Path(tmp) / "a", args.baseline)
            current = package_copy("lens_widget_current", Path(tmp) / "b")
        print(
            f"1 thread, CPU time, median (min) of {args.rounds} interleaved rounds; "
            "µs per recorded op above the same round's plain forward; x: ÷ the rows floor [95%]"
        )
        for name in args.models.split(","):
            case = model_case(name, args.size)
            n_ops, plain_ms, per_op, ratios, changes = measure(
                case, args.rounds, baseline, args.floors, current or lw
            )
            print(f"{name}: {n_ops} ops, plain forward {plain_ms:.1f} ms")
            for variant, (med, low) in per_op.items():
                ratio, below, above = ratios[variant]
                print(
                    f"  {variant:32s} {med:7.1f} ({low:.1f})  {ratio:.2f}x"
                    f" [{below:.2f}, {above:.2f}]"
                )
            for variant, (med, low, high) in changes.items():
                print(f"  {variant:32s} {med:+7.1f}  95% interval [{low:+.1f}, {high:+.1f}]")


if __name__ == "__main__":
    main()
