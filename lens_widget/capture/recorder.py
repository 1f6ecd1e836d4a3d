"""The TorchFunctionMode that records every torch call of a forward pass.

A mode (rather than only a Tensor subclass) also sees factory calls such as
``torch.arange`` that take no tensor, and never changes the type of the user's tensors.

Everything here runs once per op, so it is written for speed: per-function facts are
cached, a call site is an int, records are built positionally, saving a value appends to
a list, and labels, links and source text are finished after the pass (trace.py).
The bookkeeping runs with torch functions disabled, so a user's own mode or Tensor
subclass around the trace sees exactly the calls of a plain forward, and nothing here
reads a tensor's values (no device synchronisation).
"""

from __future__ import annotations

import dataclasses
import sys
import weakref
from collections.abc import Callable
from types import MappingProxyType
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from lens_widget.capture.arguments import (
    LEAF_TYPES,
    POSITIONS,
    scan_call,
    tensor_leaves,
    tensor_slot,
)
from lens_widget.capture.call_site import SourceTexts, find_call_site
from lens_widget.capture.func_facts import FACTS, IDENTITY_FACTS, FuncFacts, identity
from lens_widget.capture.model_names import ModelNames
from lens_widget.capture.module_tracker import ModuleTracker
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
_AUTOCAST_DEVICES = ("cpu", "cuda", "xpu", "mps", "hpu")


def _autocast_state() -> tuple[tuple[str, torch.dtype], ...]:
    """(device type, dtype) of every autocast context that is on."""
    return tuple(
        (device, torch.get_autocast_dtype(device))
        for device in _AUTOCAST_DEVICES
        if torch.is_autocast_enabled(device)
    )


class _Layer:
    """One layer: an op identity that repeats across passes (loops, reused modules)."""

    __slots__ = ("base", "passes")

    def __init__(self, base: str) -> None:
        self.base = base
        self.passes = 0


class ReplayCall:
    """What validate() needs: the function, its argument templates, and the state it ran in.

    Most calls set only the first three; the others read as their class defaults until set.
    """

    __slots__ = ("func", "args", "kwargs", "__dict__")

    # Tensor arguments whose value no node holds (a view changed through its base):
    # slot index -> copy of the value at call time.
    literals: dict[int, Tensor] = MappingProxyType({})  # type: ignore[assignment]
    # The generators' states before a random op: the CPU one, and the CUDA ones once CUDA
    # is in use (host-side copies: no device synchronisation).
    rng_state: Tensor | None = None
    cuda_rng_states: list[Tensor] | None = None
    # ((device type, dtype), ...) of the autocast contexts the op ran under
    autocast: tuple[tuple[str, torch.dtype], ...] = ()

    def __init__(self, func: Callable[..., Any], args: Any, kwargs: Any) -> None:
        self.func, self.args, self.kwargs = func, args, kwargs


ParentRefs = list[tuple[str, OpRecord, int]]


