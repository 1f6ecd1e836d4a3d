"""Real tier, Notebook 7: the demo notebook's GPT-2 widget renders and answers a click there too."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from lab_server import Lab, running_lab

# The same notebook, cell and page hooks as the JupyterLab test (and its CI rule on the bundle).
from test_jupyterlab import (
    REPO,
    WIDGET,
    Kernel,
    click_an_op_and_see_its_plot,
    op_ids,
    poll,
    pytestmark,  # noqa: F401 - skip on a missing bundle only outside CI
    run_through_widget_cell,
    wait_for_widget,
)

# Notebook 7.6.5 itself throws this while loading settings, with every third-party extension
# disabled too: its shortcuts plugin reads `plugins[shortcuts.id].schema` when docmanager's
# settings reload, before the shortcuts settings are in the registry. Not ours; only this exact one.
UPSTREAM_STARTUP_ERROR = "pageerror: Cannot read properties of undefined (reading 'schema')"


@pytest.fixture(scope="module")
def lab_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    if not os.environ.get("CI"):  # a test dependency: CI must have it, so fail there instead
        pytest.importorskip("notebook")
    work = tmp_path_factory.mktemp("nb7")
    root = work / "notebooks"
    shutil.copytree(REPO / "notebooks", root)
    with running_lab(root, work, app="notebook") as server:
        yield server


def wait_for_kernel_idle(page: object) -> None:
    # Notebook 7 has no JupyterLab status bar: ask the exposed app's session instead.
    page.wait_for_function(  # type: ignore[attr-defined]
        """() => {
          const panel = window.jupyterapp?.shell.currentWidget;
          return panel?.sessionContext?.session?.kernel?.status === 'idle';
        }""",
        timeout=90_000,
    )


def test_notebook7_click_node_shows_activation(lab: Lab, page: object, artifacts: Path) -> None:
    page.set_viewport_size({"width": 1400, "height": 1000})  # type: ignore[attr-defined]
    page.goto(f"{lab.url}/notebooks/demo.ipynb")  # type: ignore[attr-defined]
    wait_for_kernel_idle(page)
    run_through_widget_cell(page)

    wait_for_widget(page)

    kernel = Kernel(lab.connection_file())
    try:
        target = click_an_op_and_see_its_plot(page, op_ids(kernel))
        page.screenshot(path=str(artifacts / "notebook7_demo.png"))  # type: ignore[attr-defined]
        # the click went through Notebook 7's widget manager to the kernel, too
        selected = poll(lambda: kernel.run(f"print({WIDGET}.selected)").strip(), target["id"])
        assert selected == target["id"]
    finally:
        kernel.close()

    errors = [e for e in page.errors if not e.startswith(UPSTREAM_STARTUP_ERROR)]  # type: ignore[attr-defined]
    assert errors == []
