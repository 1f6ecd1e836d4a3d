"""LensWidget: traits, selection validation, requests over the comm, re-runs, failing models."""

import logging
import warnings

import numpy as np
import pytest
import torch
import traitlets
from torch import nn
from widget_replies import Replies

import lens_widget as lw
from lens_widget.widget import LensWidget


class Loop(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.cell = nn.Linear(6, 6)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        for _ in range(3):
            h = torch.tanh(self.cell(h))
        return h


class Breaks(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x).view(7)  # 2x3 cannot be viewed as 7


@pytest.fixture
def loop_widget():
    torch.manual_seed(0)
    return LensWidget(Loop().eval(), torch.randn(2, 6))


def linear_ids(w):
    return [n["id"] for n in w.graph["unrolled"]["nodes"] if n["func"] == "linear"]


def test_traits_after_construction(loop_widget):
    w = loop_widget
    assert w.view == "unrolled" and w.selected == "" and w.expanded == [] and w.status == ""
    assert w.graph["modelClass"] == "Loop"
    assert w.graph["nOps"] == len(w.model_log.ops) > 0
    assert [n["id"] for n in w.graph["unrolled"]["nodes"]] == [r.label for r in w.model_log.nodes]
    state = w.get_state()
    assert {"graph", "selected", "view", "expanded", "status", "_esm"} <= set(state)


def test_selected_accepts_ids_and_rejects_unknown(loop_widget):
    w = loop_widget
    first = linear_ids(w)[1]
    w.selected = first
    assert w.selected == first
    with pytest.raises(traitlets.TraitError, match="unknown node id 'nope_9_9'"):
        w.selected = "nope_9_9"
    assert w.selected == first
    w.selected = ""
    assert w.selected == ""


def test_view_is_validated_and_maps_selection(loop_widget):
    w = loop_widget
    with pytest.raises(traitlets.TraitError):
        w.view = "sideways"
    second = linear_ids(w)[1]
    layer = w.model_log[second].layer
    w.selected = second
    w.view = "rolled"
    assert w.selected == layer  # the same op, as its rolled node
    w.view = "unrolled"
    assert w.selected == w.model_log.rolled_graph.nodes[layer]["records"][0].label
    # an unrolled id set while rolled becomes its layer
    w.view = "rolled"
    w.selected = second
    assert w.selected == layer


def test_expanded_takes_module_addresses_only(loop_widget):
    w = loop_widget
    w.expanded = ["cell", "cell"]
    assert w.expanded == ["cell"]
    with pytest.raises(traitlets.TraitError, match="unknown module"):
        w.expanded = ["not.a.module"]


def test_activation_request_over_the_comm(loop_widget):
    replies = Replies(loop_widget)
    target = linear_ids(loop_widget)[2]
    reply, buffers = replies.ask("activation", {"id": target}, req_id=41)
    assert reply["ok"] is True and reply["id"] == 41
    assert reply["result"]["id"] == target and reply["result"]["shape"] == [2, 6]
    expected = loop_widget.model_log[target].activation
    np.testing.assert_array_equal(
        np.frombuffer(buffers[0], "<f4").reshape(2, 6), expected.detach().numpy()
    )
    bad, _ = replies.ask("activation", {"id": "x_1_1"}, req_id=42)
    assert bad == {"type": "response", "id": 42, "ok": False, "error": "unknown node id 'x_1_1'"}


def test_rerun_saves_the_requested_op():
    torch.manual_seed(0)
    w = LensWidget(Loop().eval(), torch.randn(2, 6), save=None)
    replies = Replies(w)
    target = linear_ids(w)[1]
    statuses = []
    w.observe(lambda c: statuses.append(c["new"]), "status")
    missing, _ = replies.ask("activation", {"id": target})
    assert missing["ok"] is False and "not saved" in missing["error"]
    w.selected = target

    reply, _ = replies.ask("rerun", {"id": target}, req_id=5)
    assert reply == {"type": "response", "id": 5, "ok": True, "result": {"ok": True}}
    assert statuses[0] != "" and statuses[-1] == ""
    saved = {n["id"] for n in w.graph["unrolled"]["nodes"] if n["saved"]}
    assert target in saved
    assert w.model_log[target].saved
    assert w.selected == target  # labels are stable across runs
    ok, buffers = replies.ask("activation", {"id": target})
    assert ok["ok"] is True and len(buffers[0]) == 2 * 6 * 4
    # a second re-run keeps the first target saved
    other = linear_ids(w)[2]
    replies.ask("rerun", {"id": other})
    assert w.model_log[target].saved and w.model_log[other].saved


def test_rerun_rejects_unknown_ids(loop_widget):
    replies = Replies(loop_widget)
    reply, _ = replies.ask("rerun", {"id": "nope"})
    assert reply["ok"] is False and "unknown node id" in reply["error"]
    reply, _ = replies.ask("explode", {})
    assert reply["ok"] is False and "unknown method" in reply["error"]


def test_failing_forward_shows_the_partial_log():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        w = LensWidget(Breaks(), torch.randn(2, 4))
    assert any("RuntimeError" in str(c.message) for c in caught)
    assert w.model_log.error is not None
    assert w.graph["error"].startswith("RuntimeError")
    assert w.graph["failedOp"] == w.model_log.failed_op
    failed = [n for n in w.graph["unrolled"]["nodes"] if n["failed"]]
    assert [n["id"] for n in failed] == [w.model_log.failed_op]
    assert any(n["func"] == "linear" for n in w.graph["unrolled"]["nodes"])


def test_from_log_cannot_rerun():
    log = lw.trace(Loop(), torch.randn(2, 6))
    w = LensWidget.from_log(log, view="rolled")
    assert w.model_log is log and w.view == "rolled"
    reply, _ = Replies(w).ask("rerun", {"id": log.ops[0].label})
    assert reply["ok"] is False and "cannot re-run" in reply["error"]


def test_bad_inputs_raise_like_a_plain_call():
    with pytest.raises(TypeError):
        LensWidget(Loop(), torch.randn(2, 6), kwargs=[1, 2])


def frontend_message(widget, data):
    """Deliver a comm message as ipywidgets receives one from the frontend."""
    widget._handle_msg({"content": {"data": data}, "buffers": []})


def test_bad_frontend_messages_go_through_ipywidgets_logging(loop_widget, caplog):
    w = loop_widget
    assert isinstance(w.log, (logging.Logger, logging.LoggerAdapter))  # ipywidgets' own
    first = linear_ids(w)[0]
    w.selected = first
    with caplog.at_level(logging.WARNING):
        frontend_message(w, {"method": "update", "state": {"selected": "nope_9_9"}})
        frontend_message(w, {"method": "no_such_method"})
    assert w.selected == first
    messages = [r.getMessage() for r in caplog.records]
    assert any("unknown node id 'nope_9_9'" in m for m in messages), messages
    assert any('with method "no_such_method"' in m for m in messages), messages
    frontend_message(w, {"method": "update", "state": {"selected": linear_ids(w)[1]}})
    assert w.selected == linear_ids(w)[1]  # good updates still apply


def test_trait_errors_quote_bad_values_briefly(loop_widget):
    huge = "n" * 1_000_000
    with pytest.raises(traitlets.TraitError) as selected:
        loop_widget.selected = huge
    with pytest.raises(traitlets.TraitError) as expanded:
        loop_widget.expanded = [huge, *(f"m{i}" for i in range(50))]
    for err in (selected, expanded):
        assert len(str(err.value)) < 1500 and "…" in str(err.value)


def test_rerun_of_a_rolled_layer_saves_every_pass():
    torch.manual_seed(0)
    w = LensWidget(Loop().eval(), torch.randn(2, 6), save=lambda r: r.func == "tanh")
    layer = w.model_log[linear_ids(w)[0]].layer
    assert not any(w.model_log[i].saved for i in linear_ids(w))
    reply, _ = Replies(w).ask("rerun", {"id": layer})
    assert reply["ok"] is True
    rolled = {n["id"]: n for n in w.graph["rolled"]["nodes"]}
    assert rolled[layer]["saved"] and rolled[layer]["nPasses"] == 3
    assert all(w.model_log[i].saved for i in linear_ids(w))
    kept = [r.label for r in w.model_log.ops if r.saved and r.func not in ("linear", "tanh")]
    assert kept == []  # the user's predicate still decides for the rest


def test_import_without_the_built_bundle(tmp_path):
    # a copy of the package with an empty static/: importing must work and say "run make"
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    src = Path(lw.__file__).parent
    shutil.copytree(src, tmp_path / "lens_widget", ignore=shutil.ignore_patterns("static"))
    (tmp_path / "lens_widget" / "static").mkdir()
    code = "from lens_widget.widget import LensWidget; print(LensWidget._esm)"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert "lens_widget frontend not built: run `make`" in out.stdout


class RaisesFirst(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(2, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        raise ValueError("refusing before any op")


@pytest.mark.parametrize(
    ("model", "inputs", "error", "match"),
    [
        (nn.Linear(2, 2), (), TypeError, "missing 1 required positional argument"),
        (RaisesFirst(), torch.randn(1, 2), ValueError, "refusing before any op"),
    ],
)
def test_failure_before_any_op_raises_the_original_error(model, inputs, error, match):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "showing the partial trace" warning either
        with pytest.raises(error, match=match):
            LensWidget(model, inputs)


class TrainNoise(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 8)
        self.bn = nn.BatchNorm1d(8)
        self.drop = nn.Dropout(0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.drop(self.bn(self.lin(x)))


def test_rerun_replays_the_first_pass_and_restores_the_world():
    torch.manual_seed(0)
    model = TrainNoise().train()
    w = LensWidget(model, torch.randn(5, 4))
    first = w.model_log.output.detach().clone()
    # the user keeps working: the model's state and the RNG move on
    model(torch.randn(5, 4))
    buffers = {n: b for n, b in model.named_buffers()}
    before = {n: b.clone() for n, b in buffers.items()}
    rng = torch.get_rng_state()

    w.rerun(w.model_log.ops[0].label)

    torch.testing.assert_close(w.model_log.output, first, rtol=0, atol=0)
    after = dict(model.named_buffers())
    assert all(after[n] is buffers[n] for n in buffers)  # same buffer objects
    for name, value in before.items():
        torch.testing.assert_close(after[name], value, rtol=0, atol=0)
    assert torch.equal(torch.get_rng_state(), rng)


def test_height_is_a_synced_trait_with_bounds() -> None:
    torch.manual_seed(0)
    w = LensWidget(Loop().eval(), torch.randn(2, 6), height=900)
    assert w.height == 900
    assert w.trait_metadata("height", "sync") is True
    assert LensWidget(Loop().eval(), torch.randn(2, 6)).height is None  # the frontend picks it
    with pytest.raises(traitlets.TraitError):
        w.height = 50
    with pytest.raises(traitlets.TraitError):
        LensWidget(Loop().eval(), torch.randn(2, 6), height=100_000)
    assert w.height == 900
