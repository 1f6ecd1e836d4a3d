"""The inspector's one-click ablation ("ablate" / "endAblation" requests): a re-trace with
`intervene=`, shown as the comparison clean (A) vs ablated (B); bad requests are refused
with a clear message and change nothing."""

import random

import numpy as np
import pytest
import torch
from torch import nn
from widget_replies import ask

import lens_widget as lw
from lens_widget.widget.lens_widget import LensWidget
from model_zoo.torch_nn import looped


def train_mlp() -> nn.Module:
    """BatchNorm statistics and dropout masks: a re-run that did not restore the RNG and
    buffers would differ everywhere, upstream too."""
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Dropout(0.5), nn.Linear(16, 4)
    ).train()


UPSTREAM = ("linear_1_1", "batch_norm_1_3")
DOWNSTREAM = ("dropout_1_5", "linear_2_6")


@pytest.fixture()
def widget() -> LensWidget:
    return LensWidget(train_mlp(), torch.randn(5, 8))


def world(model: nn.Module) -> dict[str, object]:
    """What the user can see of the model and torch: weights, buffers, RNG, mode, hooks."""
    return {
        "state": {k: v.clone() for k, v in model.state_dict().items()},
        "rng": torch.get_rng_state(),
        "training": [m.training for m in model.modules()],
        "hooks": [len(m._forward_hooks) + len(m._forward_pre_hooks) for m in model.modules()],
    }


def assert_same_world(before: dict[str, object], after: dict[str, object]) -> None:
    assert before.keys() == after.keys()
    for key in ("training", "hooks"):
        assert before[key] == after[key], key
    assert torch.equal(before["rng"], after["rng"])
    for name, value in before["state"].items():
        assert torch.equal(value, after["state"][name]), name


def test_zero_ablation_shows_clean_vs_ablated_with_zero_difference_upstream(widget):
    clean = widget.model_log
    torch.manual_seed(123)  # the user's RNG moved on since the widget traced
    before = world(widget._model)
    reply, _ = ask(widget, "ablate", {"id": "relu_1_4", "kind": "zero"})
    assert reply["ok"], reply
    assert_same_world(before, world(widget._model))

    assert widget.model_log is clean  # the graph stays the clean run's (A)
    cmp = widget.comparison
    assert cmp is not None and cmp.a is clean
    assert torch.equal(cmp["relu_1_4"].b.activation, torch.zeros(5, 16))
    assert cmp["relu_1_4"].b.intervened
    for label in UPSTREAM:  # same dropout mask and BatchNorm statistics as the clean run
        assert cmp[label].max_abs == 0.0, label
    for label in DOWNSTREAM:
        assert cmp[label].max_abs > 0, label
    assert widget.graph["ablation"] == {
        "target": "relu_1_4",
        "kind": "zero",
        "dim": None,
        "dimName": None,
        "text": "relu_1_4 zeroed",
    }
    assert widget.graph["compare"] == {"onlyA": [], "onlyB": []}

    # the difference overlay and the inspector's sides answer as in LensWidget.compare
    diff, buffers = ask(widget, "activation", {"id": "linear_2_6", "side": "diff"})
    assert diff["ok"], diff
    expected = clean["linear_2_6"].activation - cmp["linear_2_6"].b.activation
    assert diff["result"]["stats"]["max"] == pytest.approx(expected.max().item(), rel=1e-5)
    rel, _ = ask(widget, "metrics", {"metric": "relL2"})
    assert rel["ok"], rel


def test_mean_ablation_replaces_the_output_by_its_mean_over_the_dim(widget):
    reply, _ = ask(widget, "ablate", {"id": "batch_norm_1_3", "kind": "mean", "dim": 0})
    assert reply["ok"], reply
    clean = widget.model_log["batch_norm_1_3"].activation
    ablated = widget.comparison["batch_norm_1_3"].b.activation
    torch.testing.assert_close(ablated, clean.mean(0, keepdim=True).expand_as(clean))
    info = widget.graph["ablation"]
    assert (info["kind"], info["dim"], info["dimName"]) == ("mean", 0, "dim 0")  # unnamed
    assert info["text"] == "batch_norm_1_3 replaced by its mean over dim 0"
    assert widget.comparison["linear_1_1"].max_abs == 0.0


