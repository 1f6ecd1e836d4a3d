"""log.save(path): a directory with log.json (every record, module and field of the log,
and a traced backward's leaves, passes and autograd graph) and tensors.safetensors (every
saved tensor and gradient, each storage once). docs/log-format.md."""

from __future__ import annotations

import json
import os
import shutil
import uuid
from pathlib import Path
from typing import Any, Protocol

import networkx as nx
import torch
from safetensors.torch import save_file

from lens_widget.log.disk_values import DiskValues, ShardFile
from lens_widget.log.gradients import BackwardPass, LeafRecord, Recomputation
from lens_widget.log.records import ModuleInfo, OpRecord
from lens_widget.log.replay import ReplayCall
from lens_widget.store.distributed import HasDistributed, encode_distributed
from lens_widget.store.format import (
    DISTRIBUTED_VERSION,
    FORMAT_NAME,
    FUNCTION_VERSION,
    JSON_FILE,
    NESTED_VERSION,
    TENSOR_FILE,
    TRANSFORM_NOTE_VERSION,
)
from lens_widget.store.tensor_table import TensorTable
from lens_widget.store.torch_functions import describe_function, function_name
from lens_widget.store.training_step import encode_training_step
from lens_widget.store.values_codec import Unencodable, dtype_name, encode_output, encode_value

_SOURCES_OF_WEIGHTS = ("param", "buffer")


class SavableLog(HasDistributed, Protocol):
    """What a save reads of a ModelLog (taken as parts: ModelLog imports this module); its
    fields for torch.distributed are HasDistributed's."""

    model_class: str
    nodes: list[OpRecord]
    modules: dict[str, ModuleInfo]
    output: Any
    error: BaseException | None
    failed_op: str | None
    elapsed: float
    n_params: int
    param_bytes: int
    leaves: dict[str, LeafRecord]
    backward_passes: list[BackwardPass]
    backward_graph: nx.DiGraph
    recomputed: list[Recomputation]
    disk_values: DiskValues | None
    notes: list[str]


def save_log(log: SavableLog, path: str | os.PathLike[str], *, weights: bool = True) -> Path:
    """Write `log` into the directory `path` (created; a previous save there is replaced)."""
    directory = Path(path)
    disk = log.disk_values
    _prepare(directory, {f.path.name for f in disk.shards} if disk is not None else set())
    table = TensorTable(log.disk_values)
    distributed = encode_distributed(log)
    document: dict[str, Any] = {
        "format": FORMAT_NAME,
        "version": 0,  # the oldest that reads what is written: set below
        "save_id": uuid.uuid4().hex,
        "created_by": f"lens_widget (torch {torch.__version__})",
        "tensor_file": TENSOR_FILE,
        "log": {
            "model_class": log.model_class,
            "elapsed": log.elapsed,
            "n_params": log.n_params,
            "param_bytes": log.param_bytes,
            "failed_op": log.failed_op,
            "error": _error(log.error),
            "output": encode_output(log.output, lambda t: table.add(t, "the model's output")),
            **({"notes": list(log.notes)} if log.notes else {}),
        },
        "modules": [
            {
                "address": info.address,
                "class_name": info.class_name,
                "parent": info.parent,
                "n_passes": info.n_passes,
                "n_ops": info.n_ops,
                "outputs": [
                    [pass_index, list(labels)] for pass_index, labels in info.outputs.items()
                ],
                "output_leaves": [
                    [pass_index, [list(leaf) for leaf in info.output_leaves_of(pass_index)]]
                    for pass_index in info.outputs
                ],
            }
            for info in log.modules.values()
        ],
        "nodes": [_node(node, table, weights) for node in log.nodes],
    }
    document["version"] = version = _version(log, document["nodes"], distributed is not None)
    backward = encode_training_step(log, table)
    if backward is not None:
        document["backward"] = backward
    if distributed is not None:
        document["distributed"] = distributed
    to_write, document["storages"], shards = table.storages()
    document["tensors"] = table.views
    if shards:
        document["tensor_files"] = [{"name": f.path.name, "id": f.id} for f in shards]
    previous = _files_of_values(directory)
    metadata = {
        "format": FORMAT_NAME,
        "version": str(version),
        "save_id": document["save_id"],
    }
    # Written beside the old files, then renamed over them: a reader sees one save or the other.
    tensor_tmp = directory / f".{TENSOR_FILE}.tmp"
    json_tmp = directory / f".{JSON_FILE}.tmp"
    try:
        for shard in shards:
            _link(shard, directory)
            if disk is not None and shard.path.parent.resolve() == directory.resolve():
                disk.keep(shard.path)  # saved into the offload directory: part of the save
        save_file(to_write, str(tensor_tmp), metadata=metadata)
        json_tmp.write_text(json.dumps(document, separators=(",", ":"), allow_nan=False), "utf-8")
        os.replace(tensor_tmp, directory / TENSOR_FILE)
        os.replace(json_tmp, directory / JSON_FILE)
    finally:
        tensor_tmp.unlink(missing_ok=True)
        json_tmp.unlink(missing_ok=True)
    for name in previous - {f.path.name for f in shards}:  # the replaced save's own files
        (directory / name).unlink(missing_ok=True)
    return directory


