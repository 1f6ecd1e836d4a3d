"""A `lw.tracing` section log in the plain page: the loss computed outside the model is drawn
at the top level, beside the model's box, not inside it."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from lens_harness import click_item, lens, open_widget, wait_idle
from torch import nn

import lens_widget as lw
from lens_widget.widget.payload import build_payload


def section_log() -> lw.ModelLog:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    x, labels = torch.randn(5, 4), torch.tensor([0, 1, 2, 0, 1])
    with lw.tracing(net=model) as t:
        logits = model(x)
        loss = F.cross_entropy(logits, labels) + 1e-3 * model[0].weight.pow(2).sum()
    del loss
    return t.log


def test_loss_ops_sit_at_the_top_level_beside_the_model(page, artifacts) -> None:
    log = section_log()
    ce = next(o for o in log.ops if o.func == "cross_entropy")
    first_linear = log["net.0"].label
    open_widget(page, build_payload(log))
    # First view: the loss op is drawn itself, the model's ops stand behind its box or in it.
    assert page.evaluate("(id) => window.__el.__lens.visibleItemFor(id)", ce.label) == ce.label
    page.click("[data-testid=expand-all]")
    wait_idle(page)
    scene = page.evaluate("() => window.__el.__lens.sceneGeometry()")
    items = {it["id"]: it for it in scene["items"]}
    boxes = {b["key"]: b for b in scene["boxes"]}
    net = next(b for k, b in boxes.items() if k.startswith("net:"))
    assert items[first_linear]["container"].startswith("net")

    def inside(item: dict, box: dict) -> bool:
        return (
            box["x"] <= item["x"]
            and item["x"] + item["w"] <= box["x"] + box["w"]
            and box["y"] <= item["y"]
            and item["y"] + item["h"] <= box["y"] + box["h"]
        )

    loss_ops = [o.label for o in log.ops if o.module == ""]
    assert {"cross_entropy", "pow", "add"} <= {log[label].func for label in loss_ops}
    for label in loss_ops:
        assert items[label]["container"] == "", label
        assert not inside(items[label], net), f"{label} drawn inside the model's box"
    assert inside(items[first_linear], net)
    assert any("cross_entropy" in line for line in lens_lines(page, ce.label))
    # What a person does next: click the loss op and read it in the inspector.
    click_item(page, ce.label)
    wait_idle(page)
    assert lens(page, "selected") == ce.label
    inspector = page.locator("[data-testid=inspector]").inner_text()
    assert "(top level)" in inspector and "input.labels" in inspector
    page.screenshot(path=str(artifacts / "section_loss.png"))
    assert page.errors == []


def lens_lines(page, item_id: str) -> list[str]:
    return page.evaluate("(id) => window.__el.__lens.itemLines(id)", item_id) or []
