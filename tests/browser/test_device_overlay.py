"""The device coloring, in the built widget on a real traced model whose ops ran on two
devices (cpu, then meta): a person picks "device" in the color-by picker, sees each device's
color on its ops and in the legend with its op count, and a module that ran on both as mixed."""

from __future__ import annotations

import torch
from lens_harness import lens, open_widget, reveal, wait_idle, widget_kernel
from test_overlays import pick
from test_standalone_html import open_from_disk
from torch import nn

import lens_widget as lw
from lens_widget.widget.lens_widget import LensWidget

CPU = "rgb(86,180,233)"  # render/deviceOverlay.ts CPU_COLOR
META = "rgb(204,121,167)"  # META_COLOR
MIXED = "rgb(206,212,218)"  # MIXED_COLOR


class Bridge(nn.Module):
    """Runs on cpu and hands its result over to the meta device: its ops ran on both."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.fc(x)).to("meta")


class Split(nn.Module):
    """A model dispatched over two devices, as a device_map would: bridge on cpu, head on meta."""

    def __init__(self) -> None:
        super().__init__()
        self.bridge = Bridge()
        with torch.device("meta"):
            self.head = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.bridge(x))


def split_widget() -> LensWidget:
    torch.manual_seed(0)
    return LensWidget(Split(), (torch.randn(2, 4),))


def colors(page, ids: list[str]) -> dict[str, str | None]:
    return {i: lens(page, f"overlayColor({i!r})") for i in ids}


def canvas_colors(page, item_id: str) -> set[str]:
    """Every color painted inside the item's box on the canvas, as "rgb(r,g,b)"."""
    return set(
        page.evaluate(
            """(id) => {
              const L = window.__el.__lens;
              const c = document.querySelector('[data-testid=graph-canvas]');
              const it = L.sceneGeometry().items.find((i) => i.id === id);
              const cam = L.camera, dpr = c.width / c.getBoundingClientRect().width;
              const at = (v, t) => Math.round((v * cam.scale + t) * dpr);
              const x = at(it.x, cam.tx), y = at(it.y, cam.ty);
              const w = Math.round(it.w * cam.scale * dpr), h = Math.round(it.h * cam.scale * dpr);
              const px = c.getContext('2d').getImageData(x, y, w, h).data;
              const out = new Set();
              for (let i = 0; i < px.length; i += 4)
                out.add(`rgb(${px[i]},${px[i + 1]},${px[i + 2]})`);
              return [...out];
            }""",
            item_id,
        )
    )


def legend_devices(page) -> dict[str, str]:
    return page.evaluate(
        """() => Object.fromEntries([...document.querySelectorAll('[data-testid=legend-device]')]
             .map((e) => [e.dataset.device, e.textContent]))"""
    )


def test_the_traced_ops_ran_on_cpu_and_meta() -> None:
    w = split_widget()
    on = {n["id"]: n["device"] for n in w.graph["unrolled"]["nodes"] if n["kind"] == "op"}
    assert on == {
        "linear_1_1": "cpu",
        "relu_1_2": "cpu",
        "to_1_3": "meta",
        "linear_2_4": "meta",
        "relu_2_5": "meta",
        "linear_3_6": "meta",
    }


def test_picking_device_colors_ops_by_device_with_a_legend(page, artifacts) -> None:
    w = split_widget()
    open_widget(page, w.graph, python_kernel=widget_kernel(w))
    options = page.eval_on_selector_all(
        "[data-testid=metric-picker] option", "os => os.map(o => o.value)"
    )
    assert "device" in options
    page.click("[data-testid=expand-all]")
    wait_idle(page)
    ops = ["linear_1_1", "relu_1_2", "to_1_3", "linear_2_4", "relu_2_5", "linear_3_6"]
    assert set(colors(page, ops).values()) == {None}  # colored by kind until picked

    sent_before = len(page.evaluate("() => window.__fake.log.sent"))
    pick(page, "device")
    wait_idle(page)
    got = colors(page, ops)
    assert got == {
        "linear_1_1": CPU,
        "relu_1_2": CPU,
        "to_1_3": META,
        "linear_2_4": META,
        "relu_2_5": META,
        "linear_3_6": META,
    }
    # sources and the output ran on a device too, but only ops are colored: they keep their kind
    assert lens(page, "overlayColor('input.0')") is None
    # the colors are computed from the graph: nothing was asked of the kernel
    sent = page.evaluate("() => window.__fake.log.sent")[sent_before:]
    assert [m for m in sent if m.get("method") == "metrics"] == []
    # what a person sees: the canvas painted the two colors
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
    assert CPU in canvas_colors(page, "linear_1_1")
    assert META in canvas_colors(page, "linear_2_4")
    assert META not in canvas_colors(page, "linear_1_1")
    assert legend_devices(page) == {"cpu": "cpu · 2 ops", "meta": "meta · 4 ops"}
    assert page.locator("[data-testid=legend-mixed]").count() == 0  # every module open
    assert page.locator("[data-testid=metric-log]").is_disabled()  # categories have no scale
    page.screenshot(path=str(artifacts / "overlay_device.png"))
    assert page.errors == []


