"""A dispatched model's device hooks run unrecorded: it traces as the model it is.

accelerate (``dispatch_model``, ``disk_offload``, ``cpu_offload``, transformers'
``from_pretrained(device_map=...)``) gives modules a hook, ``module._hf_hook``, whose
``pre_forward`` runs before each call of the module (moves the arguments to its device,
loads offloaded weights into new Parameter objects) and ``post_forward`` after it (puts the
weights back on the meta device, moves outputs back). ``new_forward`` reads
``module._hf_hook`` at each call, so while a trace runs each hook of the traced modules is
replaced by a `_HookProxy`, which runs the real hook with the recorder off torch's mode stack
(user modes below it still see its calls, as in an untraced call), then:

- a tensor the hook returned in place of an argument or output (same pytree position) that
  the book does not know reads as the node of the tensor it replaced: a device move is not
  an op, and the consumer links to the real producer;
- a parameter or buffer the hook put on the module (or its submodules) is named as the model
  names it, and once a source node exists for that name (an earlier call: generate runs the
  model many times), a new object reads as that node: one node per parameter. A weight tied
  to another (transformers' ``all_tied_weights_keys``), which offloading split into two
  objects, is named as the one it is tied to.

Each hook call leaves a DispatchCall (``log.dispatch``). The hooks are put back exactly on
exit, also when the code raised; a hook replaced or removed meanwhile is left as it is.
accelerate is not imported: a hook is anything with ``pre_forward`` and ``post_forward``.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterator, Mapping
from types import CodeType
from typing import Any

import torch
from torch.utils._pytree import tree_flatten

from lens_widget.capture.call_site import mark_wrapper
from lens_widget.capture.mode_stack import mode_off_stack
from lens_widget.capture.recorder import Recorder
from lens_widget.log.dispatch import DispatchCall, DispatchPhase
from lens_widget.log.records import OpRecord

Tensor = torch.Tensor
# (id(module), its own name for the tensor) -> the tensor, for a module and its submodules
Slots = dict[tuple[int, str], Tensor]


class _HookProxy:
    """Stands in for a module's hook: every attribute is the real hook's (read, set and
    ``isinstance`` alike), but its forward hooks run through `DispatchHooks`."""

    __slots__ = ("_lw_hook", "_lw_owner")
    _lw_hook: Any
    _lw_owner: DispatchHooks

    def __init__(self, hook: Any, owner: DispatchHooks) -> None:
        object.__setattr__(self, "_lw_hook", hook)
        object.__setattr__(self, "_lw_owner", owner)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._lw_hook, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._lw_hook, name, value)

    def __delattr__(self, name: str) -> None:
        delattr(self._lw_hook, name)

    @property
    def __class__(self) -> type:  # pyright: ignore[reportIncompatibleMethodOverride]
        return type(self._lw_hook)

    def __repr__(self) -> str:
        return repr(self._lw_hook)

    def pre_forward(self, module: torch.nn.Module, *args: Any, **kwargs: Any) -> Any:
        return self._lw_owner.pre_forward(self._lw_hook, module, args, kwargs)

    def post_forward(self, module: torch.nn.Module, output: Any) -> Any:
        return self._lw_owner.post_forward(self._lw_hook, module, output)


def _own_slots(module: torch.nn.Module) -> Iterator[tuple[tuple[int, str], Tensor]]:
    """The parameters and buffers of `module` itself, where each sits."""
    for own in (module._parameters, module._buffers):
        for name, tensor in own.items():
            if tensor is not None:
                yield (id(module), name), tensor


def _slots(module: torch.nn.Module) -> Slots:
    """Every parameter and buffer of `module` and its submodules, where it sits (a hook may
    place its submodules' too: accelerate's ``place_submodules``)."""
    return {key: tensor for sub in module.modules() for key, tensor in _own_slots(sub)}


def _skip_forward_wrapper(module: torch.nn.Module) -> None:
    """The function that runs the hooks around the module's own forward (accelerate's
    ``new_forward``, a partial in ``module.forward``) is no op's source: the line that
    called the module is, as without the hooks."""
    forward = module.__dict__.get("forward")
    code = getattr(getattr(forward, "func", None), "__code__", None)
    if isinstance(forward, functools.partial) and isinstance(code, CodeType):
        mark_wrapper(code)


def _tied(roots: torch.nn.Module | Mapping[str, torch.nn.Module]) -> dict[str, str]:
    """Tied weights as the model declares them (transformers' ``all_tied_weights_keys``,
    {tied: the weight it is tied to}), by the addresses of the walk."""
    named = {"": roots} if isinstance(roots, torch.nn.Module) else roots
    ties: dict[str, str] = {}
    for root_name, root in named.items():
        keys = getattr(root, "all_tied_weights_keys", None)
        if not isinstance(keys, Mapping):
            keys = _tied_embeddings(root)
        prefix = f"{root_name}." if root_name else ""
        for target, source in keys.items():
            if isinstance(target, str) and isinstance(source, str):
                ties[prefix + target] = prefix + source
    return ties


def _tied_embeddings(root: torch.nn.Module) -> dict[str, str]:
    """transformers 4 declares no map of ties: its ``tie_weights`` ties the output
    embeddings' weight to the input embeddings' when the config says
    ``tie_word_embeddings`` ({"lm_head.weight": "transformer.wte.weight"} for GPT-2)."""
    config = getattr(root, "config", None)
    if not getattr(config, "tie_word_embeddings", False):
        return {}
    try:
        given, made = root.get_input_embeddings(), root.get_output_embeddings()  # pyright: ignore[reportCallIssue]
    except (AttributeError, NotImplementedError):
        return {}
    address = {id(module): name for name, module in root.named_modules()}
    if id(given) not in address or id(made) not in address:
        return {}
    return {f"{address[id(made)]}.weight": f"{address[id(given)]}.weight"}


class DispatchHooks:
    """While entered, the hooks of the recorder's `names.dispatched` run unrecorded (see
    the module doc); `calls` is what they did. Entered on the tracing thread, last."""

    def __init__(self, recorder: Recorder) -> None:
        self._names = recorder.names
        self._recorder = recorder
        self._book = recorder.book
        self.calls: list[DispatchCall] = []
        self._thread = threading.get_ident()
        self._installed: list[tuple[torch.nn.Module, Any, _HookProxy]] = []
        # (id(module), own name) -> (the model's name, "param" | "buffer")
        self._model_names: dict[tuple[int, str], tuple[str, str]] = {}
        # The tensors of the model at the start, held so that no id in names.tensors is
        # reused by another tensor while the trace runs.
        self._held: list[Tensor] = []
        # Loaded tensors named in names.tensors until the hook takes them off: id -> tensor
        self._named: dict[int, Tensor] = {}
        # The model's name -> its source node, once a loaded tensor was used
        self._nodes: dict[str, OpRecord] = {}
        # A traced backward names its leaves after the forward: loaded tensors stay named
        # to the end, and the first of each name stands for its parameter in names.params
        # (backward_log.py lists the params no backward reached from there).
        self._for_backward = recorder.backward_capture is not None
        self._stand_ins: dict[str, Tensor] = {}  # name -> its tensor in names.params

    def __enter__(self) -> DispatchHooks:
        if not self._names.dispatched:
            return self
        with torch._C.DisableTorchFunction():  # bookkeeping: invisible to user modes
            self._name_slots()
        for module in self._names.dispatched:
            hook = module.__dict__.get("_hf_hook")
            if callable(getattr(hook, "pre_forward", None)) and callable(
                getattr(hook, "post_forward", None)
            ):
                _skip_forward_wrapper(module)
                proxy = _HookProxy(hook, self)
                module.__dict__["_hf_hook"] = proxy
                self._installed.append((module, hook, proxy))
        return self

    def __exit__(self, *exc: object) -> None:
        for module, hook, proxy in self._installed:
            if module.__dict__.get("_hf_hook") is proxy:
                module.__dict__["_hf_hook"] = hook
        self._installed.clear()
        if self._named:  # (none without a device hook: no set of every parameter made)
            tensors = self._names.tensors
            in_params = {id(p) for p in self._names.params}  # alive with names: stay named
            for key in self._named:
                if key not in in_params:
                    tensors.pop(key, None)
            self._named.clear()
        self._held.clear()

    def _name_slots(self) -> None:
        """The model's name of every slot, as ModelNames named its tensor at the start."""
        names = self._names
        addresses: dict[str, tuple[tuple[int, str], Tensor]] = {}
        roots = names.roots
        walked = [roots] if isinstance(roots, torch.nn.Module) else list(roots.values())
        for root in walked:
            for module in root.modules():
                prefix = names.modules.get(id(module))
                if prefix is None:
                    continue
                for key, tensor in _own_slots(module):
                    named = names.tensors.get(id(tensor))
                    if named is not None:
                        self._model_names[key] = named
                        self._stand_ins.setdefault(named[0], tensor)
                        self._held.append(tensor)
                        addresses[".".join(filter(None, (prefix, key[1])))] = (key, tensor)
        # A tied weight that offloading split in two is named as the one it is tied to.
        for target, source in _tied(roots).items():
            tied, origin = addresses.get(target), addresses.get(source)
            if tied is None or origin is None or tied[1].shape != origin[1].shape:
                continue
            name = self._model_names[origin[0]]
            self._model_names[tied[0]] = name
            if tied[1] is not origin[1] and names.tensors.get(id(tied[1])) != name:
                names.tensors[id(tied[1])] = name
                names.params[:] = [p for p in names.params if p is not tied[1]]

    # ---- the hooks -------------------------------------------------------------------

    def pre_forward(
        self, hook: Any, module: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        if threading.get_ident() != self._thread:
            return hook.pre_forward(module, *args, **kwargs)
        before = _slots(module)
        with mode_off_stack(self._recorder):
            result = hook.pre_forward(module, *args, **kwargs)
        self._note(module, "pre", before, (args, kwargs), result)
        return result

    def post_forward(self, hook: Any, module: torch.nn.Module, output: Any) -> Any:
        if threading.get_ident() != self._thread:
            return hook.post_forward(module, output)
        before = _slots(module)
        with mode_off_stack(self._recorder):
            result = hook.post_forward(module, output)
        self._note(module, "post", before, output, result)
        return result

    def _note(
        self, module: torch.nn.Module, phase: DispatchPhase, before: Slots, given: Any, got: Any
    ) -> None:
        with torch._C.DisableTorchFunction():  # bookkeeping: invisible to user modes
            address = self._names.modules.get(id(module), "")
            call = DispatchCall(address, self._recorder.tracker.passes_of(address), phase)
            self._follow(call, given, got)
            self._weights(call, module, before)
            self.calls.append(call)

    def _follow(self, call: DispatchCall, given: Any, got: Any) -> None:
        """Tensors the hook returned in place of others read as the ones they replace."""
        leaves, spec = tree_flatten(given)
        new_leaves, new_spec = tree_flatten(got)
        if spec != new_spec:
            return
        book = self._book
        for old, new in zip(leaves, new_leaves, strict=True):
            if isinstance(new, Tensor) and isinstance(old, Tensor) and new is not old:
                call.moved += 1
                call.device = str(new.device)
                produced = book.producer_of(old)
                if produced is not None and not book.knows(new):
                    book.point(new, *produced)

    def _weights(self, call: DispatchCall, module: torch.nn.Module, before: Slots) -> None:
        """Name what the hook put on the module; note what it took off."""
        names, book = self._names.tensors, self._book
        loaded: list[str] = []
        offloaded: list[str] = []
        for key, tensor in _slots(module).items():
            old = before.get(key)
            if tensor is old:
                continue
            named = self._model_names.get(key)
            if old is not None:
                self._taken_off(old)
            if named is None:
                continue
            if tensor.device.type == "meta":
                offloaded.append(named[0])
                continue
            loaded.append(named[0])
            call.nbytes += tensor.numel() * tensor.element_size()
            call.device = str(tensor.device)
            if book.knows(tensor):
                continue
            node = self._nodes.get(named[0])
            if node is not None:
                book.point(tensor, node, 0)
                if not self._for_backward:
                    continue
            elif self._for_backward:
                self._stand_in(named[0], tensor)
            names[id(tensor)] = named
            self._named[id(tensor)] = tensor
        call.loaded, call.offloaded = tuple(loaded), tuple(offloaded)

    def _stand_in(self, name: str, tensor: Tensor) -> None:
        """`tensor` is the parameter `name` in names.params from now on."""
        params, stand_in = self._names.params, self._stand_ins.get(name)
        for i, param in enumerate(params):
            if param is stand_in:
                params[i] = self._stand_ins[name] = tensor
                return

    def _taken_off(self, tensor: Tensor) -> None:
        """A loaded tensor left the module: its node stays for the next one of its name;
        its name goes (unless a backward is traced)."""
        if self._named.get(id(tensor)) is not tensor:
            return
        named = self._names.tensors[id(tensor)]
        produced = self._book.producer_of(tensor)
        if produced is not None:
            self._nodes.setdefault(named[0], produced[0])
        if not self._for_backward:
            del self._named[id(tensor)], self._names.tensors[id(tensor)]
