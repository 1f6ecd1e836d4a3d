"""Which node produced each tensor: sources made on first use, the inputs of a call
resolved to their producers (input_resolution.py), the producers (and saved values) of a
call's outputs, and the names of dtypes and devices.

The recorder's (recorder.py) member `book`: the per-op path asks it to resolve the inputs
and to note the outputs of each call. Everything here runs inside the recorder's
bookkeeping, where no torch function reaches a user's mode.
"""

from __future__ import annotations

import sys
import weakref
from collections.abc import Callable
from typing import Any

import torch
from torch.nn.parameter import is_lazy

from lens_widget.capture.call_site import find_call_site
from lens_widget.capture.input_resolution import InputResolution
from lens_widget.capture.labels_on_read import place_pending, source_placer, unique_label
from lens_widget.capture.links import Layers
from lens_widget.capture.model_names import ModelNames
from lens_widget.capture.module_tracker import ModuleTracker
from lens_widget.capture.op_details import (
    SOURCE,
    DetailNames,
    Pending,
    dtype_name,
    fill_details,
)
from lens_widget.capture.save_policy import SavePolicy
from lens_widget.capture.saved_values import SavedValues
from lens_widget.capture.source_records import new_source_record
from lens_widget.capture.transforms import (
    inner_tensors,
    is_wrapped,
    plain_tensor,
)
from lens_widget.log.records import NodeKind, OpRecord

# What a source's node is noted with by the features that watch sources (features.py)
SourceHook = Callable[[torch.Tensor, OpRecord], None]

Tensor = torch.Tensor
Parameter = torch.nn.Parameter


def nested_tensor_error(tensor: Tensor) -> TypeError:
    """The error for a nested tensor (torch.nested), which the log cannot describe."""
    layout = str(tensor.layout).removeprefix("torch.")
    return TypeError(
        f"lens_widget cannot trace nested tensors (torch.nested, layout {layout}): their "
        "samples have different shapes, and every node of the log has one; pad them "
        "(nt.to_padded_tensor(0.0)) before the traced call"
    )


class UninitializedInput(Exception):
    """A call reads a lazy module's parameter before its first forward gave it a shape
    (``nn.LazyLinear``'s ``weight.data = torch.empty(...)``): a node needs a shape."""


