"""Structure first (#36 item 5): ops made in a method of a submodule called directly (not
through `__call__`, as torchvision's detectors call `self.transform.postprocess(...)`) are one
function group named by that attribute, even when they are every op the model's own forward
makes; and a group is named by the innermost function all its ops ran in (timm's
`forward_features` calls `_pos_embed`, which made them), not by its caller."""

from __future__ import annotations

import torch

import lens_widget as lw
from lens_widget.log.function_groups import function_groups
from model_zoo.first_screen import method_calls, plain_vit


def test_a_submodule_method_holding_every_top_level_op_is_a_group_named_by_its_attribute() -> None:
    case = method_calls()
    with torch.no_grad():
        log = lw.trace(case.model, case.args)
    top = [op for op in log.ops if not op.module_stack]
    assert len(top) > 12  # the box rescaling: tensor, div, unbind, mul, stack per image
    assert {op.function for op in top} == {"transform.postprocess"}
    (group,) = function_groups(log.ops).values()
    assert (group.address, group.module, group.n_ops) == ("transform.postprocess()", "", len(top))
    # the submodule's own __call__ stays the module, outside the group
    assert [op.func for op in log.ops if op.module == "transform"] == ["interpolate"]


def test_a_group_is_named_by_the_function_that_made_its_ops() -> None:
    case = plain_vit()
    with torch.no_grad():
        log = lw.trace(case.model, case.args)
    groups = function_groups(log.ops)
    assert list(groups) == ["_pos_embed()"]
    assert [op.func for op in log.ops if op.function == "_pos_embed"] == ["expand", "cat", "add"]
