"""`lw.show`: the standalone page as a plain HTML output, within its byte budget, saying what it
left out; and the note a displayed widget leaves for a notebook saved without widget state."""

import html
import re

import pytest
import torch
from IPython.core.interactiveshell import InteractiveShell
from IPython.display import display
from IPython.utils.capture import capture_output
from torch import nn

import lens_widget as lw
from lens_widget.widget import LensWidget
from lens_widget.widget.html_export import BUNDLE, page_blocks
from lens_widget.widget.show import DEFAULT_SHOW_BYTES
from lens_widget.widget.state_note import NOTE_CLASS, STATE_NOTE_CSS
from model_zoo import TEST_MODELS

pytestmark = pytest.mark.skipif(not BUNDLE.exists(), reason="frontend bundle not built")


@pytest.fixture(scope="module", autouse=True)
def shell():
    return InteractiveShell.instance()  # display() publishes through it


@pytest.fixture(scope="module")
def gpt2_log():
    case = TEST_MODELS["gpt2"]()
    return lw.trace(case.model, case.args, case.kwargs)


def shown(target, **kwargs):
    """The one output `lw.show` displays: its MIME bundle."""
    with capture_output() as captured:
        assert lw.show(target, **kwargs) is None  # displays; nothing to display twice
    (output,) = captured.outputs
    return output.data


def framed_page(bundle) -> str:
    """The page inside the output's <iframe srcdoc=...>, unescaped."""
    found = re.fullmatch(r'<div class="lens-show"><iframe [^>]*srcdoc="([^"]*)"[^>]*>.*', bundle)
    assert found, bundle[:300]
    return html.unescape(found.group(1))


def test_show_is_the_standalone_page_in_a_frame_within_the_default_budget(gpt2_log, tmp_path):
    bundle = shown(gpt2_log)
    assert set(bundle) == {"text/html", "text/plain"}
    out = bundle["text/html"]
    assert len(out.encode()) <= DEFAULT_SHOW_BYTES
    page = framed_page(out)
    written = gpt2_log.to_html(tmp_path / "p.html", max_bytes=DEFAULT_SHOW_BYTES).read_text()
    # the same page as to_html's (its bundle and graph), sized to fit the frame's budget
    assert page_blocks(page)["bundle"] == page_blocks(written)["bundle"]
    assert page_blocks(page)["state"] == page_blocks(written)["state"]
    # an untrusted notebook drops the frame and keeps its text: that text says what to do
    assert "Trust Notebook" in out.rsplit(">", 3)[-3]
    # what was kept and left out, in the text and in the page
    assert bundle["text/plain"].startswith("lens_widget page: GPT2LMHeadModel:")
    note = bundle["text/plain"].removeprefix("lens_widget page: ")
    assert html.escape(note) in page


def test_show_keeps_to_a_small_budget_and_says_what_it_left_out(gpt2_log):
    with pytest.raises(ValueError, match=r"\(([\d,]+) bytes") as err:
        shown(gpt2_log, max_bytes=100_000)  # below the bundle alone
    base = int(re.search(r"\(([\d,]+) bytes", str(err.value)).group(1).replace(",", ""))
    full = shown(gpt2_log, max_bytes=20_000_000)
    assert "left out" not in full["text/plain"]
    budget = base + 40_000  # the frame's markup and a few activations
    small = shown(gpt2_log, max_bytes=budget)
    assert len(small["text/html"].encode()) <= budget
    kept, total = map(int, re.search(r"(\d+) of (\d+) activations", small["text/plain"]).groups())
    left = int(re.search(r"; (\d+) were left out", small["text/plain"]).group(1))
    assert kept > 0 and left > 0 and kept + left <= total
    assert f"to keep it under {budget / 1e6:.3g} MB" in small["text/plain"]


def test_show_of_a_widget_keeps_its_view_and_selection():
    model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3))
    w = LensWidget(model, torch.randn(2, 6))
    w.view = "rolled"
    page = framed_page(shown(w)["text/html"])
    state = page_blocks(page)["state"].decode()
    assert '"view":"rolled"' in state
    with pytest.raises(TypeError, match="ModelLog or a LensWidget"):
        lw.show(model)  # type: ignore[arg-type]
    w.close()


def test_a_displayed_widget_leaves_a_note_that_its_css_hides_while_it_is_drawn():
    model = nn.Sequential(nn.Linear(6, 8), nn.ReLU())
    w = LensWidget(model, torch.randn(2, 6))
    with capture_output() as captured:
        display(w)
    view, note = (o.data for o in captured.outputs)
    assert view["application/vnd.jupyter.widget-view+json"]["model_id"] == w.model_id
    assert set(note) == {"text/html"}  # nothing printed in a terminal
    assert f'class="{NOTE_CLASS}"' in note["text/html"]
    assert "Save Widget State Automatically" in note["text/html"]
    assert "lens_widget.show(w)" in note["text/html"]
    assert STATE_NOTE_CSS in w._css  # travels with the widget, also in a saved state
    w.close()
    with capture_output() as captured:
        display(w)  # a closed widget: its text only
    assert [set(o.data) for o in captured.outputs] == [{"text/plain"}]
