"""Outputs of types registered with torch's pytree, with key functions or without (transformers
4.x ModelOutput, diffusers BaseOutput, a user's own register_pytree_node), trace and are named
by their fields where they have them, by position where not."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from torch.utils import _pytree as pytree

import lens_widget as lw


@dataclass
class Keyed:
    mean: torch.Tensor
    scale: torch.Tensor


pytree.register_pytree_node(
    Keyed,
    lambda k: ([k.mean, k.scale], None),
    lambda children, _: Keyed(*children),
    flatten_with_keys_fn=lambda k: (
        [(pytree.GetAttrKey("mean"), k.mean), (pytree.GetAttrKey("scale"), k.scale)],
        None,
    ),
)


@dataclass
class UnkeyedDataclass:
    """Flattened without its None field and with no names in the context."""

    mean: torch.Tensor
    unused: torch.Tensor | None
    scale: torch.Tensor


pytree.register_pytree_node(
    UnkeyedDataclass,
    lambda d: ([d.mean, d.scale], None),
    lambda children, _: UnkeyedDataclass(children[0], None, children[1]),
)


class UnkeyedMapping(Mapping):
    """A read-only mapping whose flatten function gives its values and no names."""

    def __init__(self, **items: torch.Tensor) -> None:
        self._items = dict(items)

    def __getitem__(self, key: str) -> torch.Tensor:
        return self._items[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)


pytree.register_pytree_node(
    UnkeyedMapping,
    lambda m: (list(m.values()), None),
    lambda children, _: UnkeyedMapping(**dict(enumerate(children))),
)


class NamesInContext(OrderedDict):
    """transformers 4.x's ModelOutput: an OrderedDict whose flatten context lists its keys."""


pytree.register_pytree_node(
    NamesInContext,
    lambda o: (list(o.values()), list(o.keys())),
    lambda children, keys: NamesInContext(zip(keys, children, strict=True)),
)


class Opaque:
    """Nothing says what its children are called: they are named by position."""

    def __init__(self, first: torch.Tensor, second: Any) -> None:
        self._first = first
        self._second = second


pytree.register_pytree_node(
    Opaque,
    lambda o: ([o._first, o._second], None),
    lambda children, _: Opaque(*children),
)


class Returns(nn.Module):
    def __init__(self, wrap: Any) -> None:
        super().__init__()
        self.wrap = wrap
        self.proj = nn.Linear(3, 3)

    def forward(self, x: torch.Tensor) -> Any:
        a = self.proj(x)
        return self.wrap(a, a.relu(), a * 2)


def _traced_names(wrap: Any) -> list[str]:
    log = lw.trace(Returns(wrap), torch.randn(2, 3))
    log.validate()
    for node in log.outputs:
        assert node.parents, node.label  # each named output is joined to the op that made it
    return [node.label for node in log.outputs]


def test_keyed_registration_is_named_by_its_keys():
    assert _traced_names(lambda a, b, c: Keyed(a, b)) == ["output.mean", "output.scale"]


def test_unkeyed_dataclass_is_named_by_its_fields():
    names = _traced_names(lambda a, b, c: UnkeyedDataclass(a, None, c))
    assert names == ["output.mean", "output.scale"]


def test_unkeyed_mapping_is_named_by_its_keys():
    names = _traced_names(lambda a, b, c: UnkeyedMapping(first=a, third=c))
    assert names == ["output.first", "output.third"]


def test_unkeyed_node_with_names_in_its_context_uses_them():
    names = _traced_names(lambda a, b, c: NamesInContext(logits=a, hidden=b))
    assert names == ["output.logits", "output.hidden"]


def test_unkeyed_opaque_node_is_named_by_position():
    assert _traced_names(lambda a, b, c: Opaque(a, c)) == ["output.0", "output.1"]


def test_nested_keyed_and_unkeyed_nodes():
    def wrap(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> Any:
        inner = Opaque(b, {"deep": [c]})
        return NamesInContext(head=Keyed(a, b), tail=UnkeyedDataclass(a, None, inner))

    assert _traced_names(wrap) == [
        "output.head.mean",
        "output.head.scale",
        "output.tail.mean",
        "output.tail.scale.0",
        "output.tail.scale.1.deep.0",
    ]


def test_unkeyed_output_is_returned_as_the_model_made_it():
    model = Returns(lambda a, b, c: NamesInContext(logits=a))
    x = torch.randn(2, 3)
    log = lw.trace(model, x)
    assert type(log.output) is NamesInContext
    assert torch.equal(log.output["logits"], model(x)["logits"])
    assert torch.equal(log["output.logits"].activation, log.output["logits"])