def test_end_ablation_goes_back_to_the_plain_trace(widget):
    plain = dict(widget.graph)
    assert ask(widget, "ablate", {"id": "relu_1_4", "kind": "zero"})[0]["ok"]
    reply, _ = ask(widget, "endAblation", {})
    assert reply["ok"], reply
    assert "ablation" not in widget.graph and "compare" not in widget.graph
    assert widget.graph == plain
    assert widget.comparison is None and widget.ablation is None
    bad, _ = ask(widget, "metrics", {"metric": "relL2"})
    assert not bad["ok"] and "needs a comparison" in bad["error"]


def test_python_api_and_rerun_ends_the_ablation(widget):
    widget.ablate("linear_1_1", "mean", dim=-1)  # counted from the end, as in torch
    assert widget.ablation is not None and widget.ablation.dim_name == "feature"
    assert widget.ablation.dim == 1
    widget.rerun()  # a new clean run: the old comparison no longer describes it
    assert widget.ablation is None and "ablation" not in widget.graph


def test_a_rolled_layer_ablates_every_pass():
    case = looped()
    w = LensWidget(case.model, case.args)
    layers = [n["id"] for n in w.graph["rolled"]["nodes"] if n["nPasses"] == 3]
    relu = next(layer for layer in layers if layer.startswith("relu"))
    assert ask(w, "ablate", {"id": relu, "kind": "zero"})[0]["ok"]
    ablated = [op for op in w.comparison.b.ops if op.layer == relu]
    assert len(ablated) == 3 and all(op.intervened for op in ablated)
    assert all(float(op.activation.abs().max()) == 0.0 for op in ablated)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"id": "nope_1_1", "kind": "zero"}, "unknown node id 'nope_1_1'"),
        ({"id": 7, "kind": "zero"}, "id must be a string"),
        ({"id": "relu_1_4", "kind": "mean", "dim": 2}, "dim 2 out of range [-2, 2)"),
        ({"id": "relu_1_4", "kind": "mean", "dim": -3}, "dim -3 out of range [-2, 2)"),
        ({"id": "relu_1_4", "kind": "mean", "dim": True}, "dim must be an integer"),
        ({"id": "relu_1_4", "kind": "mean"}, "kind 'mean' needs dim"),
        ({"id": "relu_1_4", "kind": "zero", "dim": 0}, "dim is only for kind 'mean'"),
        ({"id": "relu_1_4", "kind": "lambda t: t"}, "kind must be one of zero, mean"),
        ({"id": "relu_1_4"}, "missing params: kind"),
        ({"id": "relu_1_4", "kind": "zero", "fn": "t*0"}, "unknown params: fn"),
        ({"id": "input.0", "kind": "zero"}, "input.0 is a input: only ops can be ablated"),
        ({"id": "add_1_2", "kind": "mean", "dim": 0}, "only a float output has a mean"),
    ],
)
def test_bad_ablations_are_refused_and_change_nothing(widget, params, message):
    graph = widget.graph
    before = world(widget._model)
    reply, _ = ask(widget, "ablate", params)
    assert not reply["ok"]
    assert message in reply["error"]
    assert widget.graph is graph and widget.comparison is None
    assert_same_world(before, world(widget._model))


def test_a_bad_ablation_keeps_the_ablation_shown(widget):
    assert ask(widget, "ablate", {"id": "relu_1_4", "kind": "zero"})[0]["ok"]
    shown = widget.graph
    assert not ask(widget, "ablate", {"id": "relu_1_4", "kind": "mean", "dim": 9})[0]["ok"]
    assert widget.graph is shown and widget.ablation.target == "relu_1_4"