def test_a_collapsed_module_shows_its_device_or_mixed_and_survives_expand_and_views(
    page, artifacts
) -> None:
    w = split_widget()
    open_widget(page, w.graph, python_kernel=widget_kernel(w))
    pick(page, "device")
    page.click("[data-testid=collapse-all]")
    wait_idle(page)
    shown = lens(page, "visibleIds")
    assert "@bridge:1" in shown and "@head:1" in shown, shown
    # head ran on meta only; bridge's linear and relu on cpu, its .to("meta") on meta
    assert colors(page, ["@bridge:1", "@head:1"]) == {"@bridge:1": MIXED, "@head:1": META}
    assert lens(page, "overlayShares('@bridge:1')") == [
        {"device": "cpu", "color": CPU, "count": 2},
        {"device": "meta", "color": META, "count": 1},
    ]
    assert lens(page, "overlayShares('@head:1')") is None
    mixed = page.locator("[data-testid=legend-mixed]")
    assert mixed.is_visible() and "mixed" in mixed.inner_text()
    assert legend_devices(page) == {"cpu": "cpu · 2 ops", "meta": "meta · 4 ops"}  # all ops
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
    painted = canvas_colors(page, "@bridge:1")
    assert {MIXED, CPU, META} <= painted  # neutral fill, the bar in both device colors
    assert CPU not in canvas_colors(page, "@head:1")
    page.screenshot(path=str(artifacts / "overlay_device_mixed.png"))

    # a person opens the mixed module: its ops show their own devices, nothing is mixed now
    reveal(page, "to_1_3")
    assert "@bridge:1" not in lens(page, "visibleIds")
    assert colors(page, ["@bridge.fc:1", "relu_1_2", "to_1_3", "@head:1"]) == {
        "@bridge.fc:1": CPU,  # a module whose ops all ran on cpu: cpu's color, not mixed
        "relu_1_2": CPU,
        "to_1_3": META,
        "@head:1": META,
    }
    assert page.locator("[data-testid=legend-mixed]").count() == 0
    assert page.locator("[data-testid=metric-picker]").input_value() == "device"

    # the rolled view keeps the coloring (each layer over its one pass), collapsed again too
    page.click("[data-testid=view-rolled]")
    wait_idle(page)
    page.wait_for_function("() => window.__el.__lens.view === 'rolled'")
    assert colors(page, ["@bridge.fc", "relu_1_2", "to_1_3"]) == {
        "@bridge.fc": CPU,
        "relu_1_2": CPU,
        "to_1_3": META,
    }
    page.click("[data-testid=collapse-all]")
    wait_idle(page)
    assert colors(page, ["@bridge", "@head"]) == {"@bridge": MIXED, "@head": META}

    pick(page, "")  # back to colors by kind
    assert colors(page, ["@bridge", "@head"]) == {"@bridge": None, "@head": None}
    assert lens(page, "overlayShares('@bridge')") is None
    assert page.errors == []


def test_a_one_device_log_offers_device_too(page) -> None:
    torch.manual_seed(0)
    w = LensWidget(nn.Sequential(nn.Linear(4, 4), nn.ReLU()), (torch.randn(2, 4),))
    open_widget(page, w.graph, python_kernel=widget_kernel(w))
    pick(page, "device")
    wait_idle(page)
    assert legend_devices(page) == {"cpu": "cpu · 2 ops"}
    assert page.errors == []


def test_a_saved_page_colors_by_device_without_a_kernel(page, tmp_path) -> None:
    """The coloring needs only the graph: a standalone page (no kernel) shows it too."""
    torch.manual_seed(0)
    log = lw.trace(Split(), torch.randn(2, 4))
    open_from_disk(page, log.to_html(tmp_path / "split.html"))
    pick(page, "device")
    wait_idle(page)
    assert legend_devices(page) == {"cpu": "cpu · 2 ops", "meta": "meta · 4 ops"}
    page.click("[data-testid=collapse-all]")
    wait_idle(page)
    assert colors(page, ["@bridge:1", "@head:1"]) == {"@bridge:1": MIXED, "@head:1": META}
    assert page.errors == []
