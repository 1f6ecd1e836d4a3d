"""What a person sees in the inspector and around the graph, on real traced models behind the
real request handler (plain page, fixtures/lens_harness.py): attention heatmaps equal to
softmax(QKᵀ·scale + mask), colour scales centred at 0, a live theme switch, the wheel leaving
the page scrollable. Narrow widgets: test_narrow_widget_page.py.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from lens_harness import click_item, lens, open_widget, wait_idle, widget_kernel

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
from torch import nn  # noqa: E402

from lens_widget.widget import LensWidget  # noqa: E402

MAIN = "[data-testid=plot-main]"
ATTN = "[data-testid=attention-plot]"


def ops_of(widget: LensWidget, func: str) -> list[str]:
    return [n.label for n in widget.model_log.ops if n.func == func]


def plot_data(page, selector: str) -> list[dict]:
    page.locator(f"{selector}.js-plotly-plot").wait_for()
    return page.evaluate(
        "(sel) => document.querySelector(sel).data.map(t => ({type: t.type, z: t.z, "
        "zmin: t.zmin, zmax: t.zmax}))",
        selector,
    )


def annotations(page) -> list[str]:
    """The captions over the main plot's small multiples."""
    return page.evaluate(
        "(sel) => [...document.querySelectorAll(sel + ' .annotation-text')]"
        ".map(a => a.textContent)",
        MAIN,
    )


def set_slider(page, testid: str, value: int) -> None:
    page.evaluate(
        """([id, v]) => {
          const el = document.querySelector(`[data-testid=${id}]`);
          el.value = String(v);
          el.dispatchEvent(new Event('input'));
          el.dispatchEvent(new Event('change'));
        }""",
        [testid, value],
    )


def select_by_search(page, label: str) -> None:
    page.fill("[data-testid=search]", label)
    page.locator("[data-testid=search-result]").first.wait_for()
    page.keyboard.press("Enter")
    wait_idle(page)
    assert lens(page, "selected") == label


# ---- attention maps ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def gpt2() -> LensWidget:
    torch.manual_seed(0)
    config = transformers.GPT2Config(n_layer=2, n_embd=32, n_head=4, vocab_size=64,
                                     n_positions=32, bos_token_id=0, eos_token_id=0)  # fmt: skip
    ids = torch.randint(0, 64, (2, 9), generator=torch.Generator().manual_seed(1))
    mask = torch.ones_like(ids)
    mask[1, :4] = 0  # left padding: the mask changes the maps of the second item
    return LensWidget(transformers.GPT2LMHeadModel(config).eval(), (ids,), {"attention_mask": mask})


def softmax_of_saved_inputs(widget: LensWidget, label: str, batch: int, head: int) -> np.ndarray:
    op = widget.model_log[label]
    query, key, _, attn_mask = [p.activations[i] for _, p, i in op.replay[1]]
    q, k = query[batch, head], key[batch, head]
    scores = q @ k.T * (1 / math.sqrt(q.shape[-1]))
    mask = attn_mask.expand(*query.shape[:2], 9, 9)[batch, head]
    return torch.softmax(scores.masked_fill(~mask, float("-inf")), -1).nan_to_num(0.0).numpy()


def shown_map(page, batch: int, head: int) -> np.ndarray:
    page.wait_for_function(
        """([sel, b, h]) => {
          const d = document.querySelector(sel);
          return d && d.dataset.batch === String(b) && d.dataset.head === String(h) && d.data;
        }""",
        arg=[ATTN, batch, head],
    )
    (trace,) = plot_data(page, ATTN)
    assert trace["type"] == "heatmap"
    return np.array(trace["z"], dtype=np.float64)


