"""One rank of the distributed tests (run by dist_ranks.run_ranks): for each engine and
model, an untraced distributed step, the same step traced, and the model traced on one
process; the checks' results go to ``<out>/rank<r>.json`` (case -> list of failures).

Every rank runs the same cases in the same order (their collectives must match); a case
that raises is a failure of that case, and the next one runs.
"""

from __future__ import annotations

import contextlib
import json
import sys
import traceback
import warnings
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

import lens_widget as lw
from model_zoo.distributed import DISTRIBUTED_MODELS, local_tensor, wrap_engine


def step(model: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> torch.Tensor:
    out = model(*args, **kwargs)
    loss = out.loss if hasattr(out, "loss") else out.pow(2).mean()
    loss.backward()
    return out.logits if hasattr(out, "logits") else out


def inputs(engine: str, name: str) -> tuple[tuple[Any, ...], dict[str, Any]]:
    case = DISTRIBUTED_MODELS[name]()
    args = case.args
    if engine != "tp" and name == "mlp3":  # data parallel: each rank its own batch
        args = (args[0] * (1 + dist.get_rank()),)
    return args, case.kwargs


def model_ops(log: lw.ModelLog) -> list[tuple[str, str, str]]:
    return [(o.func, o.label, o.module) for o in log.ops if o.label not in log.collectives]


def check(case: str, name: str) -> list[str]:
    """`case`: the engine ("ddp", "fsdp", "tp"); "+accum" runs two micro-batches (two
    forwards and backwards: the engine accumulates gradients in place), "+nosync" too, the
    first under DDP's ``no_sync`` (no all-reduce)."""
    engine, _, extra = case.partition("+")
    steps = range(2 if extra else 1)

    def micro_step(model: nn.Module, i: int) -> torch.Tensor:
        no_sync = getattr(model, "no_sync", None)
        skip = extra == "nosync" and i == 0 and no_sync is not None
        with no_sync() if skip else contextlib.nullcontext():  # pyright: ignore[reportOptionalCall]
            return step(model, args, kwargs)  # one line for every model: the same labels

    failures: list[str] = []
    args, kwargs = inputs(engine, name)
    plain = DISTRIBUTED_MODELS[name]().model
    with lw.tracing(plain, grads=True) as ref:
        for i in steps:
            micro_step(plain, i)
    full_shapes = {n: tuple(p.shape) for n, p in plain.named_parameters()}

    untraced = wrap_engine(engine, DISTRIBUTED_MODELS[name]().model)
    out_plain = out = torch.empty(0)
    for i in steps:
        out_plain = micro_step(untraced, i)
    model = wrap_engine(engine, DISTRIBUTED_MODELS[name]().model)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with lw.tracing(model, grads=True) as t:
            for i in steps:
                out = micro_step(model, i)
    log = t.log
    failures += [f"warning: {w.message}" for w in caught if "lens_widget" in str(w.message)]

    if (log.rank, log.world_size) != (dist.get_rank(), dist.get_world_size()):
        failures.append(f"rank/world_size {log.rank}/{log.world_size}")
    if model_ops(log) != model_ops(ref.log):
        failures.append(f"model ops differ: {model_ops(log)[:12]} vs {model_ops(ref.log)[:12]}")
    kinds = {(c.kind, c.phase, c.engine) for c in log.collectives.values()}
    expected = {
        "ddp": ("all_reduce", "backward", "ddp"),
        "fsdp": ("all_gather_into_tensor", "forward", "fsdp"),
        "tp": ("all_reduce", "forward", "dtensor"),
    }[engine]
    if expected not in kinds:
        failures.append(f"no {expected} collective in {kinds}")
    if engine == "ddp":  # one all-reduce per bucket per synchronised backward
        n_buckets = len(model.reducer._get_zeros_like_grad_buckets())  # pyright: ignore[reportAttributeAccessIssue, reportCallIssue]
        synced = len(steps) - (extra == "nosync")
        n_ddp = sum(c.engine == "ddp" for c in log.collectives.values())
        if n_ddp != n_buckets * synced:
            failures.append(f"{n_ddp} DDP all-reduces for {n_buckets} buckets x {synced}")
    if engine == "fsdp" and ("reduce_scatter_tensor", "backward", "fsdp") not in kinds:
        failures.append(f"no backward reduce-scatter in {kinds}")
    if engine in ("fsdp", "ddp"):  # each parameter moved by some collective of its engine
        moved = {p for c in log.collectives.values() for p in c.params}
        if moved != set(full_shapes):
            failures.append(f"collectives moved {sorted(moved)[:6]}, not every parameter")
    for label, info in log.collectives.items():
        if info.group_ranks != tuple(range(dist.get_world_size())) or info.nbytes <= 0:
            failures.append(f"collective {label}: {info}")
        if log[label].kind != "op":
            failures.append(f"collective {label} is no op of the log")
    if engine == "tp" and not any(log[label].parents for label in log.collectives):
        failures.append("no collective has a parent in the graph")
    if any(c.func in ("all_gather_copy_in", "split_with_sizes_copy", "view_as") for c in log.ops):
        failures.append("engine bookkeeping among the ops")
    if engine != "ddp" and not log.engine_calls:
        failures.append("no engine calls recorded")
    for param, shape in full_shapes.items():
        node = next((n for n in log.nodes if n.label == param), None)
        if node is None or node.kind != "param" or tuple(node.shape or ()) != shape:
            failures.append(f"param {param}: {node and (node.kind, node.shape)} vs {shape}")
            break
    if engine in ("fsdp", "tp"):
        sharded = {n: p for n, p in log.placements.items() if "Shard" in "".join(p.placements)}
        if not sharded:
            failures.append(f"no sharded placements: {log.placements}")
        for n, p in sharded.items():
            if p.full_shape != full_shapes[n] or p.full_shape == p.local_shape:
                failures.append(f"placement {n}: {p}")
            if p.mesh_shape != (dist.get_world_size(),):
                failures.append(f"placement mesh {n}: {p}")

    # The log's gradient of each parameter is what ParamPlacement.grad says: FSDP2 and DDP,
    # the full gradient before the engine reduces it (this rank's, as on one process);
    # tensor parallel, this rank's local tensor of the DTensor gradient.
    untraced_grads = dict(untraced.named_parameters())
    for param, leaf in ref.log.leaves.items():
        if leaf.kind != "param" or param not in log.leaves:
            continue
        got = log.leaves[param].grad
        want = leaf.grad if engine != "tp" else local_tensor(untraced_grads[param].grad)  # pyright: ignore[reportArgumentType]
        if got is None or want is None or not torch.equal(got, want):
            failures.append(f"leaf gradient of {param} ({log.placements.get(param)})")
            break
    try:  # saved values are those the ops made: each op replays to its saved output
        report = log.validate()
        if report.checked == 0:
            failures.append(f"validate replayed nothing: {report}")
    except Exception as err:  # noqa: BLE001 - reported as a failure of this case
        failures.append(f"validate: {str(err)[:300]}")
    if not torch.equal(local_tensor(out), local_tensor(out_plain)):
        failures.append("traced output differs from the untraced step's")
    for (n, p), (_, q) in zip(model.named_parameters(), untraced.named_parameters(), strict=True):
        if (p.grad is None) != (q.grad is None) or (
            p.grad is not None and not torch.equal(local_tensor(p.grad), local_tensor(q.grad))  # pyright: ignore[reportArgumentType]
        ):
            failures.append(f"grad of {n} differs from the untraced step's")
            break
    return failures


def swapped_functions() -> tuple[object, ...]:
    """The functions a distributed trace swaps while it runs, as they are now."""
    import torch.distributed._functional_collectives as funcol
    import torch.distributed.distributed_c10d as c10d
    from torch.distributed.fsdp._fully_shard._fsdp_param import FSDPParam
    from torch.distributed.tensor import _collective_utils

    return (
        dist.all_reduce, c10d.all_gather_into_tensor, c10d.reduce_scatter_tensor,
        dist.broadcast, getattr(_collective_utils, "broadcast"), funcol.all_reduce,  # noqa: B009
        # (newer torch only: torch 2.11 has neither)
        getattr(funcol, "all_gather_single", None), getattr(funcol, "reduce_scatter_single", None),
        FSDPParam.__dict__["free_unsharded_param"], nn.Module.__dict__["_call_impl"],
        nn.Module.__dict__["_call_impl"].__code__,  # given the stand-in's while traced
    )  # fmt: skip


def check_world_restored(name: str) -> list[str]:
    """A traced FSDP2 step that raises after its backward, then lw.trace of a DDP model:
    every function the trace swapped is the same object afterwards, and nothing stays on
    the mode stack."""
    failures: list[str] = []
    before = swapped_functions()
    args, kwargs = inputs("fsdp", name)
    model = wrap_engine("fsdp", DISTRIBUTED_MODELS[name]().model)
    try:
        with lw.tracing(model, grads=True):
            step(model, args, kwargs)
            raise KeyError("the step fails")
    except KeyError as err:
        partial = lw.partial_log(err)
        if partial is None or partial.rank != dist.get_rank() or not partial.collectives:
            failures.append("the partial log lacks its rank or collectives")
    after = swapped_functions()
    failures += [f"not put back: {a!r}" for a, b in zip(before, after, strict=True) if a is not b]
    if torch._C._len_torch_function_stack():
        failures.append("a mode stayed on the stack")

    plain = DISTRIBUTED_MODELS[name]().model
    ddp = wrap_engine("ddp", DISTRIBUTED_MODELS[name]().model)
    x = args[0]
    ref = lw.trace(plain, x, backward=lambda y: y.pow(2).mean())
    log = lw.trace(ddp, x, backward=lambda y: y.pow(2).mean())
    if model_ops(log) != model_ops(ref) or not log.collectives:
        failures.append(f"lw.trace of DDP: {model_ops(log)} vs {model_ops(ref)}")
    return failures


def check_user_collectives(name: str) -> list[str]:
    """The user's own collectives in a traced block: c10d calls and a functional
    collective are ops with their kind, group, bytes and parents; results as untraced."""
    import torch.distributed._functional_collectives as funcol

    def block(x: torch.Tensor) -> torch.Tensor:
        y = x * 2
        dist.all_reduce(y)
        gathered = torch.empty(2 * y.numel())
        dist.all_gather_into_tensor(gathered, y)
        dist.broadcast(gathered, src=0)
        z = funcol.all_reduce(gathered + 1, "sum", list(range(dist.get_world_size())))
        return z * 3

    x = torch.arange(4.0) + dist.get_rank()
    expected = block(x)
    got = torch.empty(0)
    with lw.tracing() as t:
        got = block(x)
    log = t.log
    failures: list[str] = []
    if not torch.equal(got, expected):
        failures.append("traced result differs")
    kinds = [(c.kind, c.nbytes, c.engine, c.group_ranks) for c in log.collectives.values()]
    world = tuple(range(dist.get_world_size()))
    want = [
        ("all_reduce", 16, "", world), ("all_gather_into_tensor", 16, "", world),
        ("broadcast", 32, "", world), ("all_reduce", 32, "", world),
    ]  # fmt: skip
    if kinds != want:
        failures.append(f"collectives {kinds}")
    labels = list(log.collectives)
    if labels and log[labels[0]].parents != ["mul_1_1"]:
        failures.append(f"all_reduce's parents {log[labels[0]].parents}")
    saved = log[labels[0]].activations if labels else None
    ranks = range(dist.get_world_size())
    reduced = torch.stack([2 * (torch.arange(4.0) + r) for r in ranks]).sum(0)  # all_reduce
    if saved is None or not torch.equal(saved[0], reduced):
        failures.append(f"all_reduce's saved value {saved}")
    last = next(o for o in reversed(log.ops) if o.func == "mul")
    if not set(last.parents) & set(labels):
        failures.append(f"the op after the functional all_reduce reads {last.parents}")
    return failures


def check_implicit_redistribution(name: str) -> list[str]:
    """A DTensor op that needs its inputs redistributed (a matmul of two row-sharded
    DTensors all-gathers one) runs the collective inside DTensor's dispatch, where no mode
    sees it: it is a collective of the log all the same, and the result is as untraced."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Shard, distribute_tensor

    mesh = init_device_mesh("cpu", (dist.get_world_size(),))
    a = distribute_tensor(torch.arange(16.0).reshape(4, 4), mesh, [Shard(0)])
    b = distribute_tensor(torch.arange(16.0).reshape(4, 4) / 7, mesh, [Shard(0)])
    expected = local_tensor(a @ b)
    c = torch.empty(0)
    with lw.tracing() as t:
        c = a @ b
    log = t.log
    failures: list[str] = []
    if not torch.equal(local_tensor(c), expected):
        failures.append("traced result differs")
    found = [(i.kind, i.engine, i.group_ranks) for i in log.collectives.values()]
    world = tuple(range(dist.get_world_size()))
    if ("all_gather_into_tensor", "dtensor", world) not in found:
        failures.append(f"no all-gather of the redistribution in {found}")
    if [o.func for o in log.ops if o.label not in log.collectives] != ["matmul"]:
        failures.append(f"model ops {[o.func for o in log.ops]}")
    return failures


def check_optimizer_phase(name: str) -> list[str]:
    """An FSDP2 step with gradient clipping and the optimizer in the traced block: the
    clipping's all-reduce of the norm (DTensor's, inside its dispatch) is a collective of
    phase "optimizer", and the parameters after the step are those of an untraced step."""
    args, kwargs = inputs("fsdp", name)

    def train_step(model: nn.Module) -> None:
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        step(model, args, kwargs)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        opt.step()

    untraced = wrap_engine("fsdp", DISTRIBUTED_MODELS[name]().model)
    train_step(untraced)
    model = wrap_engine("fsdp", DISTRIBUTED_MODELS[name]().model)
    with lw.tracing(model, grads=True) as t:
        train_step(model)
    failures: list[str] = []
    found = {(c.kind, c.phase, c.engine) for c in t.log.collectives.values()}
    if ("all_reduce", "optimizer", "dtensor") not in found:
        failures.append(f"no optimizer-phase all-reduce in {found}")
    for (n, p), q in zip(model.named_parameters(), untraced.parameters(), strict=True):
        if not torch.equal(local_tensor(p.detach()), local_tensor(q.detach())):
            failures.append(f"{n} after the step differs from the untraced step's")
            break
    return failures


def main() -> None:
    out_dir = Path(sys.argv[1])
    cases = [c.split(":") for c in sys.argv[2:]]
    dist.init_process_group("gloo")
    results: dict[str, list[str]] = {}
    try:
        for engine, name in cases:
            try:
                checked = {
                    "restore": check_world_restored,
                    "user": check_user_collectives,
                    "implicit": check_implicit_redistribution,
                    "optim": check_optimizer_phase,
                }.get(engine)
                results[f"{engine}:{name}"] = (
                    checked(name) if checked is not None else check(engine, name)
                )
            except Exception:  # noqa: BLE001 - reported as this case's failure
                results[f"{engine}:{name}"] = [traceback.format_exc(limit=-6)]
    finally:
        (out_dir / f"rank{dist.get_rank()}.json").write_text(json.dumps(results))
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
