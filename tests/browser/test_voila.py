"""Real tier, Voilà: a notebook of the tiny GPT-2's LensWidget and an ipywidgets button whose
handler sets `selected`, served by `voila` (which attaches each widget's element to the page
only after rendering it).

Checks the widget is styled (computed styles), that Python -> view works (the button), that a
click plots, and that the canvas keeps its height.
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
from lab_server import free_port, write_notebook
from test_jupyterlab import pytestmark  # noqa: F401 - skip on a missing bundle only outside CI

SETUP = """\
import json

import ipywidgets

import lens_widget as lw
from model_zoo.language import gpt2

case = gpt2()
w = lw.LensWidget(case.model, case.args, case.kwargs)
w"""

BUTTON = """\
pick = ipywidgets.Button(description="select from Python")
pick.on_click(lambda _: setattr(w, "selected", _ops[-1]))
ipywidgets.VBox([ipywidgets.HTML(_facts), pick])"""


@pytest.fixture(scope="module")
def voila_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if not os.environ.get("CI"):  # a test dependency: CI must have it, so fail there instead
        pytest.importorskip("voila")
    work = tmp_path_factory.mktemp("voila")
    write_notebook(work / "lens.ipynb", [SETUP, facts_html("w") + BUTTON])
    (work / "config").mkdir()
    port = free_port()
    cmd = [str(BIN / "voila"), "lens.ipynb", "--no-browser", f"--port={port}"]
    cmd += ["--Voila.ip=127.0.0.1", "--VoilaExecutor.timeout=300"]
    env = host_env(
        {"JUPYTER_CONFIG_DIR": str(work / "config"), "JUPYTER_RUNTIME_DIR": str(work / "runtime")}
    )
    url = f"http://127.0.0.1:{port}"
    # a probe that only asks whether it answers: the notebook's own page runs the notebook
    with running_host(cmd, f"{url}/voila/no-such-page", work, env):
        yield url


def test_voila_draws_styled_answers_clicks_and_python(
    voila_url: str, page: Any, artifacts: Path
) -> None:
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.goto(voila_url, timeout=180_000)
    root = page.locator(ROOT).first
    wait_laid_out(page, root)
    assert_styled(root)

    target, ops = page_facts(page)
    page.get_by_role("button", name="select from Python").click()
    root.scroll_into_view_if_needed()
    assert wait_inspecting(root, target) == target  # Python -> view

    click_op_and_see_plot(page, root, ops, avoid=target)
    page.screenshot(path=str(artifacts / "voila.png"))
    zoom_in_until_minimap(page, root)
    assert_height_stays(page, root)
    errors = [e for e in page.errors if e.startswith("pageerror")]
    assert errors == []