def test_a_log_without_its_model_cannot_be_ablated(tmp_path):
    log = lw.trace(train_mlp(), torch.randn(5, 8))
    log.save(tmp_path / "run")
    for w in (LensWidget.from_log(lw.load(tmp_path / "run")), LensWidget.compare(log, log)):
        reply, _ = ask(w, "ablate", {"id": "relu_1_4", "kind": "zero"})
        assert not reply["ok"]
        assert "no model to re-run" in reply["error"]
    with pytest.raises(RuntimeError, match="no model to re-run"):
        LensWidget.from_log(log).ablate("relu_1_4")


def test_a_forward_that_fails_under_the_ablation_is_an_error_reply():
    class NeedsNonzero(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            h = torch.relu(x) + 1
            if bool((h == 0).any()):
                raise ValueError("h must not be zero")
            return h * 2

    model = NeedsNonzero()
    w = LensWidget(model, torch.randn(3))
    rng = torch.get_rng_state()
    reply, _ = ask(w, "ablate", {"id": "add_1_2", "kind": "zero"})
    assert not reply["ok"] and "h must not be zero" in reply["error"]
    assert w.comparison is None and "ablation" not in w.graph
    assert torch.equal(rng, torch.get_rng_state())


class _Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = nn.Linear(8, 8), nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.b(self.a(x).tanh()).relu() * 2 - 1


def test_a_folded_repeated_block_ablates_the_op_in_every_block():
    """In the rolled view the first block's tanh stands for all three blocks' (its id is
    also the first block's op label): every one of them is zeroed, and the banner says so;
    in the unrolled view the same id is that one op."""
    torch.manual_seed(0)
    w = LensWidget(nn.Sequential(*[_Block() for _ in range(3)]), (torch.randn(2, 8),))
    tanhs = [op.label for op in w.model_log.ops if op.func == "tanh"]
    assert len(w.model_log.repeated_blocks[0]) == 3  # the blocks fold into one
    w.view = "rolled"
    reply, _ = ask(w, "ablate", {"id": tanhs[0], "kind": "zero"})
    assert reply["ok"], reply
    diffs = {d.label: d for d in w.comparison}
    assert [diffs[label].rel_l2 for label in tanhs] == pytest.approx([1.0, 1.0, 1.0])
    assert w.ablation.describe() == f"{tanhs[0]} (all 3 passes) zeroed"
    w.end_ablation()
    w.view = "unrolled"
    w.ablate(tanhs[0])
    diffs = {d.label: d for d in w.comparison}
    assert diffs[tanhs[0]].rel_l2 == pytest.approx(1.0)
    assert diffs[tanhs[1]].rel_l2 != pytest.approx(1.0)  # the next block reads a changed input


class HostRandomMask(nn.Module):
    """Masks drawn from numpy and Python's `random` (wav2vec2's SpecAugment draws from numpy):
    a re-run must draw the same ones, and leave the user's generators as it found them."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(6, 6), nn.Linear(6, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mask = torch.from_numpy(np.random.rand(*x.shape) > 0.5)
        h = self.fc1(x.masked_fill(mask, 0.0)) * random.random()
        return self.fc2(torch.relu(h))


def test_an_ablation_redraws_numpy_and_python_random_as_the_clean_run_did():
    np.random.seed(0)
    random.seed(0)
    torch.manual_seed(0)
    widget = LensWidget(HostRandomMask(), torch.randn(3, 6))
    np.random.seed(5)  # the user's generators moved on since the widget traced
    random.seed(5)
    numpy_before, python_before = np.random.get_state(legacy=False), random.getstate()
    reply, _ = ask(widget, "ablate", {"id": "relu_1_4", "kind": "zero"})
    assert reply["ok"], reply
    cmp = widget.comparison
    for label in ("masked_fill_1_1", "linear_1_2", "mul_1_3"):  # upstream: the same masks
        assert cmp[label].max_abs == 0.0, label
    assert cmp["linear_2_5"].max_abs > 0
    numpy_after = np.random.get_state(legacy=False)
    assert np.array_equal(numpy_after["state"]["key"], numpy_before["state"]["key"])
    assert numpy_after["state"]["pos"] == numpy_before["state"]["pos"]
    assert random.getstate() == python_before
