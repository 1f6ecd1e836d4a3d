"""Narrow widths (issue 24, item 17): at 600 px the toolbar stays one line and no word or
number in it breaks; the inspector's source path wraps only at a "/", never inside a file
name or its line number. GPT-2 traced for real, plain page harness.
"""

from __future__ import annotations

import pytest
from lens_harness import lens, open_widget, wait_idle

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

import lens_widget as lw  # noqa: E402
from lens_widget.widget.payload import build_payload  # noqa: E402
from model_zoo import TEST_MODELS  # noqa: E402

# Each visible toolbar item: its box and how many line boxes each of its shown texts takes.
TOOLBAR = """() => [...document.querySelector('[data-testid=toolbar]').children]
  .filter((el) => el.getBoundingClientRect().width > 0)
  .map((el) => {
    const r = el.getBoundingClientRect();
    const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    const lines = [];
    for (let t = walker.nextNode(); t; t = walker.nextNode()) {
      if (!t.textContent.trim()) continue;
      const range = document.createRange();
      range.selectNodeContents(t);
      const rects = [...range.getClientRects()].filter((q) => q.width > 0);
      const rows = new Set(rects.map((q) => Math.round(q.top))).size;
      if (rects.length) lines.push([t.textContent, rows]);
    }
    return { cls: el.className, top: r.top, bottom: r.bottom, right: r.right, lines };
  })"""

# The source path's text pieces (split at "/"), and the line boxes each one takes.
SOURCE = """() => {
  const el = document.querySelector('.lens-source .lens-mono');
  if (!el) return null;
  const out = [];
  for (const t of el.childNodes) {
    if (t.nodeType !== Node.TEXT_NODE) continue;
    const range = document.createRange();
    range.selectNodeContents(t);
    const rects = [...range.getClientRects()].filter((q) => q.width > 0);
    out.push([t.textContent, new Set(rects.map((q) => Math.round(q.top))).size]);
  }
  return { text: el.textContent, pieces: out };
}"""


@pytest.fixture(scope="module")
def gpt2() -> dict:
    case = TEST_MODELS["gpt2"]()
    with torch.no_grad():
        return build_payload(lw.trace(case.model, case.args, case.kwargs, save=None))


def test_the_toolbar_is_one_line_of_whole_words_at_600px(page, gpt2, artifacts) -> None:
    open_widget(page, gpt2, width=600)
    items = page.evaluate(TOOLBAR)
    page.screenshot(path=str(artifacts / "toolbar_600px.png"))
    assert len(items) >= 8
    row = min(i["top"] for i in items), max(i["bottom"] for i in items)
    assert row[1] - row[0] < 40, items  # one row: no item wrapped below the others
    root = page.locator("[data-testid=lens-root]").bounding_box()
    assert max(i["right"] for i in items) <= root["x"] + root["width"] + 0.5
    for item in items:
        for text, lines in item["lines"]:
            assert lines == 1, (text, item)  # no word or number split over two lines
    # the model's name is cut in the middle, the op count kept whole; the tooltip has both
    title = page.get_attribute("[data-testid=model-title]", "title")
    assert title == f"GPT2LMHeadModel · {gpt2['nOps']} ops"
    assert page.inner_text("[data-testid=model-title] small") == f"· {gpt2['nOps']} ops"
    assert page.errors == []


def test_the_source_path_wraps_only_between_folders(page, gpt2) -> None:
    open_widget(page, gpt2, width=600)
    sdpa = next(
        n["id"] for n in gpt2["unrolled"]["nodes"] if n["func"] == "scaled_dot_product_attention"
    )
    page.fill("[data-testid=search]", sdpa)
    page.locator("[data-testid=search-result]").first.wait_for()
    page.keyboard.press("Enter")
    wait_idle(page)
    assert lens(page, "selected") == sdpa
    page.locator(".lens-source .lens-mono").wait_for()
    src = page.evaluate(SOURCE)
    assert src is not None and ":" in src["text"]
    assert src["pieces"][-1][0].endswith(src["text"].rsplit("/", 1)[-1])
    for text, lines in src["pieces"]:
        assert lines == 1, (text, src)  # a folder, the file name and its line number stay whole
    assert page.errors == []
