"""The TorchFunctionMode that records every torch call of a forward pass.

A mode (rather than only a Tensor subclass) also sees factory calls such as
``torch.arange`` that take no tensor, and never changes the type of the user's tensors.

Everything here runs once per op, so it is written for speed: per-function facts are
cached, a call site is an int, records are built positionally and complete (labels, links,
source text; only the first pass of a repeating layer is renamed afterwards, links.py),
and saving a value appends to a list.
The bookkeeping runs with torch functions disabled, so a user's own mode or Tensor
subclass around the trace sees exactly the calls of a plain forward, and nothing here
reads a tensor's values (no device synchronisation).
"""

from __future__ import annotations

import dataclasses
import sys
import weakref
from collections.abc import Callable
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from lens_widget.capture.arguments import (
    ALL_SLOTS,
    LEAF_TYPES,
    MAX_FAST_ARGS,
    POSITION_TEXT,
    SLOTS,
    scan_call,
    tensor_leaves,
)
from lens_widget.capture.call_site import SourceTexts, find_call_site
from lens_widget.capture.func_facts import FACTS, IDENTITY_FACTS, FuncFacts, identity
from lens_widget.capture.links import Layer, ParentRefs, link_parents
from lens_widget.capture.model_names import ModelNames
from lens_widget.capture.module_tracker import ModuleTracker
from lens_widget.capture.replay_call import ReplayCall
from lens_widget.capture.save_policy import SavePolicy
from lens_widget.capture.saved_values import SavedValues
from lens_widget.log.records import NodeKind, OpRecord, ParamUse

Tensor = torch.Tensor
Parameter = torch.nn.Parameter

# Records are built with positional arguments (twice as fast as keywords): in this order.
_RECORD_FIELDS = (
    "label", "kind", "func", "index", "layer", "pass_index", "n_passes", "module",
    "module_stack", "shape", "dtype", "device", "nbytes", "shapes", "params", "parents",
    "parent_args", "children", "from_input", "feeds_output", "source", "source_code",
    "inplace", "failed", "error", "activations", "replay",
)  # fmt: skip
if tuple(f.name for f in dataclasses.fields(OpRecord)) != _RECORD_FIELDS:
    raise ImportError("lens_widget: OpRecord's fields changed; update recorder._RECORD_FIELDS")

_DTYPE_NAMES = {
    dtype: str(dtype).removeprefix("torch.")
    for dtype in vars(torch).values()
    if isinstance(dtype, torch.dtype)
}
_NO_KWARGS: dict[str, Any] = {}  # read only
_any_autocast = torch._C._is_any_autocast_enabled
_mode_stack_depth = torch._C._len_torch_function_stack
_AUTOCAST_DEVICES = ("cpu", "cuda", "xpu", "mps", "hpu")


def _may_write(facts: FuncFacts, args: tuple[Any, ...], kwargs: dict[str, Any] | None) -> bool:
    """An `out=` or `inplace=True` argument (F.relu(x, inplace=True), torch.add(a, b, out=c))."""
    if kwargs and ("out" in kwargs or kwargs.get("inplace") is True):
        return True
    position = facts.inplace_position
    return position is not None and len(args) > position and args[position] is True


def _autocast_state() -> tuple[tuple[str, torch.dtype], ...]:
    """(device type, dtype) of every autocast context that is on."""
    return tuple(
        (device, torch.get_autocast_dtype(device))
        for device in _AUTOCAST_DEVICES
        if torch.is_autocast_enabled(device)
    )