def test_attention_heatmaps_equal_the_softmax_of_the_saved_query_and_key(
    page, gpt2, artifacts
) -> None:
    open_widget(page, gpt2.graph, python_kernel=widget_kernel(gpt2))
    label = ops_of(gpt2, "scaled_dot_product_attention")[1]
    select_by_search(page, label)
    section = page.locator("[data-testid=attention]")
    section.wait_for()
    for batch, head in [(0, 0), (0, 2), (1, 2), (1, 3)]:
        if head != int(page.get_attribute(ATTN, "data-head") or 0):
            set_slider(page, "head-slider", head)
        if batch != int(page.get_attribute(ATTN, "data-batch") or 0):
            set_slider(page, "attention-batch-slider", batch)
        np.testing.assert_allclose(
            shown_map(page, batch, head), softmax_of_saved_inputs(gpt2, label, batch, head),
            atol=1e-6,
        )  # fmt: skip
        caption = page.inner_text("[data-testid=head-slider-caption]")
        assert caption == f"head {head} of 4"
    # token positions on the axes, and the padded queries of item 1 attend to nothing
    titles = page.evaluate(
        "(sel) => { const l = document.querySelector(sel).layout;"
        " return [l.xaxis.title.text, l.yaxis.title.text]; }",
        ATTN,
    )
    assert titles == ["key token", "query token"]
    page.screenshot(path=str(artifacts / "inspector_attention.png"))
    # the op's own output (batch, head, token, feature) is a grid of heads, not channels
    page.wait_for_function(
        "(sel) => [...document.querySelectorAll(sel + ' .annotation-text')].length === 4",
        arg=MAIN,
    )
    labels = annotations(page)
    assert labels == ["head 0", "head 1", "head 2", "head 3"]
    assert page.errors == []


def test_an_unsaved_attention_op_offers_a_rerun_that_saves_its_inputs(page) -> None:
    mha = nn.MultiheadAttention(8, 2, batch_first=True).eval()
    x = torch.randn(1, 5, 8)
    w = LensWidget(mha, (x, x, x), save=["multi_head_attention_forward"])
    open_widget(page, w.graph, python_kernel=widget_kernel(w))
    label = ops_of(w, "multi_head_attention_forward")[0]
    select_by_search(page, label)
    page.locator("[data-testid=attention-status]", has_text="not saved").wait_for()
    page.click("[data-testid=attention-rerun]")
    with torch.no_grad():
        _, expected = mha(x, x, x, average_attn_weights=False)
    np.testing.assert_allclose(shown_map(page, 0, 0), expected[0, 0].numpy(), atol=1e-6)
    assert page.errors == []


# ---- plots that read right --------------------------------------------------------------


@pytest.fixture(scope="module")
def cnn() -> LensWidget:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.Flatten(),
                          nn.Linear(4 * 6 * 6, 5)).eval()  # fmt: skip
    with torch.no_grad():
        model[0].bias.fill_(0.4)  # mostly positive output: an uncentred scale would show it
    return LensWidget(model, torch.randn(2, 3, 6, 6))


def test_conv_heatmaps_are_centred_at_zero_and_name_their_dims(page, cnn) -> None:
    open_widget(page, cnn.graph, python_kernel=widget_kernel(cnn))
    conv = ops_of(cnn, "conv2d")[0]
    click_item(page, conv)
    traces = plot_data(page, MAIN)
    assert [t["type"] for t in traces] == ["heatmap"] * 4
    out = cnn.model_log[conv].activation[0]
    assert float(out.min()) < 0 < abs(float(out.min())) < float(out.max())
    for t in traces:  # one symmetric range: 0 is the middle colour of every channel
        assert t["zmin"] == pytest.approx(-t["zmax"]) and t["zmax"] >= float(out.max()) - 1e-6
    labels = annotations(page)
    assert labels == ["channel 0", "channel 1", "channel 2", "channel 3"]
    dims = page.inner_text("[data-testid=activation-dims]")
    assert dims == "(batch, channel, height, width)"
    # the slider and the caption under the plot say the same thing
    assert page.inner_text("[data-testid=batch-slider-caption]") == "batch 0 of 2"
    assert "batch 0 of 2" in page.inner_text("[data-testid=activation-note]")
    set_slider(page, "batch-slider", 1)
    page.locator("[data-testid=activation-note]", has_text="batch 1 of 2").wait_for()
    assert page.inner_text("[data-testid=batch-slider-caption]") == "batch 1 of 2"
    # non-negative data (after the ReLU) gets a sequential scale from 0
    click_item(page, ops_of(cnn, "relu")[0])
    page.locator("[data-testid=activation-note]", has_text="batch 0 of 2").wait_for()
    relu = plot_data(page, MAIN)
    assert all(t["zmin"] == 0 for t in relu)
    # a (batch, feature) heatmap says so on its axes
    click_item(page, ops_of(cnn, "linear")[0])
    page.wait_for_function(
        "(sel) => document.querySelector(sel).layout?.xaxis?.title?.text === 'feature'", arg=MAIN
    )
    assert page.evaluate(f"document.querySelector('{MAIN}').layout.yaxis.title.text") == "batch"
    assert page.errors == []