def _link(shard: ShardFile, directory: Path) -> None:
    """The shard in `directory` under its own name: a hard link (no bytes copied), or a
    copy where the file system refuses one (another device)."""
    target = directory / shard.path.name
    if target.exists() and os.path.samefile(target, shard.path):
        return  # saved into the offload directory itself, or linked by an earlier save
    partial = directory / f".{shard.path.name}.tmp"
    partial.unlink(missing_ok=True)
    try:
        os.link(shard.path, partial)
    except OSError:
        shutil.copyfile(shard.path, partial)
    os.replace(partial, target)


def _files_of_values(directory: Path) -> set[str]:
    """The files of values a previous save in `directory` named (replaced with it)."""
    try:
        document = json.loads((directory / JSON_FILE).read_bytes())
        return {
            str(f["name"]) for f in document.get("tensor_files", ()) if "/" not in str(f["name"])
        }
    except (OSError, ValueError, TypeError, KeyError):
        return set()


def _prepare(directory: Path, own_files: set[str]) -> None:
    """Refuse a directory that holds anything but a previous save or the log's own files of
    values (saved into its offload directory)."""
    if directory.exists() and not directory.is_dir():
        raise FileExistsError(f"{directory} is a file; a saved log is a directory")
    if directory.is_dir():
        entries = {p.name for p in directory.iterdir()} - own_files
        if entries and JSON_FILE not in entries:
            raise FileExistsError(
                f"{directory} exists and is not a saved lens_widget log; pick a new or empty "
                "directory (a previous save is replaced, nothing else is)"
            )
    directory.mkdir(parents=True, exist_ok=True)


def _error(error: BaseException | None) -> dict[str, str] | None:
    if error is None:
        return None
    return {"type": type(error).__name__, "message": str(error)}


