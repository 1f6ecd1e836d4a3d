"""Real tier, marimo: a notebook with two LensWidgets of the tiny GPT-2, one shown as a plain
output and one through `mo.ui.anywidget`, served by `marimo edit` (its cells run on open) and by
`marimo run` (an app). marimo renders each anywidget in a shadow root of its own.

Each checks the widgets are styled (computed styles), that Python -> view works (a marimo
button whose cell sets `selected`), that a click plots, and that the canvas keeps its height.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from host_checks import (
    ROOT,
    assert_height_stays,
    assert_styled,
    click_op_and_see_plot,
    facts_html,
    page_facts,
    wait_inspecting,
    wait_laid_out,
    zoom_in_until_minimap,
)
from host_server import BIN, host_env, running_host
from lab_server import free_port
from test_jupyterlab import pytestmark  # noqa: F401 - skip on a missing bundle only outside CI

NOTEBOOK = """
import marimo

app = marimo.App()


@app.cell
def _():
    import json

    import marimo as mo

    import lens_widget as lw
    from model_zoo.language import gpt2

    case = gpt2()
    w = lw.LensWidget(case.model, case.args, case.kwargs)
    w
    return case, json, lw, mo, w


@app.cell
def _(case, lw, mo):
    w2 = lw.LensWidget(case.model, case.args, case.kwargs)
    wrapped = mo.ui.anywidget(w2)
    wrapped
    return (w2,)


@app.cell
def _(json, mo, w):
{facts}
    target = _ops[-1]
    pick = mo.ui.button(label="select from Python", value=0, on_click=lambda n: n + 1)
    mo.vstack([mo.Html(_facts), pick])
    return pick, target


@app.cell
def _(pick, target, w, w2):
    if pick.value:
        w.selected = target
        w2.selected = target
    return


if __name__ == "__main__":
    app.run()
"""


@pytest.fixture(scope="module", params=["edit", "run"])
def marimo_url(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    if not os.environ.get("CI"):  # a test dependency: CI must have it, so fail there instead
        pytest.importorskip("marimo")
    mode = request.param
    work = tmp_path_factory.mktemp(f"marimo_{mode}")
    facts = "".join(f"    {line}\n" for line in facts_html("w").splitlines())
    (work / "lens_notebook.py").write_text(NOTEBOOK.format(facts=facts.rstrip("\n")))
    # marimo reads a .marimo.toml found from its working directory before the user's own: the
    # edit server runs the notebook on open (marimo 0.25 does not by default), nothing else set
    (work / ".marimo.toml").write_text("[runtime]\nauto_instantiate = true\n")
    port = free_port()
    cmd = [str(BIN / "marimo"), "-q", mode, "lens_notebook.py", "--headless", "--no-token"]
    cmd += ["--host", "127.0.0.1", "--port", str(port)]
    if mode == "edit":
        cmd.append("--no-sandbox")
    url = f"http://127.0.0.1:{port}"
    env = host_env({"XDG_CONFIG_HOME": str(work / "config"), "MARIMO_SKIP_UPDATE_CHECK": "1"})
    with running_host(cmd, url, work, env):
        yield url


def output_box_fit(root: Any) -> dict[str, float] | None:
    """The scrolled output box around the widget (marimo edit's, with a maximum height), and
    how tall the widget is in it; None where there is none (marimo run)."""
    return root.evaluate(
        """(r) => {
          for (let p = r.parentElement || r.parentNode?.host; p && p !== document.body;
               p = p.parentElement || p.parentNode?.host) {
            const cs = getComputedStyle(p);
            const scrolls = cs.overflowY === 'auto' || cs.overflowY === 'scroll';
            if (scrolls && cs.maxHeight.endsWith('px'))
              return { box: p.clientHeight, widget: r.getBoundingClientRect().height };
          }
          return null;
        }"""
    )


def test_marimo_draws_styled_answers_clicks_and_python(
    marimo_url: str, page: Any, artifacts: Path, request: pytest.FixtureRequest
) -> None:
    mode = request.node.callspec.params["marimo_url"]
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.goto(marimo_url)
    plain, wrapped = page.locator(ROOT).nth(0), page.locator(ROOT).nth(1)
    for root in (plain, wrapped):
        wait_laid_out(page, root)
        # inside marimo's shadow roots, where the page's <head> styles do not apply
        assert root.evaluate("(r) => r.getRootNode() instanceof ShadowRoot")
        assert_styled(root)

    # the automatic height fits the widget in marimo edit's scrolled output (610 px)
    fit = output_box_fit(plain)
    if mode == "edit":
        assert fit is not None and fit["widget"] <= fit["box"], fit
    else:
        assert fit is None

    target, ops = page_facts(page)
    page.get_by_role("button", name="select from Python").click()
    for root in (plain, wrapped):
        assert wait_inspecting(root, target) == target  # Python -> view, in each flavour

    for root in (plain, wrapped):
        root.scroll_into_view_if_needed()
        click_op_and_see_plot(page, root, ops, avoid=target)
        if root is plain:
            page.screenshot(path=str(artifacts / f"marimo_{mode}.png"))
        zoom_in_until_minimap(page, root)
        assert_height_stays(page, root)

    errors = [e for e in page.errors if e.startswith("pageerror")]
    assert errors == []