class TensorBook(InputResolution):
    """The tensor -> node bookkeeping of a trace."""

    tracker: ModuleTracker  # set by the recorder: where sources are first used

    def __init__(self, names: ModelNames, save: SavePolicy, track_versions: bool) -> None:
        """`save`: which outputs are kept; a save predicate reads every record as it is
        made, so then records are filled at once, not after the pass (op_details.py)."""
        self.save = save
        self.keeps_nothing = save.keeps_nothing
        self.track_versions = track_versions
        self.values = SavedValues(track_versions)
        self.nodes: list[OpRecord] = []
        # id(tensor) -> (weakref, node, output index, version when produced)
        self._producers: dict[int, tuple[Any, OpRecord, int, int]] = {}
        self._params = names.tensors
        # source texts, device names, parameters' ParamUses: what details are named from
        self.details = DetailNames()
        # Records whose links, source line and output metadata are filled after the pass
        # (op_details.py); None when a save predicate reads each record as its op runs.
        self.pending: list[Pending] | None = None if save.asks_predicate else []
        self._n_consts = 0
        # label -> node, filled as nodes are made (while they are in the cache: an index
        # made after the pass would read every node again)
        self.by_label: dict[str, OpRecord] = {}
        # Layers and labels (links.py); given after the pass when nothing reads them during
        # it (labels_later, set by the recorder; build_log ends it), else as nodes are made.
        self.layers = Layers(self.by_label)
        # Gives a node whose label was left for later its label, as if given when it was made
        # (fill_details calls it in the order the nodes were made)
        self.place = source_placer(self.layers, self.by_label)
        self.labels_later = False
        # What add_source tells the features that watch sources (the recorder sets them)
        self.source_hooks: tuple[SourceHook, ...] = ()
        # id(x.data) -> (weakref to it, weakref to x): a write through it changes x too.
        self.aliases: dict[int, tuple[Any, Any]] = {}
        # In a section: (tensor from before it, the function first using it) -> (input name,
        # source site), for tensors its own code uses outside every module call.
        self.outside_input: Callable[[Tensor, Callable[..., Any]], tuple[str, int]] | None = None
        # Inside torch.distributed: the node of a tensor made where no mode sees it (an
        # engine's unsharded parameter, a DTensor wrapping a known local tensor), before it
        # would become a const (distributed_capture.py)
        self.late_source: Callable[[Tensor], tuple[OpRecord, int] | None] | None = None

    def unique_label(self, name: str) -> str:
        """`name`, or `name#2`, `name#3`... when a node already has it (a param named "output")."""
        return unique_label(self.by_label, name)

    def label_now(self) -> None:
        """Give the labels left for later now, and each node's as it is made from here on
        (something reads them during the pass: a checkpoint's recomputation matched to the
        forward ops it repeats)."""
        if self.labels_later and self.pending:
            place_pending(self.layers, self.by_label, self.pending)
        self.labels_later = False

    def add_source(self, tensor: Tensor, kind: NodeKind, name: str, source: int = 0) -> OpRecord:
        """A source node; its source line and metadata are filled with the ops' (op_details),
        its label made unique among the nodes before it then too when labels_later."""
        later = self.labels_later
        if not later and name in self.by_label:
            name = self.unique_label(name)
        node = new_source_record(
            name, kind, len(self.nodes), self.tracker.stack, tensor.requires_grad
        )
        entry = (node, source, tensor.shape, tensor.dtype, tensor.device, SOURCE if later else None)
        if self.pending is None:
            fill_details(self.details, [entry], self.place)
        else:
            self.pending.append(entry)
        self.nodes.append(node)
        if not later:
            self.by_label[name] = node
        if self.keeps_nothing:
            self._producers[id(tensor)] = (weakref.ref(tensor), node, 0, -1)
        else:  # sources are references: free to keep
            version = self._version(tensor)
            self.values.keep_source(node, tensor, version, kind == "input", later)
            self._producers[id(tensor)] = (weakref.ref(tensor), node, 0, version)
        for hook in self.source_hooks:
            hook(tensor, node)
        return node

    def alias(self, tensor: Tensor, of: Tensor) -> None:
        """`tensor` wraps `of`'s memory and version counter, made where no mode sees it
        (``nn.Parameter(of)``, new_parameters.py): it reads as the node that produced `of`."""
        produced = self.producer_of(of)
        if produced is not None and not self.knows(tensor):
            self.point(tensor, *produced)

    def point(self, tensor: Tensor, node: OpRecord, index: int) -> None:
        """From now on `tensor` reads as output `index` of `node`, at its current version
        (off the per-op path: a tensor a wrap or an alias write made, which no call returned)."""
        version = -1 if self.keeps_nothing else self._version(tensor)
        self._producers[id(tensor)] = (weakref.ref(tensor), node, index, version)

    def materialize(
        self, func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any] | None
    ) -> Any:
        """A lazy module's parameter gets its data (``weight.data = torch.empty(shape)``) on
        its first forward: not an op of the model, so not recorded. Saved values sharing its
        placeholder's memory keep their value; one made in the trace then reads as its data."""
        lazy: list[Tensor] = [a for a in args if is_lazy(a)]
        with torch._C.DisableTorchFunction():
            if not self.keeps_nothing:
                self.values.before_write(lazy)
        out = func(*args, **kwargs) if kwargs else func(*args)
        if getattr(func, "__name__", "") == "__set__" and len(args) == 2:  # Tensor.data
            with torch._C.DisableTorchFunction():
                self.alias(args[0], args[1])
        return out

    def knows(self, tensor: Tensor) -> bool:
        """A recorded node produced it, or it is a parameter or buffer of the traced modules."""
        return self.producer_of(tensor) is not None or id(tensor) in self._params

    def _source_for(self, tensor: Tensor, func: Callable[..., Any]) -> tuple[OpRecord, int]:
        """The node (and which of its outputs) a tensor no recorded op returned comes from."""
        if is_lazy(tensor):
            raise UninitializedInput
        if is_wrapped(tensor):
            # Wrapped by a torch.func transform: the tensor inside it has a producer, or is
            # the source (transforms.py).
            inner = tensor
            for inner in inner_tensors(tensor):
                produced = self.producer_of(inner)
                if produced is not None:
                    return produced
            tensor = inner
        known = self._params.get(id(tensor))
        if known is not None:
            return self.add_source(tensor, known[1], known[0]), 0  # pyright: ignore[reportArgumentType]  # _params holds (name, kind) with kind a NodeKind
        late = self.late_source
        if late is not None and (found := late(tensor)) is not None:
            return found
        outside_input = self.outside_input
        if outside_input is not None and not self.tracker.in_module_call:
            # A section's own code uses a tensor made before it: one of the section's inputs.
            name, site = outside_input(tensor, func)
            return self.add_source(tensor, "input", name, site), 0
        # Made where no mode sees it (torch.Tensor([...]), torch.from_numpy, a tensor kept
        # from outside the forward): named after the user line that first uses it.
        self._n_consts += 1
        _, site = find_call_site(sys._getframe(0))
        return self.add_source(tensor, "const", f"const_{self._n_consts}", site), 0

    def note_transform_outputs(self, node: OpRecord, outputs: tuple[Tensor, ...]) -> None:
        """Outputs wrapped by a torch.func transform: not kept (only meaningful inside it),
        and the plain tensor in each is this op's, unless known already (transforms.py).
        The op is marked as one with no values to keep (OpRecord.no_values)."""
        wrapped = False
        for i, tensor in enumerate(outputs):
            if is_wrapped(tensor):
                wrapped = True
                plain = plain_tensor(tensor)
                if self.producer_of(plain) is None:
                    self.point(plain, node, i)
        if not wrapped:
            return
        node.replay[0].in_transform = True  # pyright: ignore[reportOptionalMemberAccess, reportOptionalSubscript]  # an op's replay is set before its outputs are noted
        if node.activations is not None:
            node.activations = None
            saved = self.values.saved
            if saved and saved[-1][0] is node:
                saved.pop()

    def note_outputs(
        self, node: OpRecord, outputs: tuple[Tensor, ...], base: str, passes: int
    ) -> None:
        """Producers of the op's output tensors, and the outputs kept if the policy says so
        (`base` and `passes`: the op's layer and pass, which a save name or predicate reads)."""
        if self.keeps_nothing:  # versions matter only to saved values
            for i, tensor in enumerate(outputs):
                self._producers[id(tensor)] = (weakref.ref(tensor), node, i, -1)
            return
        if len(outputs) == 1:  # the common case, without a loop
            tensor = outputs[0]
            try:
                versions: Any = tensor._version if self.track_versions else -1
            except RuntimeError:  # an inference tensor
                versions = -1
            if versions < 0:
                versions = self.values.version(tensor)
            self._producers[id(tensor)] = (weakref.ref(tensor), node, 0, versions)
        else:
            versions = tuple([self._version(t) for t in outputs])
            for i, tensor in enumerate(outputs):
                self._producers[id(tensor)] = (weakref.ref(tensor), node, i, versions[i])
        save = self.save
        if save.keeps_all:
            if len(outputs) == 1 and not (out := outputs[0]).requires_grad and type(out) is Tensor:
                node.activations = outputs  # SavedValues.keep, inlined for the common case
                self.values.saved.append((node, outputs, versions))
            else:
                self.values.keep(node, outputs, versions)
        else:
            # A name list or a predicate sees the label with its pass, also on a first pass.
            label, node.label = node.label, f"{base}:{passes}"
            keep = save.keeps(node)
            node.label = label
            if keep:
                self.values.keep(node, outputs, versions)

    def note_alias_writes(self, node: OpRecord, outputs: Any, writes: list[Tensor]) -> None:
        """A write through `x.data` changed x, which no version shows: x's value is now this
        op's output, so later reads of x link here."""
        for written in writes:
            entry = self.aliases.get(id(written))
            base = entry[1]() if entry is not None and entry[0]() is written else None
            index = next((i for i, t in enumerate(outputs) if t is written), None)
            if base is not None and index is not None:
                self.point(base, node, index)

    def replace_output(self, node: OpRecord, index: int, new: Tensor) -> None:
        """Output `index` of `node` is now `new` (an intervention replaced it): later reads of
        `new` link to it, and a value the node keeps becomes `new`."""
        self.point(new, node, index)
        saved = node.activations
        if saved is not None:
            outputs = (*saved[:index], new, *saved[index + 1 :])
            versions: Any = (
                (-1 if self.keeps_nothing else self._version(new))
                if len(outputs) == 1
                else tuple(self._version(t) for t in outputs)
            )
            self.values.keep(node, outputs, versions)

    def producer_of(self, tensor: Tensor) -> tuple[OpRecord, int] | None:
        entry = self._producers.get(id(tensor))
        if entry is not None and entry[0]() is tensor:
            return entry[1], entry[2]
        return None

    dtype_name = staticmethod(dtype_name)