# ---- a live theme switch ----------------------------------------------------------------

LIGHT_BG, DARK_BG = (251, 252, 253), (27, 30, 35)
LIGHT_TEXT, DARK_TEXT = "rgb(31, 41, 51)", "rgb(230, 233, 237)"

SWITCH_TO_DARK = """() => {
  document.body.dataset.jpThemeLight = 'false';
  document.body.style.cssText += ';background:#111;--jp-layout-color0:#111;' +
    '--jp-layout-color1:#1a1a1a;--jp-ui-font-color0:#e0e0e0;--jp-ui-font-color2:#9aa0a6;' +
    '--jp-border-color2:#333';
}"""
SWITCH_TO_LIGHT = """() => {
  document.body.dataset.jpThemeLight = 'true';
  document.body.style.cssText = '';
}"""


def canvas_corner(page) -> tuple[int, int, int]:
    return tuple(
        page.evaluate(
            """() => { const c = document.querySelector('[data-testid=graph-canvas]');
              return [...c.getContext('2d').getImageData(2, 2, 1, 1).data.slice(0, 3)]; }"""
        )
    )


def axis_text_fill(page, selector: str) -> str:
    return page.evaluate(
        "(sel) => document.querySelector(sel + ' .xtick text').style.fill", selector
    )


def legend_swatch(page) -> str:
    return page.evaluate(
        "() => getComputedStyle(document.querySelector('[data-testid=legend] i')).backgroundColor"
    )


def wait_for_theme(page, bg: tuple[int, int, int], text: str) -> None:
    page.wait_for_function(
        """([bg, text]) => {
          const c = document.querySelector('[data-testid=graph-canvas]');
          const px = [...c.getContext('2d').getImageData(2, 2, 1, 1).data.slice(0, 3)];
          const tick = document.querySelector('[data-testid=plot-hist] .xtick text');
          return px.join() === bg.join() && tick && tick.style.fill === text;
        }""",
        arg=[list(bg), text],
        timeout=10_000,
    )


def test_a_live_theme_switch_recolours_graph_legend_and_plots(page, cnn, artifacts) -> None:
    open_widget(page, cnn.graph, python_kernel=widget_kernel(cnn))
    click_item(page, ops_of(cnn, "linear")[0])
    plot_data(page, MAIN)
    page.locator("[data-testid=plot-hist] .xtick text").first.wait_for()
    assert canvas_corner(page) == LIGHT_BG
    assert axis_text_fill(page, MAIN) == LIGHT_TEXT
    light_swatch = legend_swatch(page)

    page.evaluate(SWITCH_TO_DARK)
    wait_for_theme(page, DARK_BG, DARK_TEXT)
    assert axis_text_fill(page, MAIN) == DARK_TEXT
    assert legend_swatch(page) != light_swatch
    page.screenshot(path=str(artifacts / "theme_switched_dark.png"))

    page.evaluate(SWITCH_TO_LIGHT)
    wait_for_theme(page, LIGHT_BG, LIGHT_TEXT)
    assert legend_swatch(page) == light_swatch
    assert page.errors == []


# ---- the wheel and the page -------------------------------------------------------------


