"""The optional parts of the per-op path, plugged into one Recorder: `Feature` is what a
feature may hook, `Steps` composes the steps of the attached features.

A feature overrides the hooks it needs and nothing else; the recorder (recorder.py, whose
docstring maps the per-op path) calls each overridden hook at its step, in the order the
features were attached. A hook no attached feature overrides costs nothing per op: each
step is bound once, at `Recorder.attach`, to the book's own method when no feature hooks
it, and to the composed one here when some does. Features today:

- ``Timing`` (op_timing.py): every call careful, the torch call timed (`call`), the time
  put on the record (`result`).
- ``Intervening`` (intervening.py): every call careful, an op's outputs replaced before they
  are noted (`replace_outputs`, `result`) and a module's output after it returns
  (`module_output`).
- ``BackwardCapture`` (backward_capture.py, gradients): each op's outputs, those that
  require grad and those that may get an autograd node later (`outputs_noted`), the
  autograd leaves among the sources (`source_added`).
- ``Offload`` (offload.py): the saved values past a memory budget, written to disk by a
  writer thread and replaced by views of the files (`outputs_noted`, `source_added`).
- ``DistributedCapture`` (distributed_capture.py): engine calls, collectives and sharded
  parameters inside torch.distributed (`outputs_noted`, `source_added`; every call careful).
- ``BackgroundStats`` (monitor/background_stats.py, given by lw.Monitor through
  ``Tracing(features=...)``): each saved first output (`outputs_noted`) and each op or
  parameter gradient (`grad_noted`) summarised on a worker thread while the step runs.

Each is one more Feature attached in session.py, not a recorder subclass.

A feature holds the recorder and its book weakly (``weakref.proxy``): they hold its
hooks, and a cycle would keep a trace's saved values alive until the cyclic collector runs.

Where hooks run: on the careful path inside the recorder's bookkeeping, with torch
functions disabled (nothing a hook calls is recorded or reaches a user's mode). On the fast
path `source_added` and `outputs_noted` run without that, seeing only plain
tensors: they may read attributes (``requires_grad``, ``grad_fn``) but call no torch
function. `module_output` runs at the user's level, where the mode is active: a hook that
calls torch functions disables them first (``torch._C.DisableTorchFunction()``, as
intervening.py does).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Protocol

import torch

from lens_widget.capture.func_facts import FuncFacts
from lens_widget.capture.tensor_book import TensorBook
from lens_widget.log.records import OpRecord

Tensor = torch.Tensor


def plain_call(func: Callable[..., Any], args: tuple[Any, ...], kwargs: Any) -> Any:
    """The torch call itself, when no feature makes it."""
    return func(*args, **kwargs) if kwargs else func(*args)


class Feature:
    """An optional part of the per-op path. Override only the hooks the feature needs; the
    recorder calls them in this order for each recorded call:

    1. `call` makes the torch call (careful path; one feature at most);
    2. `replace_outputs` once the op's record is made, before its outputs are noted (the
       outputs of a torch call on the careful path only, not a module's identity op);
    3. `outputs_noted` once the book has noted the producers and saved values;
    4. `result` after the record, with the value the user's code gets (careful path).

    `source_added` runs when a source node is made (a parameter, an input, a constant),
    `module_output` when a module call returns, `grad_noted` when a backward pass hands
    over a gradient the log keeps (a trace keeping gradients). `careful`: every
    call of the trace takes the careful path (the torch call can be wrapped and its result
    replaced there).
    """

    careful: ClassVar[bool] = False
    # Whether a hook reads a record's label, layer or pass during the pass; False lets the
    # trace give them after it (the pass's ops and sources keep their keys till then).
    reads_labels: ClassVar[bool] = True

    def call(self, func: Callable[..., Any], args: tuple[Any, ...], kwargs: Any) -> Any:
        """Make the torch call and return what it returned (careful path)."""
        return plain_call(func, args, kwargs)

    def replace_outputs(
        self, node: OpRecord, outputs: tuple[Tensor, ...], base: str, passes: int
    ) -> tuple[Tensor, ...]:
        """The outputs to note for `node` (layer `base`, pass `passes`) instead of those
        the call returned."""
        return outputs

    def outputs_noted(self, node: OpRecord, outputs: tuple[Tensor, ...]) -> None:
        """`node`'s outputs, as the call returned them, now noted by the book."""

    def result(self, node: OpRecord | None, out: Any) -> Any:
        """What the user's code gets from the call (`node`: its record, None if the call
        returned no tensor)."""
        return out

    def source_added(self, tensor: Tensor, node: OpRecord) -> None:
        """A source node was made for `tensor`."""

    def module_output(self, address: str, pass_index: int, output: Any) -> Any:
        """What the module call's caller gets (the call did not raise)."""
        return output

    def grad_noted(self, grad: Tensor) -> None:
        """A gradient the log keeps, as a backward pass hands it over: of an op's first
        output, or of an autograd leaf (a parameter's)."""


