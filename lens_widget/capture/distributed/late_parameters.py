"""Parameters a trace inside torch.distributed names late: those a module holds under a name
that the walk at the start did not see (FSDP's unsharded parameter, put in place by its
pre-forward), named by their module slot with their full shape, and DTensors read as the
node of their local tensor.

Part of DistributedCapture (distributed_capture.py), which hands the tensor book
`late_source` for a tensor it does not know, before that tensor would become a const.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import torch
from torch import nn

from lens_widget.capture.model_names import ModelNames
from lens_widget.log.records import OpRecord

if TYPE_CHECKING:
    from lens_widget.capture.tensor_book import TensorBook

Tensor = torch.Tensor


class LateParameters:
    """`late_source` for the tensor book; `unsharded`: name -> the engine's full parameter
    the model ran with."""

    def __init__(self, names: ModelNames, book: TensorBook, dtensor: type | None) -> None:
        self._names = names
        self._book = book
        self._dtensor = dtensor
        self._slots: dict[int, str] = {}  # id(parameter) -> its slot's name, found late
        self.unsharded: dict[str, Tensor] = {}

    def late_source(self, tensor: Tensor) -> tuple[OpRecord, int] | None:
        """The node of a tensor the book does not know, before it becomes a const."""
        book = self._book
        if self._dtensor is not None and isinstance(tensor, self._dtensor):
            produced = book.producer_of(tensor._local_tensor)  # pyright: ignore[reportAttributeAccessIssue]
            if produced is not None:
                book.point(tensor, *produced)
                return produced
        if isinstance(tensor, nn.Parameter):
            name = self._slot_name(tensor)
            if name is not None:
                self._stand_in(name, tensor)
                return book.add_source(tensor, "param", name), 0
        return None

    def _stand_in(self, name: str, tensor: Tensor) -> None:
        """`tensor` is the parameter `name` from now on (its leaf, its gradient, the model's
        size): the full parameter the model ran with, not the shard the walk saw."""
        names = self._names
        names.tensors[id(tensor)] = (name, "param")
        self.unsharded[name] = tensor
        for i, param in enumerate(names.params):
            if names.tensors.get(id(param), ("",))[0] == name:
                names.params[i] = tensor
                return
        names.params.append(tensor)

    def _slot_name(self, tensor: Tensor) -> str | None:
        """The name of the module slot that holds `tensor` now (FSDP's unsharded params)."""
        name = self._slots.get(id(tensor))
        if name is None:
            for module, address in self._modules():
                for own, param in module._parameters.items():
                    if param is not None and id(param) not in self._names.tensors:
                        self._slots[id(param)] = f"{address}.{own}" if address else own
            name = self._slots.get(id(tensor))
        return name

    def _modules(self) -> Iterator[tuple[nn.Module, str]]:
        roots = self._names.roots
        walked = [roots] if isinstance(roots, nn.Module) else list(roots.values())
        addresses = self._names.modules
        for root in walked:
            for module in root.modules():
                address = addresses.get(id(module))
                if address is not None:
                    yield module, address
