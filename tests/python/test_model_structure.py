"""What the log says about a model's structure (#24): plain functions of the model's code as
groups (`OpRecord.function`), recurrence only where a later pass reads an earlier one, and
repeated blocks folded only where they are the same, shapes included."""

from __future__ import annotations

import importlib
import importlib.util
import json

import pytest
import torch
from function_module import FunctionModule
from torch import nn

import lens_widget as lw
from lens_widget.log.function_groups import function_groups
from lens_widget.log.model_log import ModelLog
from lens_widget.store.format import FUNCTION_VERSION, TRANSFORM_NOTE_VERSION
from lens_widget.widget.payload import build_payload
from model_zoo import STRUCTURE_MODELS


# The mask builders these tests name are transformers' masking_utils functions, which each
# model's code imports once it builds its masks with them (GPT-2 from 4.53, BERT and T5 in 5);
# older code uses other helpers (4.45: _prepare_4d_*_for_sdpa, or none with SDPA's is_causal),
# grouped the same way under their own names. FunctionModule tests the grouping version-free.
def _builds_masks_with(model: str, builder: str) -> bool:
    spec = importlib.util.find_spec(f"transformers.models.{model}.modeling_{model}")
    return spec is not None and builder in importlib.import_module(spec.name).__dict__


needs_masking_utils = pytest.mark.skipif(
    not _builds_masks_with("gpt2", "create_causal_mask"),
    reason="this transformers' GPT-2 builds its mask without create_causal_mask",
)
needs_bidirectional_masks = pytest.mark.skipif(
    not all(_builds_masks_with(m, "create_bidirectional_mask") for m in ("bert", "t5")),
    reason="this transformers' BERT and T5 build masks without create_bidirectional_mask",
)


def traced(name: str) -> ModelLog:
    case = STRUCTURE_MODELS[name]()
    with torch.no_grad():
        return lw.trace(case.model, case.args, case.kwargs)


@pytest.fixture(scope="module")
def logs() -> dict[str, ModelLog]:
    return {name: traced(name) for name in ("gpt2", "bert", "t5", "gru_cell_lm", "resnet_stages")}


# ---- function groups -------------------------------------------------------------------------


@needs_masking_utils
def test_gpt2_mask_builder_ops_are_one_group_named_after_the_function(logs) -> None:
    log = logs["gpt2"]
    groups = function_groups(log.ops)
    mask = groups["transformer.create_causal_mask()"]
    assert mask.module == "transformer" and mask.function == "create_causal_mask"
    assert mask.n_ops >= 10 and mask.n_passes == 1
    inside = [op for op in log.ops if op.function == "create_causal_mask"]
    assert {op.module for op in inside} == {"transformer"}
    # the mask's plumbing (arange, le, and; expand in transformers 5) is in it; the
    # embeddings are not
    assert {"arange", "le"} <= {op.func for op in inside}
    assert not any(op.function for op in log.ops if op.func == "embedding")
    # loose at the top level of `transformer` now: a handful, not the mask's dozens
    loose = [op for op in log.ops if op.module == "transformer" and not op.function]
    assert len(loose) < 12 < len(inside)


@needs_bidirectional_masks
def test_bert_and_t5_mask_builders_are_groups(logs) -> None:
    bert = {g.function for g in function_groups(logs["bert"].ops).values() if g.module == "bert"}
    # named by the function that made the ops (#36): BertModel's own `_create_attention_masks`
    # only calls it
    assert bert == {"create_bidirectional_mask"}
    t5 = {g.address for g in function_groups(logs["t5"].ops).values()}
    assert "encoder.create_bidirectional_mask()" in t5
    assert "encoder.block.0.layer.0.SelfAttention.compute_bias()" in t5
    # another class's method keeps its class; Cache.update only calls the layer's update
    assert any(a.endswith(".DynamicLayer.update()") for a in t5)


