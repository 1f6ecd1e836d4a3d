"""Names of a model's modules, parameters and buffers by object id, from one walk."""

from __future__ import annotations

import torch


class ModelNames:
    """The first address under which each module, parameter and buffer is reachable, and
    the distinct parameters (as model.parameters() has them)."""

    def __init__(self, model: torch.nn.Module) -> None:
        self.modules: dict[int, str] = {}
        # id -> (qualified name, "param" | "buffer")
        self.tensors: dict[int, tuple[str, str]] = {}
        self.params: list[torch.Tensor] = []
        # Pre-order, as model.named_modules() walks, without its generators (one walk per
        # trace, over every module of the model).
        pending: list[tuple[str, torch.nn.Module]] = [("", model)]
        while pending:
            address, module = pending.pop()
            if id(module) in self.modules:  # shared: keep its first address
                continue
            self.modules[id(module)] = address
            prefix = f"{address}." if address else ""
            for kind, owned in (("param", module._parameters), ("buffer", module._buffers)):
                for name, tensor in owned.items():
                    if tensor is not None and id(tensor) not in self.tensors:
                        self.tensors[id(tensor)] = (prefix + name, kind)
                        if kind == "param":
                            self.params.append(tensor)
            children = [(prefix + name, child) for name, child in module._modules.items()]
            pending.extend(reversed([c for c in children if c[1] is not None]))
