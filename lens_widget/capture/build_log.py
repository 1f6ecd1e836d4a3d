"""Turn what the recorder collected during the pass into a ModelLog.

What is known only at the end is done here: output sinks, the ``:1`` label of first passes of
layers that repeated, and feeds_output, propagated backwards from the outputs in one pass; and
what the pass left to fill after it (op_details.py): the ops' links, source lines and output
metadata. A plain trace leaves the labelling and that fill to the log's first read
(labels_on_read.py, log/filled_on_read.py).
"""

from __future__ import annotations

import warnings
from itertools import chain
from operator import methodcaller, mul
from types import GeneratorType
from typing import Any, NamedTuple

import torch

from lens_widget.capture.helper_calls import name_helper_calls
from lens_widget.capture.labels_on_read import LabelsOnRead, module_output_labels
from lens_widget.capture.links import link_parents, relabel_first_passes
from lens_widget.capture.module_tracker import ModuleCounts, fill_module_infos
from lens_widget.capture.named_leaves import named_tensor_leaves
from lens_widget.capture.old_generation import (
    collect_young_generations,
    promote_to_old_generation,
)
from lens_widget.capture.op_details import fill_details
from lens_widget.capture.recorder import Recorder
from lens_widget.capture.saved_values import detach_sources
from lens_widget.capture.tensor_book import TensorBook
from lens_widget.log.filled_on_read import fill_later
from lens_widget.log.gc_pause import gc_paused
from lens_widget.log.model_log import ModelLog
from lens_widget.log.nested import padded, sample_shapes
from lens_widget.log.records import ModuleInfo, OpRecord

_numel = methodcaller("numel")
_element_size = methodcaller("element_size")


class SectionTop(NamedTuple):
    """What a section's top level is, when no call of a root module made it."""

    class_name: str


def build_log(
    recorder: Recorder,
    model_class: str,
    output: Any,
    error: BaseException | None,
    elapsed: float,
    *,
    section: SectionTop | None = None,
    section_on_read: bool = False,
    stacklevel: int = 1,
) -> ModelLog:
    """Run with torch functions disabled (nothing here may reach a user's mode).

    `section`: the log of a code section, which has no return value (no output sinks;
    nothing is known to be unused) and a top level whether or not its root module ran.
    `section_on_read`: nothing reads the section's records as it ends (its features, a
    traced step's gradients, name them on the first read too), so their fill waits for it.
    `stacklevel`: of the user's code, counted from the caller.
    """
    book = recorder.book
    nodes = book.nodes
    book.values.drop_written_sources()  # (a trace that does not copy them: saved_values.py)
    # A plain whole trace: nothing read the records during the pass, and nothing here reads
    # their labels or details, so those are given on the first read (log/filled_on_read.py,
    # labels_on_read.py). A saved value written where the trace could not see (warned now,
    # by label) needs the labels now.
    whole = error is None and section is None  # a whole forward: it has outputs
    unseen = book.values.overwritten_unseen()
    later = book.labels_later and whole and not unseen
    # A section leaves its fill (its labels too, if the pass left them) to the first read
    # the same way when nothing here reads them: no error or failed op to name, no unseen
    # write to warn of (the session says whether anything reads them after).
    on_read = later or (
        section_on_read and section is not None and error is None and not unseen
        and recorder.failed is None
    )  # fmt: skip
    pending = book.pending
    if pending and not on_read:
        fill_details(book.details, pending, book.place)  # before any link names the labels
    # Sources made from here on (outputs no op made) are labelled at once, or with the rest.
    book.labels_later = later
    sinks = _add_output_sinks(recorder, output, later=later) if whole else []
    book.labels_later = False
    if book.pending and not on_read:  # sources of outputs no op made
        fill_details(book.details, book.pending, book.place)
    if book.details.saw_meta:  # (known after the fill: the fill on read drops them)
        _drop_meta_values(nodes)
    by_label = book.by_label  # for the relabelling and the log
    # Module infos made on the first read go into this very dict
    modules = {} if on_read else recorder.tracker.modules
    if not on_read:
        relabel_first_passes(recorder.repeated, by_label)
        name_helper_calls(
            book.layers.by_key,
            recorder.ops,
            {address: info.class_name for address, info in modules.items()},
        )
    partial = error is not None or section is not None
    # An op that raised inside a call that caught it does not end the pass.
    failed = recorder.failed if error is not None else None
    if not on_read:  # else on the first read, with the rest of the fill
        _mark_feeds_output(nodes, recorder.ops, sinks, partial=partial, failed=failed)
    top = None
    if section is not None:
        top = ModuleInfo("", section.class_name, None, n_passes=1, n_ops=len(recorder.ops))
        if not on_read and "" not in modules:
            modules = recorder.tracker.modules = {"": top, **modules}
    if not on_read:
        module_output_labels(modules, recorder.module_outputs.calls)
    _warn_on_unseen_writes(unseen, stacklevel + 2)
    if isinstance(output, GeneratorType):
        warnings.warn(
            "lens_widget: the forward returned a generator: its ops run when it is consumed, "
            "after the trace, so they are not in the log; trace a forward that consumes it",
            stacklevel=stacklevel + 2,
        )

    params = recorder.names.params  # sized now: a lazy module's are made by the forward
    log = ModelLog(
        model_class=model_class,
        nodes=nodes,
        modules=modules,
        output=output,
        error=error,
        failed_op=recorder.failed.label if recorder.failed is not None else None,
        elapsed=elapsed,
        # (C loops: ResNet-50's 161 params took ~0.15 ms per trace as comprehensions)
        n_params=sum(map(_numel, params)),
        param_bytes=sum(map(mul, map(_numel, params), map(_element_size, params))),
        label_index=by_label,
    )
    if on_read:
        labels = LabelsOnRead(
            book.layers, by_label, book.pending or [], recorder.ops, sinks, modules,
            recorder.module_outputs.calls,
        )  # fmt: skip
        counts = recorder.tracker.counts
        fill = _DetailsOnRead(book, recorder.ops, sinks, labels, modules, counts, top)
        fill_later(log, fill)
    else:
        detach_sources(book.values.undetached)
    return log


