"""lens_widget.load(path): a saved log back as a ModelLog, without the model.

The file is untrusted: its JSON is checked against the schema, every reference (parents,
children, modules, tensors, argument slots) is checked before use, and a replay names its
function only through torch_functions' allow-list. Any problem is one LogFormatError.
Tensors stay memory-mapped: their bytes are read when first used.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch

from lens_widget.log.disk_values import SHARD_FORMAT, DiskEntry, DiskValues, ShardFile
from lens_widget.log.model_log import ModelLog
from lens_widget.log.records import ModuleInfo, OpRecord, OutputLeaf, ParamUse, ParentArg
from lens_widget.log.replay import ReplayCall, TensorSlot
from lens_widget.store.distributed import decode_distributed
from lens_widget.store.format import JSON_FILE, LogFormatError, fail
from lens_widget.store.schema import parse_document
from lens_widget.store.tensor_read import make_sparse, make_view, open_storages
from lens_widget.store.torch_functions import resolve_function
from lens_widget.store.training_step import decode_training_step
from lens_widget.store.values_codec import decode_value, dtype_from_name, dtype_name


class SavedError(Exception):
    """The exception a partial trace's forward pass raised, as saved: the class is
    recreated by name only (a subclass of this one), with the saved message."""


def load(path: str | os.PathLike[str]) -> ModelLog:
    """Open a log written by `ModelLog.save(path)`; no model or code from the file needed.

    Raises LogFormatError, naming the file and the problem, for a truncated, tampered,
    foreign or newer-version save. Tensors are on the CPU, read from disk on first use.
    """
    directory = Path(path)
    if not directory.exists():
        raise FileNotFoundError(f"no saved log at {directory}")
    if not directory.is_dir():
        raise LogFormatError(
            f"{directory}: a saved log is a directory (log.json + tensors.safetensors)"
        )
    json_path = directory / JSON_FILE
    if not json_path.is_file():
        raise fail(str(json_path), "missing; this directory is not a saved lens_widget log")
    document = parse_document(json_path.read_bytes(), JSON_FILE)
    storages, disk = _open_files(directory, document)
    tensors = _Tensors(storages, document["tensors"])
    modules = _modules(document["modules"])
    nodes_data = document["nodes"]
    nodes = [_node(i, data, tensors) for i, data in enumerate(nodes_data)]
    by_label = _index(nodes)
    for i, node in enumerate(nodes):
        where = _where(i, node.label)
        _check_links(node, by_label, modules, where)
        node.replay = _replay(nodes_data[i]["replay"], node, by_label, tensors, where)
    _check_module_outputs(modules, by_label)
    meta = document["log"]
    if meta["failed_op"] is not None and meta["failed_op"] not in by_label:
        raise fail(JSON_FILE, f"log.failed_op {meta['failed_op'][:80]!r} is not a node")
    step = decode_training_step(document.get("backward"), by_label, tensors.get)
    dist = decode_distributed(document.get("distributed"), by_label)
    return ModelLog(
        model_class=meta["model_class"],
        nodes=nodes,
        modules=modules,
        output=decode_value(meta["output"], f"{JSON_FILE}: log.output", tensors.get),
        error=_error(meta["error"]),
        failed_op=meta["failed_op"],
        elapsed=meta["elapsed"],
        n_params=meta["n_params"],
        param_bytes=meta["param_bytes"],
        leaves=step.leaves,
        backward_passes=step.backward_passes,
        backward_graph=step.backward_graph,
        recomputed=step.recomputed,
        disk_values=disk,
        rank=dist.rank,
        world_size=dist.world_size,
        collectives=dist.collectives,
        placements=dist.placements,
        engine_calls=dist.engine_calls,
        notes=list(meta.get("notes", [])),
        label_index=by_label,
    )


def _open_files(
    directory: Path, document: dict[str, Any]
) -> tuple[list[torch.Tensor], DiskValues | None]:
    """Every storage, mapped from the file that holds it: tensors.safetensors, or a file of
    values (``tensor_files``: an offloaded trace's shards, linked by the save). The files
    of values are remembered (DiskValues), so saving the loaded log links them again."""
    entries = document["storages"]
    files = document.get("tensor_files", [])
    main: list[int] = []
    by_file: dict[int, list[int]] = {}
    for i, entry in enumerate(entries):
        k = entry.get("file")
        if k is None:
            main.append(i)
        elif k < len(files):
            by_file.setdefault(k, []).append(i)
        else:
            raise fail(f"{JSON_FILE}: storages[{i}]", f"file {k}: log.json lists {len(files)}")
    storages: list[torch.Tensor] = [torch.empty(0, dtype=torch.uint8)] * len(entries)
    opened = open_storages(
        directory / document["tensor_file"], [entries[i] for i in main], document["save_id"]
    )
    for i, storage in zip(main, opened, strict=True):
        storages[i] = storage
    disk = DiskValues(directory)
    for k, members in by_file.items():
        shard = ShardFile(directory / files[k]["name"], files[k]["id"])
        disk.shards.append(shard)
        listed = [entries[i] for i in members]
        opened = open_storages(
            shard.path, listed, shard.id, format_name=SHARD_FORMAT, all_listed=False
        )
        for i, entry, storage in zip(members, listed, opened, strict=True):
            storages[i] = storage
            disk.add(storage, DiskEntry(
                shard, entry["name"], entry["dtype"], tuple(entry["shape"]), entry["nbytes"]
            ))  # fmt: skip
    return storages, disk if by_file else None


def _where(i: int, label: str) -> str:
    return f"{JSON_FILE}: nodes[{i}] ({label[:80]!r})"


class _Tensors:
    """Saved tensors by table index, each made once (a view on its mapped storage)."""

    def __init__(self, storages: list[torch.Tensor], views: list[dict[str, Any]]) -> None:
        self._storages = storages
        self._views = views
        self._made: dict[int, torch.Tensor] = {}

    def get(self, index: int, where: str) -> torch.Tensor:
        tensor = self._made.get(index)
        if tensor is None:
            if index >= len(self._views):
                raise fail(where, f"names tensor {index}; the log has {len(self._views)}")
            view = self._views[index]
            view_where = f"{JSON_FILE}: tensors[{index}]"
            if "sparse_coo" in view:
                named = view["sparse_coo"]
                if max(named) >= index:  # earlier entries only: none can name itself
                    raise fail(view_where, f"sparse_coo names {named}: only earlier entries")
                indices, values = (self.get(i, view_where) for i in named)
                tensor = make_sparse(indices, values, view, view_where)
            else:
                tensor = make_view(self._storages, view, view_where)
            self._made[index] = tensor
        return tensor


def _modules(data: list[dict[str, Any]]) -> dict[str, ModuleInfo]:
    modules: dict[str, ModuleInfo] = {}
    for i, entry in enumerate(data):
        address = entry["address"]
        if address in modules:
            raise fail(f"{JSON_FILE}: modules[{i}]", f"address {address[:80]!r} appears twice")
        outputs: dict[int, list[str]] = {}
        for pass_index, labels in entry["outputs"]:
            if pass_index in outputs:
                raise fail(f"{JSON_FILE}: modules[{i}]", f"outputs: pass {pass_index} twice")
            outputs[pass_index] = list(labels)
        leaves = {
            pass_index: [OutputLeaf(path, output) for path, output in pairs]
            for pass_index, pairs in entry.get("output_leaves", [])
        }
        modules[address] = ModuleInfo(
            address=address,
            class_name=entry["class_name"],
            parent=entry["parent"],
            n_passes=entry["n_passes"],
            n_ops=entry["n_ops"],
            outputs=outputs,
            output_leaves=leaves,
        )
    for i, info in enumerate(modules.values()):
        if info.parent is not None and info.parent not in modules:
            raise fail(f"{JSON_FILE}: modules[{i}]", f"parent {info.parent[:80]!r} is not a module")
    _check_tree(modules)
    return modules


def _check_tree(modules: dict[str, ModuleInfo]) -> None:
    """Every module's parents lead to a root: a cycle would send every walk up the tree
    (the summary's depths, the widget's module list) round forever."""
    rooted: set[str] = set()
    for i, info in enumerate(modules.values()):
        seen: list[str] = []
        address: str | None = info.address
        while address is not None and address not in rooted:
            if address in seen:
                raise fail(f"{JSON_FILE}: modules[{i}]", f"parent of {address[:80]!r} loops")
            seen.append(address)
            address = modules[address].parent
        rooted.update(seen)


def _node(i: int, data: dict[str, Any], tensors: _Tensors) -> OpRecord:
    where = _where(i, data["label"])
    if data["index"] != i:
        raise fail(where, f"index is {data['index']}, but the node is at position {i}")
    shapes = tuple(tuple(shape) for shape in data["shapes"])
    activations = None
    if data["activations"] is not None:
        activations = tuple(tensors.get(t, where) for t in data["activations"])
        if [tuple(t.shape) for t in activations] != list(shapes):
            raise fail(where, f"saved tensors have shapes other than its shapes {list(shapes)}")
        if activations and dtype_name(activations[0].dtype) != data["dtype"]:
            raise fail(where, f"saved tensor is {activations[0].dtype}, dtype says {data['dtype']}")
    record = OpRecord(
        label=data["label"],
        kind=data["kind"],
        func=data["func"],
        index=i,
        layer=data["layer"],
        pass_index=data["pass_index"],
        n_passes=data["n_passes"],
        module=data["module"],
        module_stack=tuple((address, pass_index) for address, pass_index in data["module_stack"]),
        function=data.get("function", ""),
        shape=tuple(data["shape"]) if data["shape"] is not None else None,
        dtype=data["dtype"],
        device=data["device"],
        nbytes=data["nbytes"],
        shapes=shapes,
        params=tuple(ParamUse(p["name"], tuple(p["shape"]), p["numel"]) for p in data["params"]),
        parents=list(data["parents"]),
        parent_args=[
            ParentArg(a["parent"], a["position"], a["output_index"]) for a in data["parent_args"]
        ],
        children=list(data["children"]),
        from_input=data["from_input"],
        feeds_output=data["feeds_output"],
        source=data["source"],
        source_code=data["source_code"],
        inplace=data["inplace"],
        failed=data["failed"],
        error=data["error"],
        requires_grad=data.get("requires_grad", False),
        time_ms=data.get("time_ms"),
        intervened=data.get("intervened", False),
        activations=activations,
        nested_shapes=_nested_shapes(data.get("nested_shapes"), shapes, where),
    )
    grads = data.get("grads")
    if grads is not None:
        record.grads = tuple(None if t is None else tensors.get(t, where) for t in grads)
        # the gradient of the (first) output has its shape
        if shapes and any(g is not None and tuple(g.shape) != shapes[0] for g in record.grads):
            raise fail(where, f"a saved gradient's shape is not that of its output {shapes[0]}")
    return record


def _nested_shapes(
    data: list[list[list[int]] | None] | None, shapes: tuple[tuple[int, ...], ...], where: str
) -> tuple[tuple[tuple[int, ...], ...] | None, ...] | None:
    """A node's outputs' sample shapes where they were nested tensors, each checked to fit
    its padded output (a replay cuts the samples out of it)."""
    if data is None:
        return None
    if len(data) != len(shapes):
        raise fail(where, f"nested_shapes has {len(data)} entries, the node {len(shapes)} outputs")
    for i, samples in enumerate(data):
        if samples is None:
            continue
        padded = shapes[i]
        if (
            not padded
            or len(samples) != padded[0]
            or not all(
                len(sample) == len(padded) - 1
                and all(n <= m for n, m in zip(sample, padded[1:], strict=True))
                for sample in samples
            )
        ):
            raise fail(where, f"nested_shapes[{i}] does not fit its padded output {padded}")
    return tuple(
        None if samples is None else tuple(tuple(sample) for sample in samples) for samples in data
    )


def _index(nodes: list[OpRecord]) -> dict[str, OpRecord]:
    by_label: dict[str, OpRecord] = {}
    for i, node in enumerate(nodes):
        if node.label in by_label:
            raise fail(_where(i, node.label), "its label appears twice")
        by_label[node.label] = node
    return by_label


def _check_links(
    node: OpRecord, by_label: dict[str, OpRecord], modules: dict[str, ModuleInfo], where: str
) -> None:
    for field, labels in (("parents", node.parents), ("children", node.children)):
        for label in labels:
            if label not in by_label:
                raise fail(where, f"{field}: {label[:80]!r} is not a node of the log")
    for arg in node.parent_args:
        parent = by_label.get(arg.parent)
        if parent is None:
            raise fail(where, f"parent_args: {arg.parent[:80]!r} is not a node of the log")
        if arg.output_index >= max(1, len(parent.shapes)):
            raise fail(
                where,
                f"parent_args: output {arg.output_index} of {arg.parent[:80]!r}, "
                f"which has {len(parent.shapes)}",
            )
    if node.module and node.module not in modules:
        raise fail(where, f"module {node.module[:80]!r} is not a module of the log")
    for address, _ in node.module_stack:
        if address not in modules:
            raise fail(where, f"module_stack: {address[:80]!r} is not a module of the log")


def _check_module_outputs(modules: dict[str, ModuleInfo], by_label: dict[str, OpRecord]) -> None:
    for i, info in enumerate(modules.values()):
        for labels in info.outputs.values():
            for label in labels:
                if label not in by_label:
                    raise fail(
                        f"{JSON_FILE}: modules[{i}]", f"outputs: {label[:80]!r} is not a node"
                    )


def _replay(
    data: dict[str, Any] | None,
    node: OpRecord,
    by_label: dict[str, OpRecord],
    tensors: _Tensors,
    where: str,
) -> Any:
    """What validate() needs, as the tracer builds it: (call, [(position, parent, output)])."""
    refs = [(a.position, by_label[a.parent], a.output_index) for a in node.parent_args]
    if node.kind != "op":
        if data is not None:
            raise fail(where, f"a {node.kind} node has no replay")
        return (None, refs) if node.kind == "output" else None
    if data is None:
        return (_unavailable("no call was saved for it"), refs)
    if "unavailable" in data:
        call = _unavailable(data["unavailable"])
        call.in_transform = data.get("in_transform", False)  # why it has no values
        return (call, refs)
    func = resolve_function(data["func"])
    if func is None:
        reason = f"calls {data['func'][:120]!r}, which is not one of torch's functions (not called)"
        return (_unavailable(reason), refs)
    args = decode_value(data["args"], f"{where}.replay.args")
    if not isinstance(args, tuple):
        raise fail(where, "replay.args must be a $tuple")
    kwargs = {
        key: decode_value(value, f"{where}.replay.kwargs.{key[:40]}")
        for key, value in data["kwargs"].items()
    }
    n_tensors = len(node.parent_args)
    for slot in _slots((args, kwargs)):
        if slot >= n_tensors:
            raise fail(where, f"replay names tensor argument {slot}; the op has {n_tensors}")
    call = ReplayCall(func, args, kwargs)
    literals = {}  # (the call's own default is a shared read-only mapping)
    for slot_text, tensor_id in data["literals"].items():
        if int(slot_text) >= n_tensors:
            raise fail(where, f"replay.literals: slot {slot_text} of {n_tensors}")
        literals[int(slot_text)] = tensors.get(tensor_id, where)
    if literals:
        call.literals = literals
    if data["rng_state"] is not None:
        call.rng_state = _rng_state(tensors.get(data["rng_state"], where), where)
    call.autocast = tuple(
        (device, dtype_from_name(dtype, f"{where}.replay.autocast"))
        for device, dtype in data.get("autocast", ())
    )
    call.in_transform = data.get("in_transform", False)
    for slot in data.get("written_slots", ()):
        if slot >= n_tensors:
            raise fail(where, f"replay.written_slots: slot {slot} of {n_tensors}")
    call.written_slots = tuple(data.get("written_slots", ()))
    return (call, refs)


def _not_called(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("this op's function was not resolved when its log was loaded")


def _unavailable(reason: str) -> ReplayCall:
    """A call validate() skips with `reason`; its function is never one from the file."""
    call = ReplayCall(_not_called, (), {})
    call.unavailable = reason
    return call


def _slots(template: Any) -> list[int]:
    """Indices of the tensor slots in a decoded argument template."""
    if isinstance(template, TensorSlot):
        return [template.index]
    if isinstance(template, (tuple, list)):
        return [i for item in template for i in _slots(item)]
    if isinstance(template, dict):
        return [i for item in template.values() for i in _slots(item)]
    return []


def _rng_state(state: torch.Tensor, where: str) -> torch.Tensor:
    expected = torch.get_rng_state()
    if state.dtype != expected.dtype or state.shape != expected.shape:
        raise fail(
            where, f"replay.rng_state is {state.dtype} {list(state.shape)}, not a CPU RNG state"
        )
    return state


def _error(data: dict[str, str] | None) -> BaseException | None:
    if data is None:
        return None
    # A class named as the original (the schema allows identifiers only), so the summary
    # reads the same; nothing of the original class is imported.
    error_class = type(data["type"], (SavedError,), {"__module__": __name__})
    return error_class(data["message"])
