"""A re-run and an ablation, asked for from the inspector, keep the source lines the user's
trace showed: the layers of an nn.Sequential are located at the line that called the model,
and the re-run calls it from the message handler (in Jupyter, a line of ipywidgets)."""

from __future__ import annotations

import torch
from torch import nn
from widget_replies import Replies

from lens_widget.widget import LensWidget


def sources(widget: LensWidget) -> dict[str, tuple[str, str]]:
    return {n["id"]: (n["source"], n["sourceCode"]) for n in widget.graph["unrolled"]["nodes"]}


def test_a_rerun_and_an_ablation_keep_the_users_source_lines() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))
    w = LensWidget(model, (torch.randn(3, 4),), save=["linear"])
    first = sources(w)
    assert first["relu_1_2"][0].rsplit(":", 1)[0] == __file__
    assert first["relu_1_2"][1].startswith("w = LensWidget(model")
    replies = Replies(w)

    reply, _ = replies.ask("rerun", {"id": "relu_1_2"})
    assert reply["ok"] is True and w.model_log["relu_1_2"].saved
    assert sources(w) == first

    reply, _ = replies.ask("ablate", {"id": "relu_1_2", "kind": "zero"})
    assert reply["ok"] is True and "ablation" in w.graph
    assert sources(w) == first
    assert w.comparison is not None
    assert w.comparison.b["linear_2_3"].source == first["linear_2_3"][0]  # the ablated run