def test_helper_of_one_op_and_a_function_holding_the_whole_forward_are_no_group() -> None:
    def twice(t: torch.Tensor) -> torch.Tensor:
        return t * 2  # one op: a box around it says nothing

    def scale_shift(t: torch.Tensor) -> torch.Tensor:
        return (t * 3 + 1).relu()

    def forward(x: torch.Tensor) -> torch.Tensor:
        return scale_shift(twice(x)) + scale_shift(x)

    # FunctionModule's forward calls `forward`, which holds every op it made: the groups are
    # one call deeper, one per line calling scale_shift
    log = lw.trace(FunctionModule(forward), (torch.randn(2, 3),))
    name = "scale_shift"  # a nested function by its own name
    assert [op.function for op in log.ops] == ["", *[name] * 3, *[f"{name}~2"] * 3, ""]


def test_a_loss_helper_in_a_traced_section_is_a_group() -> None:
    def loss_of(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return nn.functional.cross_entropy(logits.flatten(0, 1), target.flatten())

    model = nn.Linear(4, 5)
    x, target = torch.randn(2, 3, 4), torch.randint(0, 5, (2, 3))
    with lw.tracing(model) as section:
        loss_of(model(x), target)
    assert [(op.func, op.function) for op in section.log.ops if op.function] == [
        ("flatten", "loss_of"),
        ("flatten", "loss_of"),
        ("cross_entropy", "loss_of"),
    ]


@needs_masking_utils
def test_payload_boxes_function_groups_like_modules_in_both_views(logs) -> None:
    payload = build_payload(logs["gpt2"])
    (mask,) = [
        m
        for m in payload["modules"]
        if m.get("kind") == "function" and m["parent"] == "transformer"
    ]
    assert mask == {
        "address": "transformer.create_causal_mask()",
        "className": "create_causal_mask",
        "parent": "transformer",
        "nPasses": 1,
        "nOps": mask["nOps"],
        "kind": "function",
    }
    unrolled = {n["id"]: n["groups"] for n in payload["unrolled"]["nodes"]}
    rolled = {n["id"]: n["groups"] for n in payload["rolled"]["nodes"]}
    for op in logs["gpt2"].ops:
        if op.function == "create_causal_mask":
            assert unrolled[op.label] == ["transformer:1", "transformer.create_causal_mask():1"]
            assert rolled[op.layer] == ["transformer", "transformer.create_causal_mask()"]


def test_function_groups_survive_save_and_load(logs, tmp_path) -> None:
    log = logs["gpt2"]
    loaded = lw.load(log.save(tmp_path / "gpt2"))
    assert [op.function for op in loaded.ops] == [op.function for op in log.ops]
    assert function_groups(loaded.ops) == function_groups(log.ops)
    # written where an op has one, as format version 5; a log with none stays version 3
    document = json.loads((tmp_path / "gpt2" / "log.json").read_text())
    # (version 7 where an op inside torch.vmap cannot be replayed: transformers 4.57's masks)
    replays = [n["replay"] for n in document["nodes"] if n.get("replay")]
    vmapped = any("unavailable" in r and "in_transform" in r for r in replays)
    assert document["version"] == (TRANSFORM_NOTE_VERSION if vmapped else FUNCTION_VERSION)
    assert FUNCTION_VERSION == 5
    written = [n for n in document["nodes"] if "function" in n]
    assert written and all(n["function"] for n in written)
    plain = lw.trace(nn.Linear(2, 2), (torch.randn(1, 2),)).save(tmp_path / "linear")
    assert json.loads((plain / "log.json").read_text())["version"] == 3


# ---- structure ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["gpt2", "bert", "t5", "resnet_stages"])
def test_models_with_masks_are_not_recurrent(logs, name: str) -> None:
    log = logs[name]
    assert log.recurrent_layers == []
    assert log.structure == "branching"
    assert "structure: branching" in str(log)


def test_a_gru_cell_loop_is_recurrent_through_its_cell(logs) -> None:
    log = logs["gru_cell_lm"]
    assert log.structure == "recurrent"
    (layer,) = log.recurrent_layers
    assert log[f"{layer}:2"].func == "gru_cell"
    # the cell's second step reads the hidden state its first step made
    assert f"{layer}:1" in log[f"{layer}:2"].parents
    assert f"structure: recurrent ({layer} reads its own earlier pass)" in str(log)


def test_a_helper_run_twice_on_independent_data_is_not_recurrence() -> None:
    def norm(t: torch.Tensor) -> torch.Tensor:
        return t / t.norm()

    def forward(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.stack([norm(t) for t in (a, b)])  # one line, two passes on a and b

    log = lw.trace(FunctionModule(forward), (torch.randn(3), torch.randn(3)))
    assert max(op.n_passes for op in log.ops) == 2
    assert log.structure != "recurrent"


def test_adding_branches_up_is_no_recurrence_but_a_loop_through_weights_is() -> None:
    def added(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return sum(t.sin() for t in (a, b))  # add:2 reads add:1, an accumulation

    log = lw.trace(FunctionModule(added), (torch.randn(3), torch.randn(3)))
    assert log.structure != "recurrent"

    class Loop(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(3, 3)

        def forward(self, h: torch.Tensor) -> torch.Tensor:
            for _ in range(3):
                h = self.lin(h)  # one op fed its own result, through weights
            return h

    log = lw.trace(Loop(), (torch.randn(3),))
    assert log.structure == "recurrent" and log.recurrent_layers == ["linear_1_1"]


# ---- repeated blocks -----------------------------------------------------------------------------


def test_stages_of_different_widths_do_not_fold_but_their_blocks_do(logs) -> None:
    log = logs["resnet_stages"]
    stages = "resnet.encoder.stages"
    assert log.repeated_blocks == [
        [f"{stages}.1.layers.1", f"{stages}.1.layers.2"],
        [f"{stages}.2.layers.1", f"{stages}.2.layers.2"],
    ]
    # the rolled graph never gives a layer a shape one of its passes lacks
    for _, data in log.rolled_graph.nodes(data=True):
        shapes = {r.shape for r in data["records"]}
        assert len(shapes) == 1, (data["func"], shapes)


def test_rolled_passes_of_different_shapes_say_so() -> None:
    def forward(x: torch.Tensor) -> torch.Tensor:
        for _ in range(3):
            x = torch.cat([x, x[:, :1]], dim=1).relu()  # one column wider each pass
        return x

    log = lw.trace(FunctionModule(forward), (torch.randn(2, 3),))
    rolled = {n["id"]: n for n in build_payload(log)["rolled"]["nodes"]}
    relu = next(n for n in rolled.values() if n["func"] == "relu")
    assert relu["nPasses"] == 3 and relu["passShapes"] == [[2, 4], [2, 5], [2, 6]]
    edges = build_payload(log)["rolled"]["edges"]
    into_relu = next(e for e in edges if e["target"] == relu["id"])
    assert into_relu["shape"] == "2x4 | 2x5 | 2x6"
    # one shape for every pass: nothing extra
    same = lw.trace(FunctionModule(lambda x: x.relu().relu()), (torch.randn(2),))
    assert not any("passShapes" in n for n in build_payload(same)["rolled"]["nodes"])


def test_payload_names_the_recurrent_layers_for_the_first_view(logs) -> None:
    (layer,) = logs["gru_cell_lm"].recurrent_layers
    assert build_payload(logs["gru_cell_lm"])["recurrentLayers"] == [layer]
    assert "recurrentLayers" not in build_payload(logs["gpt2"])


@needs_masking_utils
def test_the_widget_accepts_a_function_group_as_expanded(logs) -> None:
    widget = lw.LensWidget.from_log(logs["gpt2"])
    try:
        widget.expanded = ["transformer", "transformer.create_causal_mask()"]
        assert widget.expanded == ["transformer", "transformer.create_causal_mask()"]
    finally:
        widget.close()
