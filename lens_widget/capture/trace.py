"""`trace(model, inputs)`: run one forward pass under the recorder and build its log."""

from __future__ import annotations

import time
import warnings
from collections.abc import Mapping
from typing import Any

import torch

from lens_widget.capture.call_site import describe_source
from lens_widget.capture.named_leaves import named_tensor_leaves
from lens_widget.capture.recorder import Recorder
from lens_widget.capture.save_policy import SavePolicy, SaveSpec
from lens_widget.gc_pause import gc_paused
from lens_widget.log.model_log import ModelLog
from lens_widget.log.records import OpRecord, ParentArg, index_by_label


def trace(
    model: torch.nn.Module,
    inputs: Any = (),
    kwargs: Mapping[str, Any] | None = None,
    *,
    save: SaveSpec = "all",
) -> ModelLog:
    """Run ``model(*inputs, **kwargs)`` once and record every torch operation.

    ``inputs`` is a tensor (or any single object) or a tuple of positional inputs.
    ``save`` picks the activations to keep: "all", None (graph only), a list of op labels /
    module addresses / function names, or a predicate on the OpRecord.
    If the forward pass raises, the same exception is raised with the partial log
    attached as ``err.lens_log``.
    """
    if not isinstance(model, torch.nn.Module):
        raise TypeError(
            f"lens_widget.trace needs a torch.nn.Module, got {type(model).__name__}; "
            "wrap a plain function in an nn.Module whose forward calls it"
        )
    original = getattr(model, "_orig_mod", None)
    if isinstance(original, torch.nn.Module):
        # torch.compile'd: dynamo would trace our recorder too; record the eager module.
        model = original
    if kwargs is None:
        kwargs = {}
    elif not isinstance(kwargs, Mapping):
        raise TypeError(f"kwargs must be a mapping of keyword inputs, got {type(kwargs).__name__}")
    args = inputs if isinstance(inputs, tuple) else (inputs,)
    policy = SavePolicy(save)

    recorder = Recorder(model, policy, track_versions=not torch.is_inference_mode_enabled())
    for name, tensor in named_tensor_leaves((args, dict(kwargs)), "input"):
        if recorder.producer_of(tensor) is None:  # the same tensor passed twice is one input
            recorder.add_source(tensor, "input", _input_name(name))

    output: Any = None
    error: BaseException | None = None
    with gc_paused():
        start = time.perf_counter()
        try:
            with recorder.tracker, recorder:
                output = model(*args, **kwargs)
        except BaseException as err:  # noqa: BLE001 - re-raised below with the log attached
            error = err
        elapsed = time.perf_counter() - start
        log = _build_log(recorder, model, output, error, elapsed)
    _warn_on_unmatched_save_names(policy, log)
    if error is not None:
        error.lens_log = log  # type: ignore[attr-defined]
        if hasattr(error, "add_note"):  # Python 3.11+
            error.add_note(
                f"lens_widget: the forward pass raised after {len(log.ops)} ops; "
                "the partial log is at err.lens_log"
            )
        raise error.with_traceback(error.__traceback__)
    return log


def _input_name(name: str) -> str:
    # Leaves of (args, kwargs): "input.0.1" is args[1] -> "input.1"; "input.1.mask" -> "input.mask".
    _, _group, *rest = name.split(".")
    return ".".join(["input", *rest])