class _DetailsOnRead:
    """The fill of a plain trace's or section's records on their first read: the details
    the pass left (op_details.py), then the output sinks' links, as build_log does them at
    once otherwise.
    Holds what the fill reads, not the book or the log (no cycle, and not the model)."""

    def __init__(
        self,
        book: TensorBook,
        ops: list[OpRecord],
        sinks: list[OpRecord],
        labels: LabelsOnRead,
        modules: dict[str, ModuleInfo],
        module_counts: ModuleCounts,
        top: ModuleInfo | None,
    ) -> None:
        # a section's top level, unless its root module ran; a section has no outputs, and
        # nothing is known to be unused
        self._top = top
        self._modules = modules  # the log's, empty until the fill
        self._module_counts: ModuleCounts | None = module_counts
        self._details = book.details
        self._pending = book.pending or []
        self._undetached = book.values.undetached
        self._nodes = book.nodes
        self._ops = ops
        self._sinks = sinks
        self._labels: LabelsOnRead | None = labels

    def __call__(self) -> None:
        collect_young_generations()  # as a trace does: see old_generation.py
        with torch._C.DisableTorchFunction(), gc_paused():  # nothing reaches a user's mode
            if self._module_counts is not None:  # (the labels name module outputs)
                fill_module_infos(self._modules, self._module_counts)
                self._module_counts = None
            if self._labels is not None:  # the links, made next, name final labels
                self._labels()
                self._labels = None
            modules, top = self._modules, self._top
            if top is not None and "" not in modules:  # first, as build_log puts it
                rest = dict(modules)
                modules.clear()
                modules[""] = top
                modules.update(rest)
            fill_details(self._details, self._pending, None)
            detach_sources(self._undetached)
            for sink in self._sinks:
                refs = sink.replay[1]  # pyright: ignore[reportOptionalSubscript]  # sinks have a replay
                sink.parents, sink.parent_args, sink.from_input = link_parents(sink.label, refs)
            # no op raised (a whole trace's has outputs)
            _mark_feeds_output(
                self._nodes, self._ops, self._sinks, partial=top is not None, failed=None
            )
            if self._details.saw_meta:  # known once the fill has named each node's device
                _drop_meta_values(self._nodes)
        self._sinks = self._nodes = self._ops = self._undetached = []
        promote_to_old_generation()


