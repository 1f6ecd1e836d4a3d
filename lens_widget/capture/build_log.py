"""Turn what the recorder collected during the pass into a ModelLog.

The pass leaves each op with its layer's base name, its source as a call site and its
inputs as references to parent nodes. Here, in two passes over the nodes: labels get their
pass suffix (known only now), sources their text, parents/children are linked, and
from_input / feeds_output are propagated forwards and backwards.
"""

from __future__ import annotations

import warnings
from typing import Any

import torch

from lens_widget.capture.named_leaves import named_tensor_leaves
from lens_widget.capture.recorder import Recorder
from lens_widget.log.model_log import ModelLog
from lens_widget.log.records import OpRecord, ParentArg


def build_log(
    recorder: Recorder,
    model: torch.nn.Module,
    output: Any,
    error: BaseException | None,
    elapsed: float,
) -> ModelLog:
    """Run with torch functions disabled (nothing here may reach a user's mode)."""
    nodes = recorder.nodes
    if error is None:
        _add_output_sinks(recorder, output)

    _finish_nodes(recorder)
    _mark_feeds_output(nodes, partial=error is not None, failed=recorder.failed)
    modules = recorder.tracker.modules
    for (address, pass_index), producers in recorder.module_outputs.items():
        modules[address].outputs[pass_index] = [n.label for n in producers]
    _count_module_ops(recorder)
    _warn_on_unseen_writes(recorder)

    params = recorder.names.params  # sized now: a lazy module's are made by the forward
    return ModelLog(
        model_class=type(model).__name__,
        nodes=nodes,
        modules=modules,
        output=output,
        error=error,
        failed_op=recorder.failed.label if recorder.failed is not None else None,
        elapsed=elapsed,
        n_params=sum([p.numel() for p in params]),
        param_bytes=sum([p.numel() * p.element_size() for p in params]),
    )


def _add_output_sinks(recorder: Recorder, output: Any) -> None:
    nodes = recorder.nodes
    for name, tensor in named_tensor_leaves(output, "output"):
        produced = recorder.producer_of(tensor)
        parent = produced[0] if produced is not None else recorder.add_source(tensor, "const", name)
        label = recorder.unique_label(name)
        sink = OpRecord(
            label=label, kind="output", func=name, index=len(nodes), layer=label,
            shape=parent.shape, dtype=parent.dtype, device=parent.device,
            nbytes=tensor.numel() * tensor.element_size(), shapes=(tuple(tensor.shape),),
            activations=None if recorder.keeps_nothing else (tensor.detach(),),
        )  # fmt: skip
        sink.replay = (None, [("0", parent, produced[1] if produced else 0)])
        nodes.append(sink)


def _finish_nodes(recorder: Recorder) -> None:
    """Final labels (the pass suffix only on layers that ran more than once), source text,
    parents / parent_args / children, and from_input, in one pass in execution order.

    A node's parents come before it, so their labels are final when it is linked.
    """
    layers = iter(recorder.op_layers)
    source_text = recorder.source_text
    texts: dict[int, tuple[str, str]] = {}
    new_parent_arg = tuple.__new__  # ParentArg's own __new__ is a slow Python function
    for node in recorder.nodes:
        kind = node.kind
        if kind == "op":
            node.n_passes = n_passes = next(layers).passes
            node.label = node.layer if n_passes == 1 else f"{node.layer}:{node.pass_index}"
        site = node.source
        if type(site) is int:  # a call site while tracing
            text = texts.get(site)  # type: ignore[call-overload]
            if text is None:
                text = texts[site] = source_text(site)  # type: ignore[index,arg-type]
            node.source, node.source_code = text
        replay = node.replay
        if replay is None:
            node.from_input = kind == "input"
            continue
        from_input = False
        parents, parent_args, label = node.parents, node.parent_args, node.label
        for position, parent, output_index in replay[1]:
            parent_label = parent.label
            parent_args.append(new_parent_arg(ParentArg, (parent_label, position, output_index)))
            if parent_label not in parents:
                parents.append(parent_label)
                parent.children.append(label)
                if parent.from_input:
                    from_input = True
        node.from_input = from_input


def _mark_feeds_output(nodes: list[OpRecord], *, partial: bool, failed: OpRecord | None) -> None:
    """Backwards from the outputs. A partial trace has no outputs: what leads to the op that
    raised counts as feeding the output, and where no torch op raised, nothing is known to
    be unused."""
    if partial and failed is None:
        for node in nodes:
            node.feeds_output = True
        return
    for node in reversed(nodes):
        if node.kind == "output" or node is failed:
            node.feeds_output = True
        if node.feeds_output and node.replay is not None:
            for _, parent, _ in node.replay[1]:
                parent.feeds_output = True


def _count_module_ops(recorder: Recorder) -> None:
    """n_ops of each module: ops of one module pass share one stack, so count per stack."""
    per_stack: dict[int, list[Any]] = {}
    for node in recorder.nodes:
        if node.kind == "op":
            stack = node.module_stack
            entry = per_stack.get(id(stack))
            if entry is None:
                per_stack[id(stack)] = [stack, 1]
            else:
                entry[1] += 1
    modules = recorder.tracker.modules
    for stack, n in per_stack.values():
        for address, _ in stack:
            modules[address].n_ops += n
    if "" in modules:
        modules[""].n_ops = recorder.n_ops


def _warn_on_unseen_writes(recorder: Recorder) -> None:
    """A saved reference whose version moved was overwritten by a call we could not see."""
    changed = sorted(
        {n.label for n in recorder.values.overwritten_unseen() if n.kind in ("op", "input")}
    )
    if changed:
        warnings.warn(
            f"lens_widget: saved activations of {', '.join(changed[:5])}"
            f"{' and others' if len(changed) > 5 else ''} were overwritten in place by a call "
            "the tracer could not see; their saved values may be later than when produced",
            stacklevel=4,
        )
