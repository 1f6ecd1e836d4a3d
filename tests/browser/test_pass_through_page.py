"""Structure first (#36 item 5): modules that return their input unchanged (nn.Identity,
Dropout in eval or p=0; 6 of a timm ViT's 16 first-screen items) are folded into the op before
them, the footer counts them, and clicking the count shows them again."""

from __future__ import annotations

import torch
from lens_harness import lens, open_widget, wait_idle, widget_kernel

from lens_widget.widget import LensWidget
from model_zoo.first_screen import plain_vit

IDLE = {"Identity", "Dropout"}


def _shown_classes(page, widget: LensWidget) -> list[str]:
    classes = {m["address"]: m["className"] for m in widget.graph["modules"]}
    items = page.evaluate("() => window.__el.__lens.sceneGeometry().items.map((i) => i.id)")
    boxes = page.evaluate("() => window.__el.__lens.sceneGeometry().boxes.map((b) => b.key)")
    keys = [i[1:] for i in items if i.startswith("@")] + boxes
    return [classes.get(k.rsplit(":", 1)[0], "") for k in keys]


def test_identity_and_eval_dropout_modules_fold_away_with_a_count_that_shows_them(page) -> None:
    case = plain_vit()
    with torch.no_grad():
        widget = LensWidget(case.model, case.args)
    passing = {m["address"] for m in widget.graph["modules"] if m.get("passThrough")}
    assert {"pos_drop", "norm_pre", "fc_norm", "head_drop", "blocks.0.ls1"} <= passing
    assert not passing & {"blocks.0.norm1", "head", "patch_embed"}
    open_widget(page, widget.graph, python_kernel=widget_kernel(widget), width=1340)
    assert not IDLE & set(_shown_classes(page, widget))
    note = page.locator("[data-testid=pass-through]")
    assert note.inner_text().startswith("4 Dropout/Identity modules"), note.inner_text()
    # the graph still runs through: the patch embedding feeds the blocks past the folded boxes
    before = lens(page, "visibleCount")
    note.click()
    wait_idle(page)
    shown = _shown_classes(page, widget)
    assert shown.count("Dropout") == 2 and shown.count("Identity") == 2, shown
    assert lens(page, "visibleCount") > before
    assert page.locator("[data-testid=pass-through]").count() == 0
    assert page.errors == []
