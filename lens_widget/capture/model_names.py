"""Names of a model's modules, parameters and buffers by object id, from one walk."""

from __future__ import annotations

from collections.abc import Mapping

import torch


class ModelNames:
    """The first address under which each module, parameter and buffer is reachable, and
    the distinct parameters (as model.parameters() has them).

    `roots` is one model (its own address is "", as in ``lw.trace``) or several by name
    (``{"gen": G, "disc": D}``: ``gen``, ``gen.layer1``, ``disc.fc.weight``...).
    """

    def __init__(self, roots: torch.nn.Module | Mapping[str, torch.nn.Module]) -> None:
        self.modules: dict[int, str] = {}
        # id -> (qualified name, "param" | "buffer")
        self.tensors: dict[int, tuple[str, str]] = {}
        self.params: list[torch.Tensor] = []
        # Modules compiled in place (module.compile()): they run eagerly while traced
        # (module_tracker.py), as trace() records a torch.compile'd model's eager module.
        self.compiled: list[torch.nn.Module] = []
        # Modules with a device hook (accelerate's ``_hf_hook``): run unrecorded while
        # traced (dispatch_hooks.py). The walked roots, for that module's own walk.
        self.dispatched: list[torch.nn.Module] = []
        self.roots = roots
        # Pre-order, as model.named_modules() walks, without its generators (one walk per
        # trace, over every module of the model).
        if isinstance(roots, torch.nn.Module):
            pending: list[tuple[str, torch.nn.Module]] = [("", roots)]
        else:
            pending = list(roots.items())[::-1]
        modules, tensors, params = self.modules, self.tensors, self.params
        # Read from each module's __dict__ (where nn.Module keeps them): an attribute read
        # first looks through the class's MRO (ten classes for a transformers model), and
        # this walk runs on every trace (ResNet-50: 282 modules, ~0.5 ms before).
        pop, push, add_param = pending.pop, pending.append, params.append
        while pending:
            address, module = pop()
            key = id(module)
            if key in modules:  # shared: keep its first address
                continue
            modules[key] = address
            own = module.__dict__
            if own.get("_compiled_call_impl") is not None:  # set by module.compile()
                self.compiled.append(module)
            if "_hf_hook" in own:
                self.dispatched.append(module)
            prefix = address + "." if address else ""
            try:
                parameters, buffers = own["_parameters"], own["_buffers"]
                children = own["_modules"]
            except KeyError:  # a module keeping them elsewhere
                parameters, buffers = module._parameters, module._buffers
                children = module._modules
            # (most modules have no parameters, buffers or children: no loop begun for them)
            if parameters:
                for name, tensor in parameters.items():
                    if tensor is not None and (key := id(tensor)) not in tensors:
                        tensors[key] = (prefix + name, "param")
                        add_param(tensor)
            if buffers:
                for name, tensor in buffers.items():
                    if tensor is not None and (key := id(tensor)) not in tensors:
                        tensors[key] = (prefix + name, "buffer")
            if children:
                for name in reversed(children):  # (no comprehension: its frame, per module)
                    child = children[name]
                    if child is not None:
                        push((prefix + name, child))