def _node(node: OpRecord, table: TensorTable, weights: bool) -> dict[str, Any]:
    activations = node.activations
    if not weights and node.kind in _SOURCES_OF_WEIGHTS:
        activations = None
    return {
        "label": node.label,
        "kind": node.kind,
        "func": node.func,
        "index": node.index,
        "layer": node.layer,
        "pass_index": node.pass_index,
        "n_passes": node.n_passes,
        "module": node.module,
        "module_stack": [[address, pass_index] for address, pass_index in node.module_stack],
        **({"function": node.function} if node.function else {}),
        "shape": list(node.shape) if node.shape is not None else None,
        "dtype": node.dtype,
        "device": node.device,
        "nbytes": node.nbytes,
        "shapes": [list(shape) for shape in node.shapes],
        "params": [{"name": p.name, "shape": list(p.shape), "numel": p.numel} for p in node.params],
        "parents": list(node.parents),
        "parent_args": [
            {"parent": a.parent, "position": a.position, "output_index": a.output_index}
            for a in node.parent_args
        ],
        "children": list(node.children),
        "from_input": node.from_input,
        "feeds_output": node.feeds_output,
        "source": node.source,
        "source_code": node.source_code,
        "inplace": node.inplace,
        "failed": node.failed,
        "error": node.error,
        "requires_grad": node.requires_grad,
        "time_ms": node.time_ms,
        "intervened": node.intervened,
        **(
            {"nested_shapes": [None if s is None else [list(x) for x in s] for s in nested]}
            if (nested := node.nested_shapes) is not None
            else {}
        ),
        "activations": None
        if activations is None
        else [table.add(t, f"output {i} of {node.label}") for i, t in enumerate(activations)],
        "replay": _replay(node, table) if node.kind == "op" else None,
        "grads": None
        if node.grads is None
        else [
            None if g is None else table.add(g, f"gradient {i} of {node.label}")
            for i, g in enumerate(node.grads)
        ],
    }


def _version(log: SavableLog, nodes: list[dict[str, Any]], distributed: bool) -> int:
    """The oldest format version whose readers read what was written: a log made outside
    torch.distributed stays readable by readers of version 3, one without function groups by
    those of version 4, and so on."""
    replays = [n["replay"] for n in nodes if n.get("replay")]
    if any("unavailable" in r and "in_transform" in r for r in replays):
        return TRANSFORM_NOTE_VERSION
    if log.notes or any(node.nested_shapes is not None for node in log.nodes):
        return NESTED_VERSION
    if any(node.function for node in log.nodes):
        return FUNCTION_VERSION
    return DISTRIBUTED_VERSION if distributed else DISTRIBUTED_VERSION - 1


def _replay(node: OpRecord, table: TensorTable) -> dict[str, Any] | None:
    """The op's call as data: function name, argument templates, tensors no node holds; and
    whether it ran inside a torch.func transform, also where it cannot be replayed (what
    `no_values` says after loading)."""
    if node.replay is None or node.replay[0] is None:
        return None
    call = node.replay[0]
    data = _call_data(node, call, table)
    if call.in_transform:  # its values were batched or traced: none kept, none to ask for
        data["in_transform"] = True
    return data


def _call_data(node: OpRecord, call: ReplayCall, table: TensorTable) -> dict[str, Any]:
    if call.unavailable is not None:  # a loaded log's op that could not be resolved
        return {"unavailable": call.unavailable}
    name = function_name(call.func)
    if name is None:
        shown = describe_function(call.func)
        return {
            "func": shown,
            "unavailable": f"calls {shown}, which is not a torch function a loaded log replays",
        }
    if call.cuda_rng_states is not None and (node.device or "").startswith("cuda"):
        # Its draws came from a CUDA generator; a loaded log replays on the CPU.
        return {
            "func": name,
            "unavailable": "drew random numbers on CUDA; a loaded log is on the CPU",
        }
    try:
        args = encode_value(call.args)
        kwargs = {key: encode_value(value) for key, value in call.kwargs.items()}
    except Unencodable as err:
        return {"func": name, "unavailable": f"an argument of type {err} is not saved"}
    literals = {
        str(slot): table.add(tensor, f"an input of {node.label}")
        for slot, tensor in call.literals.items()
    }
    rng = call.rng_state
    data = {
        "func": name,
        "args": args,
        "kwargs": kwargs,
        "literals": literals,
        "rng_state": None if rng is None else table.add(rng, f"the RNG state of {node.label}"),
    }
    if call.autocast:  # validate() replays the op under the same autocast
        data["autocast"] = [[device, dtype_name(dtype)] for device, dtype in call.autocast]
    if call.written_slots:  # returned None; its outputs are these written arguments
        data["written_slots"] = list(call.written_slots)
    return data