class Recorder(TorchFunctionMode):
    """Records each torch call as an OpRecord; sources are created on first use."""

    def __init__(self, model: torch.nn.Module, save: SavePolicy, track_versions: bool) -> None:
        super().__init__()
        self.save = save
        self.keeps_nothing = save.keeps_nothing
        self.track_versions = track_versions
        self.values = SavedValues(track_versions)
        self.nodes: list[OpRecord] = []
        # the _Layer of each op, in order: its pass count is final only after the pass
        self.op_layers: list[_Layer] = []
        self.failed: OpRecord | None = None
        self.names = names = ModelNames(model)
        self.tracker = ModuleTracker(model, names, self._on_module_output)
        # Bookkeeping runs inside this: invisible to the user's modes and Tensor subclasses.
        self.quiet = torch._C.DisableTorchFunction()
        self._layers: dict[Any, _Layer] = {}
        self._func_counts: dict[str, int] = {}
        # id(tensor) -> (weakref, node, output index, version when produced)
        self._producers: dict[int, tuple[Any, OpRecord, int, int]] = {}
        self._params = names.tensors
        self._param_uses: dict[OpRecord, ParamUse] = {}
        self._n_consts = 0
        self._labels: set[str] = set()  # of sources and sinks; op labels cannot clash
        self._device_names: dict[torch.device, str] = {}
        self._source_texts = SourceTexts()
        # (module address, pass) -> nodes that produced that module call's output tensors
        self.module_outputs: dict[tuple[str, int], list[OpRecord]] = {}

    @property
    def n_ops(self) -> int:
        return len(self.op_layers)

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
        node = OpRecord(
            name, kind, name, len(self.nodes), name, 1, 1, stack[-1][0] if stack else "",
            stack, shape, self._dtype_name(tensor.dtype), self._device_name(tensor.device),
            numel * tensor.element_size(), (shape,), (), [], [], [], False, False,
            source, "", False, False, None, None, None,  # type: ignore[arg-type]  # a call site until the pass ends
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

        with self.quiet:
            # Inputs are resolved before the call: an in-place op changes their versions.
            replay, parent_refs, params = self._resolve_inputs(func, args, kwargs)
            writes = (
                facts.mutation.targets(args, kwargs or _NO_KWARGS)
                if facts.may_write or kwargs
                else ()
            )
            if writes:
                self.values.before_write(writes)  # type: ignore[arg-type]
            if facts.random and not self.keeps_nothing:
                replay.rng_state = torch.get_rng_state()
                if torch.cuda.is_initialized():
                    replay.cuda_rng_states = torch.cuda.get_rng_state_all()
            if torch._C._is_any_autocast_enabled():
                replay.autocast = _autocast_state()

        try:
            out = func(*args, **kwargs) if kwargs else func(*args)
        except BaseException as err:
            with self.quiet:
                node = self._record(
                    facts, replay, parent_refs, params, (), writes, sys._getframe(1)
                )
                node.failed = True
                node.error = f"{type(err).__name__}: {err}"
                self.failed = node
            raise

        if type(out) is Tensor:
            outputs: tuple[Tensor, ...] = (out,)
        elif out is None and facts.name == "__setitem__":
            outputs = (args[0],)  # x[i] = v: the op's result is the written tensor
        else:
            with self.quiet:
                is_tensors = isinstance(out, (tuple, list, Tensor))
                outputs = tuple(tensor_leaves(out)) if is_tensors else ()
            if not outputs:
                return out
        with self.quiet:
            self._record(facts, replay, parent_refs, params, outputs, writes, sys._getframe(1))
        return out

    def _resolve_inputs(
        self, func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any] | None
    ) -> tuple[ReplayCall, ParentRefs, tuple[ParamUse, ...]]:
        """The call's replay template, its tensor arguments' producers, the params it reads.

        The hot path: positional plain tensors and scalars, no keywords."""
        if kwargs:
            return self._resolve_any_inputs(func, args, kwargs)
        producers = self._producers
        parent_refs: ParentRefs = []
        params: tuple[ParamUse, ...] = ()
        template: list[Any] | None = None
        literals: dict[int, Tensor] | None = None
        for i, value in enumerate(args):
            kind = type(value)
            if kind is not Tensor and kind is not Parameter:
                if kind in LEAF_TYPES:
                    continue
                return self._resolve_any_inputs(func, args, kwargs)
            slot = len(parent_refs)
            entry = producers.get(id(value))
            if entry is not None and entry[0]() is value:
                parent = entry[1]
                if entry[3] != self._version(value) and not self.keeps_nothing:
                    literals = self._literal(literals, slot, value)
                parent_refs.append((POSITIONS[i], parent, entry[2]))
            else:
                parent = self._source_for(value)
                parent_refs.append((POSITIONS[i], parent, 0))
            if parent.kind != "op":
                use = self._param_uses.get(parent)
                if use is not None:
                    params = (*params, use)
            if template is None:
                template = list(args)
            template[i] = tensor_slot(slot)
        replay = ReplayCall(func, args if template is None else tuple(template), {})
        if literals is not None:
            replay.literals = literals
        return replay, parent_refs, params

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
                if version != self._version(tensor) and not self.keeps_nothing:
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
        replay: ReplayCall,
        parent_refs: ParentRefs,
        params: tuple[ParamUse, ...],
        outputs: tuple[Tensor, ...],
        writes: Any,
        frame: Any,
        outside_path: bool = False,
    ) -> OpRecord:
        tracker = self.tracker
        site, source = find_call_site(frame, outside_path)
        key = (tracker.path, facts.name, site)
        layer = self._layers.get(key)
        if layer is None:
            count = self._func_counts[facts.clean] = self._func_counts.get(facts.clean, 0) + 1
            layer = self._layers[key] = _Layer(f"{facts.clean}_{count}_{len(self._layers) + 1}")
        layer.passes += 1
        self.op_layers.append(layer)
        stack = tracker.stack
        base = layer.base

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

        # The label gets its pass and the source its text after the pass (trace.py).
        node = OpRecord(
            base, "op", facts.name, len(self.nodes), base, layer.passes, 1,
            stack[-1][0] if stack else "", stack, shape, dtype, device, nbytes, shapes,  # type: ignore[arg-type]
            params, [], [], [], False, False, source, "", bool(writes), False, None, None,  # type: ignore[arg-type]
            (replay, parent_refs),
        )  # fmt: skip
        self.nodes.append(node)
        if not outputs:
            return node

        if len(outputs) == 1:  # the common case, without a loop
            try:
                versions: int | tuple[int, ...] = first._version if self.track_versions else -1
            except RuntimeError:
                versions = -1
            if versions < 0:  # type: ignore[operator]
                versions = self.values.version(first)
            self._producers[id(first)] = (weakref.ref(first), node, 0, versions)
        else:
            versions = tuple([self._version(t) for t in outputs])
            for i, tensor in enumerate(outputs):
                self._producers[id(tensor)] = (weakref.ref(tensor), node, i, versions[i])

        save = self.save
        if save.keeps_all:
            keep = True
        elif self.keeps_nothing:
            keep = False
        else:  # a name list or a predicate: it sees the label with its pass, the source as text
            node.label = f"{base}:{layer.passes}"
            node.source, node.source_code = self._source_texts(source)
            keep = save.keeps(node)
        if keep:
            self.values.keep(node, outputs, versions)
        return node

    @staticmethod
    def _dtype_name(dtype: torch.dtype) -> str:
        name = _DTYPE_NAMES.get(dtype)
        return name if name is not None else str(dtype).removeprefix("torch.")

    def _device_name(self, device: torch.device) -> str:
        name = self._device_names.get(device)
        if name is None:
            name = self._device_names[device] = str(device)
        return name

    def source_text(self, site: int) -> tuple[str, str]:
        """(file:line, line text) of a call site from the pass, read once per site."""
        return self._source_texts(site)

    # ---- modules ---------------------------------------------------------------------

    def _on_module_output(
        self, address: str, pass_index: int, output: Any, entry: tuple[str, int] | None
    ) -> None:
        """Note which nodes a module call returned. A tensor it returns untouched (an
        nn.Identity, a skipped branch) gets an "identity" op inside the module, so the
        module is a node of the graph and the value visibly flows through it.

        `entry` is the module's (address, pass) on the tracker's stack, None for the root."""
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
                    replay, parent_refs, params = self._resolve_inputs(identity, (tensor,), None)
                    # Named after the line that called the module, outside the module's body.
                    frame = sys._getframe(0)
                    nodes.append(
                        self._record(
                            IDENTITY_FACTS, replay, parent_refs, params, (tensor,), (), frame, True
                        )
                    )
                elif node is not None:
                    nodes.append(node)
        self.module_outputs[(address, pass_index)] = nodes
