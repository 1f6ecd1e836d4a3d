"""Backward passes run while a section is recorded: per-op gradients, leaves, the nodes.

A Feature of the recorder (features.py: it notes the outputs that require grad and the
autograd leaves among the sources) and its backward runner
(``recorder.backward_capture``), it runs each ``Tensor.backward`` / ``torch.autograd.backward`` /
``torch.autograd.grad`` call the recorder sees as one backward pass:

- before the call, every autograd node reachable from the call's roots gets a pre-hook:
  execution order, gradient shapes, the gradient an AccumulateGrad hands its leaf, and for
  the node of a recorded op whose gradient is kept, its ``grad_outputs``, the gradients of
  the forward op's outputs as the node runs on them (tensor hooks run before node
  pre-hooks: one hook per node, where a post-hook for these would be a second); all are
  removed right after, also on error;
- an output that may get its autograd node after its op returned (one made with grad off,
  as in a custom autograd.Function's forward, which the Function's node then takes; one
  requiring grad without a node) is watched until the next op recorded with grad on, the
  backward or the step's end, and its node credited to its op then: the op keeps its
  gradient and the backward node names it;
- an error names the node whose pre-hook ran last (the engine raised in it) and so the
  forward op whose saved tensors were involved.

No hook returns a value, so the engine computes exactly what it computes untraced. The
gradients are kept as the engine made them (the very objects, not detached views): holding
them keeps AccumulateGrad from adopting one as a leaf's ``.grad``, so a later pass cannot
add into a kept gradient in place; ``.grad`` gets a copy, equal bit for bit.
`finish(log)` fills the log and drops every reference to the autograd graph.

The recorder owns its capture (``recorder.backward_capture``) and the capture refers back to
the recorder weakly: a strong reference both ways is a cycle that only Python's cyclic
collector frees, and the trace promotes its objects to the oldest generation, which it
scans rarely, so every saved value, gradient and autograd node of a trace stayed alive long
after its log was dropped (memory grew by the size of a step's activations per trace).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from functools import partial
from itertools import repeat
from typing import TYPE_CHECKING, Any, cast

import torch
from torch.autograd.graph import Node

from lens_widget.capture.backward.autograd_calls import (
    BackwardCall,
    describe_call,
    reachable_nodes,
    root_nodes,
)
from lens_widget.capture.backward.backward_graph import ACCUMULATE_GRAD
from lens_widget.capture.backward.backward_log import (
    CaptureState,
    LeafState,
    PassState,
    StepEnd,
    end_step,
    fill_log_labels,
)
from lens_widget.capture.backward.recompute import PathTracker, RecomputeMatcher, RecomputeWatcher
from lens_widget.capture.call_site import find_call_site
from lens_widget.capture.features import Feature
from lens_widget.capture.module_calls import swap_tracker
from lens_widget.capture.transforms import transform_running
from lens_widget.log.filled_on_read import fill_after
from lens_widget.log.model_log import ModelLog
from lens_widget.log.records import OpRecord

if TYPE_CHECKING:
    from lens_widget.capture.func_facts import FuncFacts
    from lens_widget.capture.recorder import Recorder
    from lens_widget.capture.tensor_book import TensorBook

Tensor = torch.Tensor
_push_mode = torch._C._push_on_torch_function_stack
_grad_enabled = torch.is_grad_enabled
# made fresh per use: on a GPU the engine runs hooks on several threads, and one shared
# context object would share the state it saves
_disabled = torch._C.DisableTorchFunction
# An output watched for the autograd node it may get after its op returned: (the tensor,
# weakly; the op; which of its outputs)
Watched = tuple["weakref.ref[Tensor]", OpRecord, int]
_PRUNE_AT = 4096


class BackwardCapture(Feature):
    """Records the backward passes run while `recorder` records (see the module doc)."""

    # Labels are read when the log is filled, and by a checkpoint's recomputation, which
    # has those left for later given first (RecomputeMatcher)
    reads_labels = False

    def __init__(self, recorder: Recorder) -> None:
        # Weak: the recorder holds this capture (see the module doc).
        self._recorder = cast("Recorder", weakref.proxy(recorder))
        # Weak too: the book holds this capture's source hook.
        self._book = cast("TensorBook", weakref.proxy(recorder.book))
        # A backward call is running: the recorder records its calls as any others
        self._running = False
        self.state = CaptureState()
        self._pass: PassState | None = None
        self._matcher: RecomputeMatcher | None = None
        self._watcher: RecomputeWatcher | None = None
        # Given each op gradient as kept (holder, key): an offload moves it to disk
        self.keep_grad: Callable[[dict[int, Tensor], int], None] | None = None
        self._watched: list[Watched] = []  # see the module doc and `_credit_watched`
        self._prune_at = _PRUNE_AT  # when to drop the watched tensors that are gone

    # ---- the feature's hooks (features.py): while forward runs ------------------------

    def outputs_noted(self, node: OpRecord, outputs: tuple[Tensor, ...]) -> None:
        if self._running:
            return
        if _grad_enabled():
            if self._watched:  # a custom Function's apply, if any, has returned since
                self._credit_watched()
        else:  # a custom autograd.Function's forward runs so: its node comes after
            self._watch(node, outputs)
        for tensor in outputs:
            if tensor.requires_grad:
                self.note(node, outputs)
                break

    def source_added(self, tensor: Tensor, node: OpRecord) -> None:
        if not self._running and tensor.requires_grad and tensor.grad_fn is None:
            self.leaf(tensor, source=node)

    # ---- while forward runs (called by the hooks) -------------------------------------

    def note(self, node: OpRecord, outputs: tuple[Tensor, ...]) -> None:
        """An op produced `outputs` (some requiring grad): remember their autograd nodes."""
        state = self.state
        keep = node.activations is not None  # the save policy's choice, for grads too
        for i, tensor in enumerate(outputs):
            if not tensor.requires_grad:
                continue
            grad_fn = tensor.grad_fn
            if grad_fn is None:  # the op returned a leaf (a parameter, requires_grad=True)
                # ...or a tensor given a node later: an autograd.Function's output that is
                # its input (the view_as of a module's full backward hooks)
                self._watched.append((weakref.ref(tensor), node, i))
                leaf = self.leaf(tensor, made_by=node)
                if i == 0 and keep:
                    leaf.ops.append(node)
                continue
            if grad_fn not in state.forward_op:
                state.forward_op[grad_fn] = node
            if i == 0 and keep:
                state.by_node.setdefault(grad_fn, []).append((tensor.output_nr, node))

    def _watch(self, node: OpRecord, outputs: tuple[Tensor, ...]) -> None:
        watched = self._watched
        watched += zip(map(weakref.ref, outputs), repeat(node), range(len(outputs)))
        if len(watched) >= self._prune_at:  # a long stretch with grad off (a no_grad loop)
            watched[:] = [entry for entry in watched if entry[0]() is not None]
            self._prune_at = max(_PRUNE_AT, 2 * len(watched))

    def _credit_watched(self) -> None:
        """Watched outputs that got an autograd node no recorded op made (a custom
        autograd.Function's, given as its apply returned) credit it to their op: the
        backward node names a forward op and the op keeps its gradient."""
        state = self.state
        for ref, node, index in self._watched:
            tensor = ref()
            if tensor is None:
                continue
            grad_fn = tensor.grad_fn
            if grad_fn is None or grad_fn in state.forward_op:
                continue
            state.forward_op[grad_fn] = node
            if index == 0 and node.activations is not None:
                state.by_node.setdefault(grad_fn, []).append((tensor.output_nr, node))
        self._watched.clear()

    def leaf(
        self, tensor: Tensor, source: OpRecord | None = None, made_by: OpRecord | None = None
    ) -> LeafState:
        """The leaf's state, made on first sight. `source`: its node in the log (a param,
        input or const source); `made_by`: the recorded op that returned it."""
        leaves = self.state.leaves
        leaf = leaves.get(id(tensor))
        if leaf is None:
            named = self._recorder.names.tensors.get(id(tensor))
            kind = "param" if named is not None and named[1] == "param" else "other"
            leaf = leaves[id(tensor)] = LeafState(tensor, kind, named[0] if named else None)
        if source is not None and leaf.node is None:
            leaf.node = source
            if source.kind == "input":  # named by its label (final when the log is filled)
                leaf.kind = "input"
        if made_by is not None and leaf.made_by is None:
            leaf.made_by = made_by
        return leaf

    def note_recomputed(self, original: OpRecord, outputs: list[Tensor]) -> None:
        """A checkpointed op ran again: list it; its new outputs stand for the original's."""
        state = self.state
        assert self._pass is not None
        state.recomputed.append((original, self._pass.index))
        first = outputs[0] if outputs else None
        if first is not None and first.grad_fn is not None:
            state.forward_op.setdefault(first.grad_fn, original)
            if original.activations is not None:
                state.by_node.setdefault(first.grad_fn, []).append((first.output_nr, original))

    # ---- a backward call ------------------------------------------------------------------

    def run(
        self,
        facts: FuncFacts,
        func: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any] | None,
        frame: Any,
    ) -> Any:
        """Run one backward call of the recorded code (the recorder's handler calls this)."""
        recorder = self._recorder
        with recorder.quiet:
            call = describe_call(func, args, kwargs)
            _, site = find_call_site(frame)
            pass_state = PassState(
                len(self.state.passes) + 1,
                call.kind,
                call.retain_graph,
                recorder.book.details.source_text(site)[0],
                in_transform=call.batched or transform_running(),
            )
        self.state.passes.append(pass_state)
        paths = PathTracker(recorder.tracker)
        self._pass = pass_state
        self._matcher = RecomputeMatcher(
            recorder.book.layers.by_key, paths, recorder.book.label_now
        )
        handles: list[Any] = []
        self._watcher = RecomputeWatcher(
            self._matcher,
            self.run_nested,
            self.note_recomputed,
            self._book.values.before_write,
            hook_unseen=lambda roots: self._hook_unseen(roots, handles),
        )
        self._watcher.distributed = recorder.distributed
        swap_tracker(recorder.tracker, paths)
        recorder.backward_capture = None  # the recorder records the call as it always does
        self._running = True
        try:
            with recorder.quiet:
                self._credit_watched()  # before the nodes get their hooks (by_node)
                self._hook(call.roots, handles)
            result = recorder._call_quietly(facts, func, args, kwargs, frame)
        except BaseException as err:
            with recorder.quiet:
                self.state.failed(pass_state, err)
            raise
        else:
            with recorder.quiet:
                self._note_returned(call, result)
                if not call.retain_graph:  # (in a C loop: ~6 nodes per forward op)
                    self.state.freed_by.update(dict.fromkeys(pass_state.order, pass_state.index))
            return result
        finally:
            recorder.backward_capture = self
            self._running = False
            swap_tracker(paths, recorder.tracker)
            for handle in handles:
                handle.remove()
            self._pass = self._matcher = self._watcher = None
            if recorder.distributed is not None and pass_state.error is None:
                recorder.distributed.after_backward()  # DDP's bucket all-reduces

    def run_nested(self, func: Callable[..., Any], args: tuple[Any, ...], kwargs: Any) -> Any:
        """A backward call made inside a backward (a reentrant checkpoint backpropagating
        through its recomputed region): part of the running pass."""
        with torch._C.DisableTorchFunction():
            call = describe_call(func, args, kwargs)
            handles: list[Any] = []
            self._hook(call.roots, handles)
        try:
            result = func(*args, **kwargs)
            with torch._C.DisableTorchFunction():
                self._note_returned(call, result)
            return result
        finally:
            for handle in handles:
                handle.remove()

    def _hook_unseen(self, roots: tuple[Any, ...], pass_handles: list[Any]) -> list[Any]:
        """Hooks an inner backward the watcher cannot see (unseen_backward.py) from its
        roots; its handles, also removed with the pass's."""
        handles: list[Any] = []
        self._hook(root_nodes(roots), handles)
        pass_handles += handles
        return handles

    def _hook(self, roots: list[Node], handles: list[Any]) -> None:
        entries_of, before, add = self.state.by_node.get, self._before_node, handles.append
        for node in reachable_nodes(roots):  # (about six per forward op)
            add(node.register_prehook(partial(before, node, entries_of(node))))

    def _before_node(
        self,
        node: Node,
        entries: list[tuple[int, OpRecord]] | None,
        grad_outputs: tuple[Tensor | None, ...],
    ) -> None:
        """The engine is about to run `node` on `grad_outputs`, the gradients of its
        forward op's outputs (as the node gets them: tensor hooks ran before node pre-hooks);
        `entries`: the recorded outputs whose gradients are kept, (output_nr, op)."""
        pass_state, matcher = self._pass, self._matcher
        if pass_state is None or matcher is None:  # a hook of a call that has returned
            return
        with _disabled():
            # The node ran (inline: about six nodes run per forward op)
            pass_state.order.append(node)
            state = self.state
            known = state.nodes.get(node)
            if known is None:
                if len(grad_outputs) == 1 and (first := grad_outputs[0]) is not None:
                    shapes: tuple[tuple[int, ...] | None, ...] = (tuple(first.shape),)
                else:  # (most nodes get one gradient: no comprehension's frame for those)
                    shapes = tuple([None if g is None else tuple(g.shape) for g in grad_outputs])
                state.nodes[node] = (len(state.nodes), pass_state.index, shapes)
            elif known[1] != pass_state.index:
                later = state.later_passes.setdefault(node, [])
                if not later or later[-1] != pass_state.index:
                    later.append(pass_state.index)
            if entries and not pass_state.in_transform:
                self._note_op_grads(entries, pass_state.index, grad_outputs)
            # A pass in a transform hands out wrapped gradients, meaningless outside it.
            grad = grad_outputs[0] if grad_outputs else None
            if type(node) is ACCUMULATE_GRAD and grad is not None and not pass_state.in_transform:
                variable = node.variable  # pyright: ignore[reportAttributeAccessIssue]  # AccumulateGrad nodes have .variable; torch's stubs do not say so
                # known since its source was made, but for a tensor no recorded op read
                leaf = state.leaves.get(id(variable)) or self.leaf(variable)
                grads, index = leaf.grads, pass_state.index
                # Twice in one pass only through nested backwards (reentrant checkpoints):
                # summed in the order .grad accumulates them.
                earlier = grads.get(index)
                grads[index] = grad if earlier is None else earlier + grad
                for hook in self._recorder.grad_hooks:
                    hook(grads[index])
                existing = variable.grad
                if existing is not None:
                    # The engine adds into it in place (zero_grad(set_to_none=False)): saved
                    # values sharing it are copied first, as before any recorded write.
                    self._book.values.before_write([existing])
            matcher.new_run()
        # Until the engine restores its thread state after this node: see recompute.py.
        _push_mode(self._watcher)

    def _note_op_grads(
        self,
        entries: list[tuple[int, OpRecord]],
        index: int,
        grad_outputs: tuple[Tensor | None, ...],
    ) -> None:
        op_grads, keep = self.state.op_grads, self.keep_grad
        hooks = self._recorder.grad_hooks
        for output_nr, op in entries:
            grad = grad_outputs[output_nr] if output_nr < len(grad_outputs) else None
            if grad is not None:
                held = op_grads.setdefault(op, {})
                held[index] = grad
                if keep is not None:
                    keep(held, index)
                for hook in hooks:
                    hook(held[index])

    def _note_returned(self, call: BackwardCall, result: Any) -> None:
        """autograd.grad hands back the gradients of its inputs instead of accumulating."""
        if call.kind != "autograd.grad" or not isinstance(result, tuple) or self._pass is None:
            return
        if self._pass.in_transform:  # stacked per grad_output, or wrapped: not kept
            return
        index = self._pass.index
        for tensor, grad in zip(call.inputs, result, strict=False):
            if grad is None or not isinstance(tensor, Tensor):
                continue
            if tensor.grad_fn is None:
                self.leaf(tensor).grads[index] = grad
                continue
            produced = self._book.producer_of(tensor)
            if produced is not None and produced[1] == 0 and produced[0].activations is not None:
                self.state.op_grads.setdefault(produced[0], {}).setdefault(index, grad)

    # ---- the log --------------------------------------------------------------------------

    def finish(self, log: ModelLog) -> None:
        """Fill the log's gradients, leaves, backward passes and graph, with its records
        (on their first read when the log leaves them to it); let go of the autograd
        graph now, and of every tensor not kept in the log."""
        with torch._C.DisableTorchFunction():
            self._credit_watched()
            step = end_step(self.state, log, self._recorder.names)
        self.state = CaptureState()
        # the log's nodes list (reading the log's own fields from its fill would fill it),
        # the log weakly (it holds the fill)
        fill_after(log, partial(_fill_labels, step, weakref.ref(log), self._book.nodes))


def _fill_labels(step: StepEnd, log_ref: weakref.ref[ModelLog], nodes: list[OpRecord]) -> None:
    log = log_ref()
    if log is not None:
        ops = [n for n in nodes if n.kind == "op"]
        sinks = [n for n in nodes if n.kind == "output"]
        with torch._C.DisableTorchFunction():
            fill_log_labels(step, log, ops, sinks)
