"""Nested tensors (torch.nested) in a log: shown and saved padded with zeros.

torch's fast path of ``nn.TransformerEncoder`` (``enable_nested_tensor=True``, eval, with a
``src_key_padding_mask``) packs the batch into a nested tensor, whose samples have different
lengths, runs each layer's fused kernel on it and pads the result back. A node has one shape,
so such an output's shape, saved value and statistics are of it padded with zeros
(``to_padded_tensor(0.0)``), and its record keeps each sample's shape
(``OpRecord.nested_shapes``), which is what `renested` rebuilds the nested tensor from for a
replay (validate()).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

Tensor = torch.Tensor
# Each sample's shape of a nested output; None for a plain output
SampleShapes = tuple[tuple[int, ...], ...]

PADDED_NOTE = (
    "a nested tensor (torch.nested): its samples have different shapes; shown and saved "
    "padded with zeros (to_padded_tensor(0.0))"
)


def sample_shapes(tensor: Tensor) -> SampleShapes:
    """Each sample's shape of a (strided) nested tensor."""
    return tuple(tuple(int(n) for n in row) for row in tensor._nested_tensor_size().tolist())


def padded(tensor: Tensor) -> Tensor:
    """The nested tensor padded with zeros to its largest sample in each dimension, without
    autograd history."""
    with torch.no_grad():
        return tensor.to_padded_tensor(0.0)


def renested(value: Tensor, shapes: SampleShapes) -> Tensor:
    """The nested tensor `padded` made `value` from: each sample cut out of its row."""
    samples = [value[i][tuple(slice(0, n) for n in shape)] for i, shape in enumerate(shapes)]
    return torch.nested.as_nested_tensor(samples, layout=torch.strided)


def renested_output(
    value: Tensor, nested_shapes: Sequence[SampleShapes | None] | None, index: int
) -> Tensor:
    """Output `index` of a node as it ran: `value` re-nested where it was a nested tensor."""
    if nested_shapes is None or index >= len(nested_shapes):
        return value
    shapes = nested_shapes[index]
    return value if shapes is None else renested(value, shapes)