def _add_output_sinks(recorder: Recorder, output: Any, *, later: bool) -> list[OpRecord]:
    """A node per tensor of the output; `later`: its unique label and its link to its
    producer are given when the records are filled (labels_on_read.py), else now."""
    link = not later
    nodes = recorder.book.nodes
    sinks = []
    for name, tensor in named_tensor_leaves(output, "output"):
        produced = recorder.book.producer_of(tensor)
        parent = (
            produced[0] if produced is not None else recorder.book.add_source(tensor, "const", name)
        )
        label = name if later else recorder.book.unique_label(name)
        parent_refs = [("0", parent, produced[1] if produced else 0)]
        parents, parent_args, from_input = (
            link_parents(label, parent_refs) if link else ([], [], False)
        )
        # a nested tensor (torch.nested) is described and kept padded (log/nested.py)
        nested = (sample_shapes(tensor),) if tensor.is_nested else None
        value = padded(tensor) if nested is not None else tensor
        sink = OpRecord(
            label=label, kind="output", func=name, index=len(nodes), layer=label,
            # the tensor's own: a parent with several outputs (topk) describes its first
            shape=tuple(value.shape), dtype=recorder.book.dtype_name(value.dtype),
            device=recorder.book.details.device_name(value.device),
            nbytes=value.numel() * value.element_size(), shapes=(tuple(value.shape),),
            parents=parents, parent_args=parent_args, from_input=from_input,
            activations=None if recorder.book.keeps_nothing else (value.detach(),),
            nested_shapes=nested, replay=(None, parent_refs),
        )  # fmt: skip
        nodes.append(sink)
        if not later:
            recorder.book.by_label[label] = sink
        sinks.append(sink)
    return sinks


def _mark_feeds_output(
    nodes: list[OpRecord],
    ops: list[OpRecord],
    sinks: list[OpRecord],
    *,
    partial: bool,
    failed: OpRecord | None,
) -> None:
    """Backwards from the outputs. A partial trace has no outputs: what leads to the op that
    raised counts as feeding the output, and where no torch op raised, nothing is known to
    be unused.

    Every op's parents come before it in `ops` (sources have no parents and are reached
    from their children), so one scan from the end reaches every ancestor: no stack, each
    op read once."""
    if partial and failed is None:
        for node in nodes:
            node.feeds_output = True
        return
    for node in sinks if failed is None else (failed,):
        node.feeds_output = True
    for node in chain(sinks, reversed(ops)):
        if node.feeds_output:
            for _, parent, _ in node.replay[1]:  # pyright: ignore[reportOptionalSubscript]  # ops (and sinks) always have a replay
                parent.feeds_output = True


def _drop_meta_values(nodes: list[OpRecord]) -> None:
    """A meta tensor has a shape and no values: nothing to plot, count or replay. The nodes
    keep their shapes; validate() and the widget say why there is no value."""
    for node in nodes:
        saved = node.activations
        if saved is not None and any(t.device.type == "meta" for t in saved):
            node.activations = None


def _warn_on_unseen_writes(unseen: list[OpRecord], stacklevel: int) -> None:
    """A saved reference whose version moved was overwritten by a call we could not see."""
    changed = sorted({n.label for n in unseen})
    if changed:
        warnings.warn(
            f"lens_widget: saved activations of {', '.join(changed[:5])}"
            f"{' and others' if len(changed) > 5 else ''} were overwritten in place by a call "
            "the tracer could not see; their saved values may be later than when produced",
            stacklevel=stacklevel,
        )
