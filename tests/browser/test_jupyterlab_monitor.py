"""Real tier: ``mon.widget()`` shown in one cell updates while the next cell, a training loop
with a pause between steps, is still running (issue #23, "live in the notebook"): the graph
arrives with the first traced step and the slider's last step grows before the cell ends;
then the slider and click-to-plot work on the finished run."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from lab_server import Lab, lab_with_notebook, open_in_lab
from test_jupyterlab import (  # the same page hooks and CI rule on the bundle
    ROOT,
    Kernel,
    pytestmark,  # noqa: F401
    wait_for_kernel_idle,
)
from test_jupyterlab_busy_kernel import CELL_TEXT, run_cell

NOTEBOOK = "monitor.ipynb"
STEPS, POISON = 8, 5
SETUP = f"""\
import lens_widget as lw
from model_zoo.monitored import PoisonNet, train
model = PoisonNet(poison_at={POISON})
mon = lw.Monitor(model, keep="nonfinite")
w = mon.widget()  # shown above the training loop, before any step
w"""
TRAIN = f"""\
train(model, mon, {STEPS}, sleep=1.5)
print("trained", flush=True)"""
STEP_LABEL = f'{ROOT} [data-testid="monitor-step"]'
MONITOR = f'{ROOT} [data-testid="monitor"]'
# the slider's last step, from its label "shown of last"
LAST_STEP = "(sel) => Number((document.querySelector(sel)?.textContent || '').split(' of ')[1])"


@pytest.fixture(scope="module")
def lab_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    work = tmp_path_factory.mktemp("lab_monitor")
    with lab_with_notebook(work, NOTEBOOK, [SETUP, TRAIN]) as server:
        yield server


def cell_text(page: object, index: int) -> str:
    return page.evaluate(f"({CELL_TEXT})({index})")  # type: ignore[attr-defined]


def test_the_monitor_widget_updates_while_the_training_cell_runs(lab: Lab, page: object) -> None:
    page.set_viewport_size({"width": 1400, "height": 1100})  # type: ignore[attr-defined]
    open_in_lab(lab, page, NOTEBOOK)
    wait_for_kernel_idle(page)
    run_cell(page, 0, wait=True)
    page.locator(ROOT).first.wait_for(state="attached", timeout=120_000)  # type: ignore[attr-defined]

    run_cell(page, 1, wait=False)
    # the first traced step brings the graph and the monitor bar, while the cell runs
    page.wait_for_function(  # type: ignore[attr-defined]
        "(sel) => /^\\d+ of \\d+$/.test(document.querySelector(sel)?.textContent || '')",
        arg=STEP_LABEL,
        timeout=60_000,
    )
    assert "trained" not in cell_text(page, 1)
    first = int(page.locator(STEP_LABEL).first.inner_text().split(" of ")[1])  # type: ignore[attr-defined]
    assert first < STEPS - 1
    # the slider's last step grows step by step before the cell has finished
    page.wait_for_function(  # type: ignore[attr-defined]
        f"([sel, n]) => ({LAST_STEP})(sel) > n",
        arg=[STEP_LABEL, first],
        timeout=60_000,
    )
    mid = page.locator(STEP_LABEL).first.inner_text()  # type: ignore[attr-defined]
    assert "trained" not in cell_text(page, 1), "the widget only updated after the cell"
    n_ops = page.evaluate(  # type: ignore[attr-defined]
        "(sel) => document.querySelector(sel).__lens.visibleIds.length", ROOT
    )
    assert n_ops > 0

    page.wait_for_function(  # type: ignore[attr-defined]
        f"() => ({CELL_TEXT})(1).includes('trained')", timeout=90_000
    )
    wait_for_kernel_idle(page)
    last = STEPS - 1
    page.wait_for_function(  # type: ignore[attr-defined]
        "([sel, t]) => document.querySelector(sel)?.textContent === t",
        arg=[STEP_LABEL, f"{last} of {last}"],
        timeout=30_000,
    )
    assert mid != f"{last} of {last}"

    # the slider: back to the poisoned step, the NaN op heads the ranked list; click it
    page.select_option(f'{ROOT} [data-testid="monitor-stat"]', "nan")  # type: ignore[attr-defined]
    page.evaluate(  # type: ignore[attr-defined]
        """([sel, i]) => { const s = document.querySelector(sel);
             s.value = String(i); s.dispatchEvent(new Event('input')); }""",
        [f'{ROOT} [data-testid="monitor-slider"]', POISON],
    )
    page.wait_for_function(  # type: ignore[attr-defined]
        "([sel, shown]) => document.querySelector(sel)?.dataset.shown === shown",
        arg=[MONITOR, f"{POISON}|activation|nan|value"],
        timeout=30_000,
    )
    first = page.locator(f'{ROOT} [data-testid="monitor-ranked"] li').first  # type: ignore[attr-defined]
    assert (first.get_attribute("data-id") or "").startswith("log_")
    first.locator("button").click()
    page.wait_for_function(  # type: ignore[attr-defined]
        "(sel) => document.querySelector(sel)?.dataset.plotted === 'activation,gradient'",
        arg=f'{ROOT} [data-testid="monitor-series"]',
        timeout=30_000,
    )
    page.locator(f'{ROOT} [data-testid="monitor-kept-plot"] .main-svg').first.wait_for(  # type: ignore[attr-defined]
        timeout=30_000
    )
    # the kernel's step trait holds what the user set (no longer following: -1)
    kernel = Kernel(lab.connection_file())
    try:
        assert kernel.run("print(w.step, mon.steps[-1])").split() == [str(POISON), str(last)]
    finally:
        kernel.close()
    assert page.errors == []  # type: ignore[attr-defined]