class BackwardRunner(Protocol):
    """Runs the backward calls of a trace that keeps gradients (backward_capture.py): the
    recorder hands it each one (not a Feature hook: it replaces the recording of the call)."""

    def run(
        self,
        facts: FuncFacts,
        func: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any] | None,
        frame: Any,
    ) -> Any: ...


# What a CallInterceptor answers for a call it leaves to the recorder
NOT_HANDLED: Any = object()


class CallInterceptor(Protocol):
    """Sees each careful call before the recorder does, inside torch.distributed
    (distributed_capture.py): runs the engine's calls and collectives itself and returns
    their result, or returns NOT_HANDLED."""

    def intercept(
        self,
        facts: FuncFacts,
        func: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any] | None,
        frame: Any,
    ) -> Any: ...

    def after_backward(self) -> None:
        """A traced backward call returned."""


def _hooks(features: Sequence[Feature], name: str) -> tuple[Callable[..., Any], ...]:
    """The features' bound `name` hooks, for those that override it."""
    default = getattr(Feature, name)
    return tuple(getattr(f, name) for f in features if getattr(type(f), name) is not default)


class Steps:
    """The recorder's hookable steps composed with the hooks of a set of features; the
    recorder binds the book's own method instead where no feature hooks a step. Holds the
    book and the features' hooks, never the recorder (which holds this: no cycle)."""

    def __init__(self, book: TensorBook, features: Sequence[Feature]) -> None:
        self._book = book
        self.careful = any(f.careful for f in features)
        self._replace_outputs = _hooks(features, "replace_outputs")
        self._outputs_noted = _hooks(features, "outputs_noted")
        self.results = _hooks(features, "result")
        self.source_added = _hooks(features, "source_added")
        self.module_output = _hooks(features, "module_output")
        self.grad_noted = _hooks(features, "grad_noted")
        calls = _hooks(features, "call")
        if len(calls) > 1:
            raise ValueError("lens_widget: two features make the torch call")
        self.call = calls[0] if calls else plain_call
        # Hooks only the careful path runs: a feature with one makes every call careful.
        self.wraps_result = bool(self.results or self._replace_outputs)
        if (self.wraps_result or calls) and not self.careful:
            raise ValueError("lens_widget: a feature hooking the call or its result is careful")
        # Set by the recorder while it records the result of a torch call (careful path):
        # replace_outputs applies to those only.
        self.in_call = False
        # Whether a feature hooks these steps (no attribute here holds a bound method of
        # this object: that would be a cycle keeping the book's saved values)
        self.hooks_outputs = bool(self._replace_outputs or self._outputs_noted)

    def note_outputs(
        self, node: OpRecord, outputs: tuple[Tensor, ...], base: str, passes: int
    ) -> None:
        noted = outputs
        if self.in_call:
            for hook in self._replace_outputs:
                noted = hook(node, noted, base, passes)
        self._book.note_outputs(node, noted, base, passes)
        for hook in self._outputs_noted:
            hook(node, outputs)
