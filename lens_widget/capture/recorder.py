"""The TorchFunctionMode that records every torch call of a forward pass.

A mode (rather than only a Tensor subclass) also sees factory calls such as
``torch.arange`` that take no tensor, and never changes the type of the user's tensors.
Everything here runs once per op, so it is written for speed: per-function facts are
cached, frames are classified once per code object, and nothing is copied unless a
saved tensor is about to be overwritten.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from lens_widget.capture.arguments import scan_call
from lens_widget.capture.call_site import describe_source, find_call_site
from lens_widget.capture.model_names import ModelNames
from lens_widget.capture.module_tracker import ModuleTracker
from lens_widget.capture.mutation import MutationRule
from lens_widget.capture.save_policy import SavePolicy
from lens_widget.log.records import NodeKind, OpRecord, ParamUse
from lens_widget.log.replay import ReplayCall, tensor_leaves

Tensor = torch.Tensor
Parameter = torch.nn.Parameter

# Calls that read metadata and never return a tensor: passed straight through.
_METADATA_CALLS = frozenset(
    {
        "dim", "size", "numel", "stride", "storage_offset", "is_contiguous", "element_size",
        "data_ptr", "is_floating_point", "is_complex", "get_device", "item", "tolist",
        "__len__", "__bool__", "__format__", "__repr__", "__hash__", "__index__", "__int__",
        "__float__", "__array__", "untyped_storage", "has_names", "nelement", "ndimension",
        "shape", "dtype", "device", "ndim", "requires_grad", "is_cuda", "layout", "names",
        "is_leaf", "grad_fn", "is_sparse", "is_quantized", "is_meta", "__reduce_ex__",
        "equal", "allclose", "is_nonzero", "is_same_size", "__contains__", "is_set_to",
    }
)  # fmt: skip

# Random ops: the RNG state before them is kept so validate() can replay them exactly.
_RANDOM_CALLS = frozenset(
    {
        "dropout", "dropout_", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout",
        "feature_alpha_dropout", "rand", "randn", "randint", "randperm", "rand_like",
        "randn_like", "randint_like", "normal", "normal_", "uniform_", "bernoulli",
        "bernoulli_", "multinomial", "exponential_", "geometric_", "log_normal_", "cauchy_",
        "random_", "poisson", "rrelu", "rrelu_", "gumbel_softmax", "fractional_max_pool2d",
        "fractional_max_pool3d", "native_dropout",
        # ops with a dropout argument of their own
        "scaled_dot_product_attention", "multi_head_attention_forward", "lstm", "gru",
        "rnn_tanh", "rnn_relu", "transformer_encoder_layer_fwd", "_native_multi_head_attention",
    }
)  # fmt: skip


@functools.cache
def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def identity(tensor: Tensor) -> Tensor:
    """Stands for a module that returned its input unchanged (replays as itself)."""
    return tensor


def _func_name(func: Callable[..., Any]) -> str:
    name = getattr(func, "__name__", None) or type(func).__name__
    if name == "__get__":  # a property getter such as Tensor.T: name it after the property
        name = getattr(getattr(func, "__self__", None), "__name__", name)
    return name


def _clean(name: str) -> str:
    """Label-friendly function name: __add__ -> add, __getitem__ -> getitem."""
    return name.strip("_") or name


class _FuncFacts:
    __slots__ = ("name", "clean", "metadata", "random", "mutation")

    def __init__(self, func: Callable[..., Any]) -> None:
        self.name = _func_name(func)
        self.clean = _clean(self.name)
        self.metadata = self.name in _METADATA_CALLS
        self.random = self.name in _RANDOM_CALLS
        self.mutation = MutationRule(func, self.name)


# Facts per torch function, kept across traces: reading a signature is slow.
_FACTS: dict[Any, _FuncFacts] = {}
_IDENTITY_FACTS = _FuncFacts(identity)


def _storage_key(tensor: Tensor) -> int | None:
    try:
        return tensor.untyped_storage().data_ptr()
    except (RuntimeError, NotImplementedError):  # sparse / meta tensors have no storage
        return None


class _Layer:
    """One layer: an op identity that repeats across passes (loops, reused modules)."""

    __slots__ = ("base", "passes")

    def __init__(self, base: str) -> None:
        self.base = base
        self.passes = 0


class Recorder(TorchFunctionMode):
    """Records each torch call as an OpRecord; sources are created on first use."""

    def __init__(self, model: torch.nn.Module, save: SavePolicy, track_versions: bool) -> None:
        super().__init__()
        self.save = save
        self.track_versions = track_versions
        self.nodes: list[OpRecord] = []
        self.n_ops = 0
        self.failed: OpRecord | None = None
        names = ModelNames(model)
        self.tracker = ModuleTracker(model, names, self._on_module_output)
        self._facts = _FACTS
        self._layers: dict[Any, _Layer] = {}
        self._func_counts: dict[str, int] = {}
        # id(tensor) -> (weakref, node, output index, version when produced)
        self._producers: dict[int, tuple[Any, OpRecord, int, int]] = {}
        # storage pointer -> [(node, output index)] of saved tensors that share it
        self._saved_storage: dict[int, list[tuple[OpRecord, int]]] = {}
        # storage pointer -> writes seen, for tensors without a version counter
        self._storage_writes: dict[int, int] = {}
        # (node, output index, id, version) of saved references, to detect unseen writes
        self.saved_refs: list[tuple[OpRecord, int, int, int]] = []
        self._params = names.tensors
        self._n_consts = 0
        self._labels: set[str] = set()  # of sources and sinks; op labels cannot clash
        self._device_names: dict[torch.device, str] = {}
        # (module address, pass) -> nodes that produced that module call's output tensors
        self.module_outputs: dict[tuple[str, int], list[OpRecord]] = {}

    # ---- sources ---------------------------------------------------------------------

    def unique_label(self, name: str) -> str:
        """`name`, or `name#2`, `name#3`... when a node already has it (a param named "output")."""
        label, n = name, 1
        while label in self._labels:
            n += 1
            label = f"{name}#{n}"
        self._labels.add(label)
        return label

    def add_source(self, tensor: Tensor, kind: NodeKind, name: str) -> OpRecord:
        name = self.unique_label(name)
        stack = self.tracker.stack
        node = OpRecord(
            label=name, kind=kind, func=name, index=len(self.nodes), layer=name,
            module_stack=stack, module=stack[-1][0] if stack else "",
        )  # fmt: skip
        self._describe_outputs(node, (tensor,))
        self.nodes.append(node)
        if not self.save.keeps_nothing:  # sources are references: free to keep
            self._keep(node, (tensor,))
        self._set_producer(tensor, node, 0)
        return node

    def _source_for(self, tensor: Tensor) -> OpRecord:
        known = self._params.get(id(tensor))
        if known is not None:
            return self.add_source(tensor, known[1], known[0])  # type: ignore[arg-type]
        self._n_consts += 1
        return self.add_source(tensor, "const", f"const_{self._n_consts}")

    # ---- bookkeeping of tensors --------------------------------------------------------

    def version(self, tensor: Tensor) -> int:
        """The tensor's write counter (>= 0), or where torch keeps none (inference tensors)
        a negative count of the writes this trace saw to its storage."""
        if self.track_versions:
            try:
                return tensor._version
            except RuntimeError:
                pass
        storage = _storage_key(tensor)
        return -1 - self._storage_writes.get(storage, 0) if storage is not None else -1

    def _set_producer(self, tensor: Tensor, node: OpRecord, output_index: int) -> None:
        self._producers[id(tensor)] = (
            weakref.ref(tensor),
            node,
            output_index,
            self.version(tensor),
        )

    def producer_of(self, tensor: Tensor) -> tuple[OpRecord, int] | None:
        entry = self._producers.get(id(tensor))
        if entry is not None and entry[0]() is tensor:
            return entry[1], entry[2]
        return None

    def _keep(self, node: OpRecord, outputs: tuple[Tensor, ...]) -> None:
        # Saved values are plain tensors without autograd history (a detached view shares
        # storage: no copy); a Parameter output (p.float() returns p) becomes one too.
        if any(t.requires_grad or type(t) is Parameter for t in outputs):
            outputs = tuple(t.detach() for t in outputs)
        node.activations = outputs
        for i, tensor in enumerate(outputs):
            storage = _storage_key(tensor)
            if storage is None:
                continue
            self._saved_storage.setdefault(storage, []).append((node, i))
            version = self.version(tensor)
            if version >= 0:
                self.saved_refs.append((node, i, id(tensor), version))

    def _before_write(self, targets: list[Tensor]) -> None:
        """Count the write; saved tensors sharing storage with a target get copied first."""
        for target in targets:
            storage = _storage_key(target)
            if storage is None:
                continue
            self._storage_writes[storage] = self._storage_writes.get(storage, 0) + 1
            copies: dict[int, Tensor] = {}  # nodes saving the same tensor share one copy
            for node, i in self._saved_storage.pop(storage, ()):
                saved = node.activations
                if saved is None:
                    continue
                copy = copies.get(id(saved[i]))
                if copy is None:
                    with torch.no_grad():
                        copy = copies[id(saved[i])] = saved[i].detach().clone()
                node.activations = (*saved[:i], copy, *saved[i + 1 :])

    # ---- the hook --------------------------------------------------------------------

    def __torch_function__(
        self,
        func: Callable[..., Any],
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        if kwargs is None:
            kwargs = {}
        facts = self._facts.get(func)
        if facts is None:
            facts = self._facts[func] = _FuncFacts(func)
        if facts.metadata:
            return func(*args, **kwargs)

        # Inputs are resolved before the call: an in-place op changes their versions.
        inputs = self._resolve_inputs(func, args, kwargs)
        writes = facts.mutation.targets(args, kwargs)
        if writes:
            self._before_write(writes)
        if facts.random and not self.save.keeps_nothing:
            inputs[0].rng_state = torch.get_rng_state()

        try:
            out = func(*args, **kwargs)
        except BaseException as err:
            node = self._record(facts, inputs, (), writes)
            node.failed = True
            node.error = f"{type(err).__name__}: {err}"
            self.failed = node
            raise

        if type(out) is Tensor:
            outputs: tuple[Tensor, ...] = (out,)
        elif out is None and facts.name == "__setitem__":
            outputs = (args[0],)  # x[i] = v: the op's result is the written tensor
        else:
            outputs = tuple(tensor_leaves(out)) if isinstance(out, (tuple, list, Tensor)) else ()
            if not outputs:
                return out
        self._record(facts, inputs, outputs, writes)
        return out

    def _resolve_inputs(
        self, func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[ReplayCall, list[tuple[str, OpRecord, int]], tuple[ParamUse, ...]]:
        """The call's replay template, its tensor arguments' producers, the params it reads."""
        args_template, kwargs_template, found = scan_call(args, kwargs)
        replay = ReplayCall(func, args_template, kwargs_template)
        parent_refs: list[tuple[str, OpRecord, int]] = []
        params: list[ParamUse] = []
        for slot, (position, tensor) in enumerate(found):
            entry = self._producers.get(id(tensor))
            if entry is not None and entry[0]() is tensor:
                parent, output_index = entry[1], entry[2]
                if entry[3] != self.version(tensor) and not self.save.keeps_nothing:
                    # Written through another view since it was produced: keep the value now.
                    with torch.no_grad():
                        replay.literals[slot] = tensor.detach().clone()
            else:
                parent, output_index = self._source_for(tensor), 0
            if parent.kind in ("param", "buffer"):
                params.append(ParamUse(parent.label, tuple(tensor.shape), tensor.numel()))
            parent_refs.append((position, parent, output_index))
        return replay, parent_refs, tuple(params)

    def _record(
        self,
        facts: _FuncFacts,
        inputs: tuple[ReplayCall, list[tuple[str, OpRecord, int]], tuple[ParamUse, ...]],
        outputs: tuple[Tensor, ...],
        writes: list[Tensor],
    ) -> OpRecord:
        tracker = self.tracker
        site, source = find_call_site(2)
        key = (tracker.path, facts.name, site)
        layer = self._layers.get(key)
        if layer is None:
            count = self._func_counts[facts.clean] = self._func_counts.get(facts.clean, 0) + 1
            layer = self._layers[key] = _Layer(f"{facts.clean}_{count}_{len(self._layers) + 1}")
        layer.passes += 1
        stack = tracker.stack
        replay, parent_refs, params = inputs

        node = OpRecord(
            label=f"{layer.base}:{layer.passes}", kind="op", func=facts.name,
            index=len(self.nodes), layer=layer.base, pass_index=layer.passes,
            module=stack[-1][0] if stack else "", module_stack=stack, params=params,
            inplace=bool(writes), source=source,  # type: ignore[arg-type]  # resolved later
            replay=(replay, parent_refs),
        )  # fmt: skip
        self.n_ops += 1
        if self.save.asks_predicate:  # the predicate sees the source as text
            node.source, node.source_code = describe_source(source)
        if outputs:
            self._describe_outputs(node, outputs)
        self.nodes.append(node)
        if outputs and self.save.keeps(node):
            self._keep(node, outputs)
        for i, tensor in enumerate(outputs):
            self._set_producer(tensor, node, i)
        return node

    def _describe_outputs(self, node: OpRecord, outputs: tuple[Tensor, ...]) -> None:
        first = outputs[0]
        node.shape = shape = tuple(first.shape)
        node.dtype = _dtype_name(first.dtype)
        node.device = self._device_names.get(first.device) or self._name_device(first.device)
        node.requires_grad = first.requires_grad  # kernels differ with it (FLOPs replay it)
        if len(outputs) == 1:
            node.shapes = (shape,)
            node.nbytes = first.numel() * first.element_size()
        else:
            node.shapes = tuple(tuple(t.shape) for t in outputs)
            node.nbytes = sum(t.numel() * t.element_size() for t in outputs)

    def _name_device(self, device: torch.device) -> str:
        name = self._device_names[device] = str(device)
        return name

    # ---- modules ---------------------------------------------------------------------

    def _on_module_output(self, address: str, pass_index: int, output: Any) -> None:
        """Note which nodes a module call returned. A tensor it returns untouched (an
        nn.Identity, a skipped branch) gets an "identity" op inside the module, so the
        module is a node of the graph and the value visibly flows through it."""
        nodes = []
        inside = (address, pass_index)
        # Runs inside the mode: torch calls made here must not be recorded.
        with torch._C.DisableTorchFunction():
            for tensor in tensor_leaves(output):
                produced = self.producer_of(tensor)
                if inside in self.tracker.stack and (
                    produced is None or inside not in produced[0].module_stack
                ):
                    inputs = self._resolve_inputs(identity, (tensor,), {})
                    nodes.append(self._record(_IDENTITY_FACTS, inputs, (tensor,), []))
                elif produced is not None:
                    nodes.append(produced[0])
        self.module_outputs[inside] = nodes