def test_the_wheel_scrolls_the_page_unless_the_graph_has_focus(page, cnn) -> None:
    open_widget(page, cnn.graph)
    page.evaluate("() => { document.body.style.paddingBottom = '3000px'; window.scrollTo(0, 0); }")
    box = page.locator("[data-testid=graph-canvas]").bounding_box()
    x, y = box["x"] + 6, box["y"] + 6  # an empty corner: a click there selects nothing
    scale = lens(page, "scale")
    page.mouse.move(x + 100, y + 100)
    page.mouse.wheel(0, 240)
    page.wait_for_function("() => window.scrollY > 0")
    assert lens(page, "scale") == scale
    assert page.locator("[data-testid=wheel-hint]").is_visible()
    assert "Ctrl+scroll or click to zoom" in page.inner_text("[data-testid=wheel-hint]")

    page.evaluate("() => window.scrollTo(0, 0)")
    box = page.locator("[data-testid=graph-canvas]").bounding_box()
    page.mouse.click(box["x"] + 6, box["y"] + 6)  # focus the graph
    assert lens(page, "selected") == ""
    page.mouse.move(box["x"] + 100, box["y"] + 100)
    page.mouse.wheel(0, 240)
    page.wait_for_function("(s) => window.__el.__lens.scale < s", arg=scale)
    assert page.evaluate("() => window.scrollY") == 0
    assert page.locator("[data-testid=wheel-hint]").is_hidden()

    # a click elsewhere lets go: the wheel scrolls again, Ctrl+wheel (and a trackpad pinch,
    # which sends ctrlKey) still zooms
    page.mouse.click(box["x"] + 100, box["y"] + box["height"] + 120)  # the page below
    zoomed = lens(page, "scale")
    page.mouse.move(box["x"] + 100, box["y"] + 100)
    page.mouse.wheel(0, 120)
    page.wait_for_function("() => window.scrollY > 0")
    assert lens(page, "scale") == zoomed
    page.evaluate("() => window.scrollTo(0, 0)")
    page.keyboard.down("Control")
    page.mouse.wheel(0, -240)
    page.keyboard.up("Control")
    page.wait_for_function("(s) => window.__el.__lens.scale > s", arg=zoomed)
    assert page.evaluate("() => window.scrollY") == 0
    # and keyboard focus engages the graph too
    page.mouse.click(box["x"] + 100, box["y"] + box["height"] + 120)
    page.focus("[data-testid=graph-canvas]")
    page.mouse.move(box["x"] + 100, box["y"] + 100)
    before = lens(page, "scale")
    page.mouse.wheel(0, 120)
    page.wait_for_function("(s) => window.__el.__lens.scale < s", arg=before)
    assert page.evaluate("() => window.scrollY") == 0
    assert page.errors == []


class _VmapRows(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.func.vmap(lambda row: row.sin() * 2)(self.lin(x)) + 1


def test_an_op_inside_vmap_says_why_it_has_no_values(page) -> None:
    """Inside a torch.func transform an op's values are batched: the inspector says so and
    offers no re-run (one would keep nothing either), while the op after vmap plots."""
    w = LensWidget(_VmapRows(), (torch.randn(3, 4),))
    open_widget(page, w.graph, python_kernel=widget_kernel(w))
    page.click("[data-testid=expand-all]")
    wait_idle(page)
    click_item(page, ops_of(w, "sin")[0])
    page.wait_for_function(
        "() => document.querySelector('[data-testid=activation]')?.dataset.state === 'unavailable'"
    )
    text = page.locator("[data-testid=activation]").inner_text()
    assert "inside a torch.func transform" in text
    assert page.locator("[data-testid=rerun]").count() == 0

    click_item(page, ops_of(w, "add")[-1])
    page.locator(f"{MAIN}.js-plotly-plot").wait_for()
    assert page.errors == []


class _Recurrent(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(10, 16)
        self.lstm = nn.LSTM(16, 32, num_layers=2, batch_first=True)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        out, (h, c) = self.lstm(self.embed(ids))
        return out[:, -1] + h[-1]


def test_an_lstms_final_state_is_labelled_by_layer_batch_feature(page) -> None:
    """Picking output 1 of the lstm op (h_n) replots it with its own dims, not the input's."""
    w = LensWidget(_Recurrent(), (torch.randint(0, 10, (2, 7)),))
    open_widget(page, w.graph, python_kernel=widget_kernel(w))
    page.click("[data-testid=expand-all]")
    wait_idle(page)
    click_item(page, ops_of(w, "lstm")[0])
    dims = page.locator("[data-testid=activation-dims]")
    dims.filter(has_text="(batch, token, feature)").wait_for(timeout=10_000)
    page.select_option("[data-testid=output-picker]", "1")
    dims.filter(has_text="(layer, batch, feature)").wait_for(timeout=10_000)
    assert "(2, 2, 32) float32" in page.locator("[data-testid=activation]").inner_text()
    assert page.errors == []