def _build_log(
    recorder: Recorder,
    model: torch.nn.Module,
    output: Any,
    error: BaseException | None,
    elapsed: float,
) -> ModelLog:
    nodes = recorder.nodes
    if error is None:
        for name, tensor in named_tensor_leaves(output, "output"):
            produced = recorder.producer_of(tensor)
            parent = (
                produced[0] if produced is not None else recorder.add_source(tensor, "const", name)
            )
            label = recorder.unique_label(name)
            sink = OpRecord(
                label=label, kind="output", func=name, index=len(nodes), layer=label,
                shape=parent.shape, dtype=parent.dtype, device=parent.device,
                nbytes=tensor.numel() * tensor.element_size(), shapes=(tuple(tensor.shape),),
                activations=None if recorder.save.keeps_nothing else (tensor.detach(),),
            )  # fmt: skip
            sink.replay = (None, [("0", parent, produced[1] if produced else 0)])
            nodes.append(sink)

    _finalize_labels(recorder)
    _link(nodes)
    _mark_reachability(nodes, partial=error is not None, failed=recorder.failed)
    modules = recorder.tracker.modules
    for (address, pass_index), producers in recorder.module_outputs.items():
        modules[address].outputs[pass_index] = [n.label for n in producers]
    for node in nodes:
        for address, _ in node.module_stack if node.kind == "op" else ():
            modules[address].n_ops += 1
    if "" in modules:
        modules[""].n_ops = recorder.n_ops
    _warn_on_unseen_writes(recorder)

    return ModelLog(
        model_class=type(model).__name__,
        nodes=nodes,
        modules=modules,
        output=output,
        error=error,
        failed_op=recorder.failed.label if recorder.failed is not None else None,
        elapsed=elapsed,
        n_params=sum(p.numel() for p in model.parameters()),
        param_bytes=sum(p.numel() * p.element_size() for p in model.parameters()),
    )


def _finalize_labels(recorder: Recorder) -> None:
    """Drop the pass suffix from ops whose layer ran once; resolve source lines."""
    passes: dict[str, int] = {}
    for node in recorder.nodes:
        if node.kind == "op":
            passes[node.layer] = node.pass_index  # execution order: the last pass wins
    for node in recorder.nodes:
        if node.kind != "op":
            continue
        node.n_passes = passes[node.layer]
        if node.n_passes == 1:
            node.label = node.layer
        if not isinstance(node.source, str):  # (file, line) while tracing
            node.source, node.source_code = describe_source(node.source)


def _link(nodes: list[OpRecord]) -> None:
    """Parents, their argument positions, and children, as labels."""
    for node in nodes:
        refs = node.replay[1] if node.replay is not None else []
        seen: set[str] = set()
        for position, parent, output_index in refs:
            node.parent_args.append(ParentArg(parent.label, position, output_index))
            if parent.label not in seen:
                seen.add(parent.label)
                node.parents.append(parent.label)
                parent.children.append(node.label)


def _mark_reachability(nodes: list[OpRecord], *, partial: bool, failed: OpRecord | None) -> None:
    """from_input forwards in execution order, feeds_output backwards: no graph needed.

    A partial trace has no outputs: what leads to the op that raised counts as feeding the
    output, and where no torch op raised, nothing is known to be unused.
    """
    by_label = index_by_label(nodes)
    for node in nodes:
        node.from_input = node.kind == "input" or any(by_label[p].from_input for p in node.parents)
    if partial and failed is None:
        for node in nodes:
            node.feeds_output = True
        return
    for node in reversed(nodes):
        node.feeds_output = (
            node.kind == "output"
            or node is failed
            or any(by_label[c].feeds_output for c in node.children)
        )


def _warn_on_unseen_writes(recorder: Recorder) -> None:
    """A saved reference whose version moved was overwritten by a call we could not see."""
    changed = sorted(
        {
            node.label
            for node, i, tensor_id, version in recorder.saved_refs
            if node.activations is not None
            and id(node.activations[i]) == tensor_id  # not replaced by a copy before a write
            and recorder.version(node.activations[i]) != version
            and node.kind in ("op", "input")
        }
    )
    if changed:
        warnings.warn(
            f"lens_widget: saved activations of {', '.join(changed[:5])}"
            f"{' and others' if len(changed) > 5 else ''} were overwritten in place by a call "
            "the tracer could not see; their saved values may be later than when produced",
            stacklevel=3,
        )


def _warn_on_unmatched_save_names(policy: SavePolicy, log: ModelLog) -> None:
    if not policy.names:
        return
    names = {n.label for n in log.nodes} | {n.layer for n in log.nodes}
    names |= {n.func for n in log.ops} | set(log.modules)
    unmatched = policy.unmatched(names)
    if unmatched:
        warnings.warn(
            f"lens_widget: save names {unmatched[:5]} match no op label, layer, function or "
            "module of this model; nothing was saved for them",
            stacklevel=3,
        )