class Recorder(TorchFunctionMode):
    """Records each torch call as an OpRecord; sources are created on first use."""

    def __init__(self, model: torch.nn.Module, save: SavePolicy, track_versions: bool) -> None:
        super().__init__()
        self.save = save
        self.keeps_nothing = save.keeps_nothing
        self.track_versions = track_versions
        self.values = SavedValues(track_versions)
        self.nodes: list[OpRecord] = []
        self.ops: list[OpRecord] = []  # the nodes of kind "op", in order
        self.failed: OpRecord | None = None
        self.names = names = ModelNames(model)
        self.tracker = ModuleTracker(model, names, self._on_module_output, self.ops)
        # Bookkeeping runs inside this: invisible to the user's modes and Tensor subclasses.
        self.quiet = torch._C.DisableTorchFunction()
        # (module path, function, call path) -> its layer; layers that ran more than once
        self._layers: dict[Any, Layer] = {}
        self.repeated: list[Layer] = []
        self._func_counts: dict[str, int] = {}
        # id(tensor) -> (weakref, node, output index, version when produced)
        self._producers: dict[int, tuple[Any, OpRecord, int, int]] = {}
        self._params = names.tensors
        self._param_uses: dict[OpRecord, ParamUse] = {}
        self._n_consts = 0
        self._labels: set[str] = set()  # of sources and sinks; op labels cannot clash
        self._device_names: dict[torch.device, str] = {}
        self.source_text = SourceTexts()
        self._texts = self.source_text.texts  # its cache: read directly on the hot path
        # (module address, pass, the nodes that produced that module call's output tensors)
        self.module_outputs: list[tuple[str, int, list[OpRecord]]] = []

    # ---- sources ---------------------------------------------------------------------

    def unique_label(self, name: str) -> str:
        """`name`, or `name#2`, `name#3`... when a node already has it (a param named "output")."""
        label, n = name, 1
        while label in self._labels:
            n += 1
            label = f"{name}#{n}"
        self._labels.add(label)
        return label

    def add_source(self, tensor: Tensor, kind: NodeKind, name: str, source: int = 0) -> OpRecord:
        labels = self._labels
        if name in labels:
            name = self.unique_label(name)
        else:
            labels.add(name)
        stack = self.tracker.stack
        shape = tuple(tensor.shape)
        numel = tensor.numel()
        where, code = self.source_text(source)
        node = OpRecord(
            name, kind, name, len(self.nodes), name, 1, 1, stack[-1][0] if stack else "",
            stack, shape, self._dtype_name(tensor.dtype), self._device_name(tensor.device),
            numel * tensor.element_size(), (shape,), (), [], [], [], kind == "input", False,
            where, code, False, False, None, None, None,
        )  # fmt: skip
        self.nodes.append(node)
        version = self._version(tensor)
        if not self.keeps_nothing:  # sources are references: free to keep
            self.values.keep(node, (tensor,), version)
        self._producers[id(tensor)] = (weakref.ref(tensor), node, 0, version)
        if kind == "param" or kind == "buffer":
            # ParamUse's generated __new__ is slow Python; the tuple is built directly.
            self._param_uses[node] = tuple.__new__(ParamUse, (name, shape, numel))
        return node

    def _source_for(self, tensor: Tensor) -> OpRecord:
        known = self._params.get(id(tensor))
        if known is not None:
            return self.add_source(tensor, known[1], known[0])  # type: ignore[arg-type]
        # Made where no mode sees it (torch.Tensor([...]), torch.from_numpy, a tensor kept
        # from outside the forward): named after the user line that first uses it.
        self._n_consts += 1
        _, site = find_call_site(sys._getframe(0))
        return self.add_source(tensor, "const", f"const_{self._n_consts}", site)

    def producer_of(self, tensor: Tensor) -> tuple[OpRecord, int] | None:
        entry = self._producers.get(id(tensor))
        if entry is not None and entry[0]() is tensor:
            return entry[1], entry[2]
        return None

    # ---- the hook --------------------------------------------------------------------

    def __torch_function__(
        self,
        func: Callable[..., Any],
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        facts = FACTS.get(func)
        if facts is None:
            facts = FACTS[func] = FuncFacts(func)
        if facts.metadata:
            return func(*args, **kwargs) if kwargs else func(*args)
        frame = sys._getframe(1)
        # The fast path: positional plain tensors and scalars, no user mode around the trace.
        # Then no call made by the bookkeeping can reach a mode or a Tensor subclass, and it
        # runs without DisableTorchFunction.
        if facts.special or _mode_stack_depth() or _may_write(facts, args, kwargs):
            return self._call_quietly(facts, func, args, kwargs, frame)
        # Inputs are resolved before the call: an in-place op changes their versions.
        inputs = self._resolve_plain_inputs(func, args, kwargs)
        if inputs is None:
            return self._call_quietly(facts, func, args, kwargs, frame)
        if _any_autocast():
            inputs[0].autocast = _autocast_state()
        try:
            out = func(*args, **kwargs) if kwargs else func(*args)
        except BaseException as err:
            with self.quiet:
                self._record_failure(facts, inputs, (), err, frame)
            raise
        if type(out) is not Tensor:
            with self.quiet:
                return self._record_result(facts, inputs, (), args, out, frame)
        self._record(facts, inputs, (out,), (), frame)
        return out

    def _call_quietly(
        self,
        facts: FuncFacts,
        func: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any] | None,
        frame: Any,
    ) -> Any:
        """Any call: keywords, containers, Tensor subclasses, writes, random numbers, a
        user's mode around the trace. The bookkeeping runs with torch functions disabled."""
        with self.quiet:
            # Inputs are resolved before the call: an in-place op changes their versions.
            inputs = self._resolve_inputs(func, args, kwargs)
            writes = self._before_call(facts, args, kwargs, inputs[0])
            if _any_autocast():
                inputs[0].autocast = _autocast_state()
        try:
            out = func(*args, **kwargs) if kwargs else func(*args)
        except BaseException as err:
            with self.quiet:
                self._record_failure(facts, inputs, writes, err, frame)
            raise
        with self.quiet:
            return self._record_result(facts, inputs, writes, args, out, frame)

    def _record_failure(
        self, facts: FuncFacts, inputs: Any, writes: Any, err: BaseException, frame: Any
    ) -> None:
        node = self._record(facts, inputs, (), writes, frame)
        node.failed = True
        node.error = f"{type(err).__name__}: {err}"
        self.failed = node

    def _record_result(
        self,
        facts: FuncFacts,
        inputs: Any,
        writes: Any,
        args: tuple[Any, ...],
        out: Any,
        frame: Any,
    ) -> Any:
        """Record a call that returned `out` (if it returned tensors); give `out` back."""
        if type(out) is Tensor:
            outputs: tuple[Tensor, ...] = (out,)
        elif out is None and facts.name == "__setitem__":
            outputs = (args[0],)  # x[i] = v: the op's result is the written tensor
        elif isinstance(out, (tuple, list, Tensor)):
            outputs = tuple(tensor_leaves(out))
        else:
            outputs = ()
        if outputs:
            self._record(facts, inputs, outputs, writes, frame)
        return out

    def _before_call(
        self, facts: FuncFacts, args: tuple[Any, ...], kwargs: Any, replay: ReplayCall
    ) -> list[Tensor]:
        """For calls that may write or draw random numbers: copy saved values about to be
        overwritten, keep the RNG state; the tensors the call writes."""
        writes = facts.mutation.targets(args, kwargs or _NO_KWARGS)
        if writes:
            self.values.before_write(writes)
        if facts.random and not self.keeps_nothing:
            replay.rng_state = torch.get_rng_state()
            if torch.cuda.is_initialized():
                replay.cuda_rng_states = torch.cuda.get_rng_state_all()
        return writes

    def _resolve_inputs(
        self, func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any] | None
    ) -> tuple[ReplayCall, ParentRefs, tuple[ParamUse, ...]]:
        """The call's replay template, its tensor arguments' producers, the params it reads."""
        inputs = self._resolve_plain_inputs(func, args, kwargs)
        return inputs if inputs is not None else self._resolve_any_inputs(func, args, kwargs)

    def _resolve_plain_inputs(
        self, func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any] | None
    ) -> tuple[ReplayCall, ParentRefs, tuple[ParamUse, ...]] | None:
        """_resolve_inputs for positional plain tensors and scalars, keywords only scalars (the
        hot path); None for any other call."""
        if len(args) > MAX_FAST_ARGS:
            return None
        if kwargs:
            for value in kwargs.values():
                if type(value) not in LEAF_TYPES:
                    return None
            kwargs = dict(kwargs)
        producers = self._producers
        parent_refs: ParentRefs = []
        params: tuple[ParamUse, ...] = ()
        for i, value in enumerate(args):
            kind = type(value)
            if kind is not Tensor and kind is not Parameter:
                if kind in LEAF_TYPES:
                    continue
                return None
            entry = producers.get(id(value))
            if entry is not None and entry[0]() is value:
                parent = entry[1]
                parent_refs.append((POSITION_TEXT[i], parent, entry[2]))
            else:
                parent = self._source_for(value)
                parent_refs.append((POSITION_TEXT[i], parent, 0))
            if parent.kind != "op":
                use = self._param_uses.get(parent)
                if use is not None:
                    params = (*params, use)
        n_tensors = len(parent_refs)
        if n_tensors == len(args):  # only tensors: a shared template
            template: tuple[Any, ...] = ALL_SLOTS[n_tensors]
        elif n_tensors == 0:
            template = args
        else:
            slots = iter(SLOTS)
            template = tuple([v if type(v) in LEAF_TYPES else next(slots) for v in args])
        replay = ReplayCall(func, template, kwargs or {})
        if not self.keeps_nothing:  # a write matters only to saved values
            self._check_unseen_writes(replay, parent_refs, args)
        return replay, parent_refs, params

    def _check_unseen_writes(
        self, replay: ReplayCall, parent_refs: ParentRefs, tensors: tuple[Any, ...]
    ) -> None:
        """An argument written through another view since it was produced (its version
        moved): no node holds its current value, so the replay keeps a copy."""
        producers = self._producers
        literals = None
        slot = 0
        for value in tensors:
            if type(value) in LEAF_TYPES:
                continue
            entry = producers[id(value)]
            if entry[3] != self._version(value):
                literals = self._literal(literals, slot, value)
            slot += 1
        if literals is not None:
            replay.literals = literals

    def _resolve_any_inputs(
        self, func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any] | None
    ) -> tuple[ReplayCall, ParentRefs, tuple[ParamUse, ...]]:
        """_resolve_inputs for any call: nested containers, keywords, Tensor subclasses."""
        args_template, kwargs_template, found = scan_call(args, kwargs)
        parent_refs: ParentRefs = []
        params: tuple[ParamUse, ...] = ()
        literals: dict[int, Tensor] | None = None
        for slot, (position, tensor) in enumerate(found):
            parent_and_index = self.producer_of(tensor)
            if parent_and_index is not None:
                parent, output_index = parent_and_index
                version = self._producers[id(tensor)][3]
                if not self.keeps_nothing and version != self._version(tensor):
                    literals = self._literal(literals, slot, tensor)
            else:
                parent, output_index = self._source_for(tensor), 0
            use = self._param_uses.get(parent) if parent.kind != "op" else None
            if use is not None:
                params = (*params, use)
            parent_refs.append((position, parent, output_index))
        replay = ReplayCall(func, args_template, kwargs_template)
        if literals is not None:
            replay.literals = literals
        return replay, parent_refs, params

    def _version(self, tensor: Tensor) -> int:
        if self.track_versions:
            try:
                return tensor._version
            except RuntimeError:  # an inference tensor made outside the trace
                pass
        return self.values.version(tensor)

    @staticmethod
    def _literal(
        literals: dict[int, Tensor] | None, slot: int, tensor: Tensor
    ) -> dict[int, Tensor]:
        """Written through another view since it was produced: keep its value now."""
        with torch.no_grad():
            copy = tensor.detach().clone()
        if literals is None:
            return {slot: copy}
        literals[slot] = copy
        return literals

    def _record(
        self,
        facts: FuncFacts,
        inputs: tuple[ReplayCall, ParentRefs, tuple[ParamUse, ...]],
        outputs: tuple[Tensor, ...],
        writes: Any,
        frame: Any,
        outside_path: bool = False,
    ) -> OpRecord:
        """The op's record, complete but for the ``:1`` of a first pass that repeats later."""
        replay, parent_refs, params = inputs
        tracker = self.tracker
        site, source = find_call_site(frame, outside_path)
        key = (tracker.path, facts.name, site)
        layer = self._layers.get(key)
        if layer is None:
            layer = self._new_layer(key, facts.clean)
        passes = layer.passes = layer.passes + 1
        base = layer.base
        label = base if passes == 1 else f"{base}:{passes}"
        parents, parent_args, from_input = link_parents(label, parent_refs)
        where, code = self._texts.get(source) or self.source_text(source)
        stack = tracker.stack
        if outputs:
            first = outputs[0]
            shape = tuple(first.shape)
            dtype = _DTYPE_NAMES.get(first.dtype) or self._dtype_name(first.dtype)
            device = self._device_names.get(first.device) or self._device_name(first.device)
            if len(outputs) == 1:
                shapes: tuple[tuple[int, ...], ...] = (shape,)
                nbytes = first.numel() * first.element_size()
            else:
                shapes = tuple([tuple(t.shape) for t in outputs])
                nbytes = sum([t.numel() * t.element_size() for t in outputs])
        else:
            shape, dtype, device, shapes, nbytes = None, None, None, (), 0  # type: ignore[assignment]

        node = OpRecord(
            label, "op", facts.name, len(self.nodes), base, passes, 1,
            stack[-1][0] if stack else "", stack, shape, dtype, device, nbytes, shapes,  # type: ignore[arg-type]
            params, parents, parent_args, [], from_input, False, where, code, bool(writes),  # type: ignore[arg-type]
            False, None, None, (replay, parent_refs),
        )  # fmt: skip
        self.nodes.append(node)
        self.ops.append(node)
        if passes == 1:
            layer.first = node
        else:
            if passes == 2:
                self.repeated.append(layer)
            layer.later.append(node)
        if outputs:
            self._note_outputs(node, outputs, base, passes)
        return node

    def _note_outputs(
        self, node: OpRecord, outputs: tuple[Tensor, ...], base: str, passes: int
    ) -> None:
        """Producers of the op's output tensors, and the outputs kept if the policy says so."""
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
            self.values.keep(node, outputs, versions)
        elif not self.keeps_nothing:
            # A name list or a predicate sees the label with its pass, also on a first pass.
            label, node.label = node.label, f"{base}:{passes}"
            keep = save.keeps(node)
            node.label = label
            if keep:
                self.values.keep(node, outputs, versions)

    def _new_layer(self, key: Any, clean: str) -> Layer:
        count = self._func_counts[clean] = self._func_counts.get(clean, 0) + 1
        layer = self._layers[key] = Layer(f"{clean}_{count}_{len(self._layers) + 1}")
        return layer

    @staticmethod
    def _dtype_name(dtype: torch.dtype) -> str:
        name = _DTYPE_NAMES.get(dtype)
        return name if name is not None else str(dtype).removeprefix("torch.")

    def _device_name(self, device: torch.device) -> str:
        name = self._device_names.get(device)
        if name is None:
            name = self._device_names[device] = str(device)
        return name

    # ---- modules ---------------------------------------------------------------------

    def _on_module_output(
        self, address: str, pass_index: int, output: Any, entry: tuple[str, int] | None
    ) -> None:
        """Note which nodes a module call returned. A tensor it returns untouched (an
        nn.Identity, a skipped branch) gets an "identity" op inside the module, so the
        module is a node of the graph and the value visibly flows through it.

        `entry` is the module's (address, pass) on the tracker's stack, None for the root:
        the ops that ran inside this call are those whose module_stack holds that tuple."""
        nodes = []
        depth = len(self.tracker.stack)
        with self.quiet:  # runs at the user's level: nothing here may reach a mode
            leaves = (output,) if type(output) is Tensor else tensor_leaves(output)
            for tensor in leaves:
                produced = self._producers.get(id(tensor))
                node = produced[1] if produced is not None and produced[0]() is tensor else None
                if entry is not None and (
                    node is None
                    or len(node.module_stack) < depth
                    or node.module_stack[depth - 1] is not entry
                ):
                    inputs = self._resolve_inputs(identity, (tensor,), None)
                    # Named after the line that called the module, outside the module's body.
                    frame = sys._getframe(0)
                    node = self._record(IDENTITY_FACTS, inputs, (tensor,), (), frame, True)
                if node is not None:
                    nodes.append(node)
        self.module_outputs.append((address, pass_index, nodes))
