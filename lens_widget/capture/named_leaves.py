"""Name every tensor inside nested inputs/outputs: ``input.0``, ``output.logits``, ..."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import torch
from torch.utils import _pytree as pytree


def _key_text(key: Any) -> str:
    for attribute in ("idx", "key", "name"):
        if hasattr(key, attribute):
            return str(getattr(key, attribute))
    return str(key)


def named_tensor_leaves(value: Any, prefix: str) -> Iterator[tuple[str, torch.Tensor]]:
    """(dotted name, tensor) per tensor leaf; dataclasses unknown to pytree are walked too."""
    for path, leaf in pytree.tree_flatten_with_path(value)[0]:
        name = ".".join([prefix, *(_key_text(k) for k in path)])
        if isinstance(leaf, torch.Tensor):
            yield name, leaf
        elif dataclasses.is_dataclass(leaf) and not isinstance(leaf, type):
            for f in dataclasses.fields(leaf):
                yield from named_tensor_leaves(getattr(leaf, f.name), f"{name}.{f.name}")
