"""A module's dict-like output (a dict, transformers' ModelOutput) of tensors and Nones is
named without pytree's walk: the same (path, tensor) pairs, in the same order, as pytree
names them."""

import collections

import torch
from torch.utils import _pytree as pytree
from transformers.modeling_outputs import BaseModelOutputWithPoolingAndCrossAttentions

import lens_widget as lw
from lens_widget.capture.output_paths import _path_text, named_output_leaves


def _by_pytree(value: object) -> list[tuple[str, torch.Tensor]]:
    return [
        (_path_text(path), leaf)
        for path, leaf in pytree.tree_leaves_with_path(value)
        if isinstance(leaf, torch.Tensor)
    ]


def _same(a: list[tuple[str, torch.Tensor]], b: list[tuple[str, torch.Tensor]]) -> bool:
    return [(p, id(t)) for p, t in a] == [(p, id(t)) for p, t in b]


def test_dict_like_outputs_are_named_as_pytree_names_them():
    x, y = torch.ones(2), torch.zeros(3)
    values = [
        {"b": x, "a": None, "c": y},
        {2: x, 1: y},
        BaseModelOutputWithPoolingAndCrossAttentions(last_hidden_state=x, pooler_output=y),
        BaseModelOutputWithPoolingAndCrossAttentions(last_hidden_state=x),
        collections.OrderedDict(z=y, w=x),
        {"t": (x, y), "n": 3},  # not all tensors: pytree's walk
    ]
    for value in values:
        try:
            expected = _by_pytree(value)
        except ValueError:
            # transformers 4.x registers ModelOutput without key names: pytree names none,
            # and named_output_leaves takes its positional fallback, not the dict path
            continue
        assert _same(named_output_leaves(value), expected), value
    assert [p for p, _ in named_output_leaves(values[0])] == ["b", "c"]


class _Heads(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor | None]:
        return {"boxes": x + 1, "none": None, "scores": x * 2}


def test_a_module_returning_a_dict_has_its_outputs_by_key():
    log = lw.trace(_Heads(), torch.randn(2))
    info = log.modules[""]
    assert [leaf.path for leaf in info.output_leaves_of(1)] == ["boxes", "scores"]
    assert info.outputs[1] == ["add_1_1", "mul_1_2"]
