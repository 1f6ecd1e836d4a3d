"""Real tier: a widget request made while a training cell runs never races that cell.

JupyterLab 4.6 sends widget messages over a kernel subshell and ipykernel 7 answers them on
that subshell's thread while a cell runs on the main thread. A re-run restores the model's
first RNG state and BatchNorm buffers while it traces, so, run then, it would change what a
training loop in the running cell computes. Here a re-run clicked mid-training waits ("waiting
for the running cell") and runs when the cell has finished; the training's weights, buffers
and RNG state come out bit-equal to an undisturbed run of the same loop; and a read-only
request (plotting a saved activation) is still answered while the cell runs.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from lab_server import Lab, lab_with_notebook, open_in_lab
from test_jupyterlab import (  # the same page hooks and CI rule on the bundle
    ROOT,
    Kernel,
    pytestmark,  # noqa: F401
    wait_for_kernel_idle,
    wait_for_widget,
)

NOTEBOOK = "busy.ipynb"
GO = "go"  # written by the test once it has clicked: the training cell goes on
SETUP = """\
import hashlib, threading, time
from pathlib import Path
import torch
from torch import nn
from lens_widget import LensWidget

training = threading.Event()  # the shown model's training is past its hold point
held, more = threading.Event(), threading.Event()

class Hold(nn.Module):
    # Makes a racing re-run (today's failure) race for sure: a forward run on another thread
    # while the training runs waits until the training has taken more steps. A re-run that
    # waits for the cell, as it should, runs after it and never holds.
    def forward(self, x):
        if training.is_set() and threading.current_thread() is not threading.main_thread():
            held.set()
            more.wait(timeout=60)
        return x

def make():
    torch.manual_seed(0)
    layers = [nn.Linear(8, 16), nn.BatchNorm1d(16), Hold(), nn.ReLU(), nn.Dropout(0.5)]
    return nn.Sequential(*layers, nn.Linear(16, 4)).train()

def train(model, hold=False):
    torch.manual_seed(1)
    x = torch.randn(64, 8)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(30):
        if hold and step == 10:
            print("holding at step 10", flush=True)
            training.set()
            while not (Path("go").exists() or held.is_set()):
                time.sleep(0.05)
        if hold and step == 15:
            more.set()
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    training.clear()
    digest = hashlib.sha256()  # weights, BatchNorm buffers, the RNG the dropout draws from
    for t in [*model.state_dict().values(), torch.get_rng_state()]:
        digest.update(t.detach().contiguous().numpy().tobytes())
    return digest.hexdigest()

def shown(model):
    torch.manual_seed(2)
    return LensWidget(model, torch.randn(4, 8), save=["linear"])  # batch_norm is not saved

reference_model = make()
shown(reference_model)
reference = train(reference_model)  # the same steps, undisturbed
model = make()
w = shown(model)
w"""
TRAIN = """\
result = train(model, hold=True)
print("trained", flush=True)"""
SAVED_OP, UNSAVED_OP = "linear_1_1", "batch_norm_1_3"
WAITING = "waiting for the running cell"
SECTION = f'{ROOT} [data-testid="activation"]'  # the inspector's activation section
STATUS = f'{ROOT} [data-testid="activation-status"]'
# what a cell printed (its output area, not its source)
CELLS = "window.jupyterapp.shell.currentWidget.content.widgets"
CELL_TEXT = f"(i) => {CELLS}[i].outputArea.node.innerText"
SHOWN = "([sel, state]) => document.querySelector(sel)?.dataset.state === state"


@pytest.fixture(scope="module")
def lab_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    work = tmp_path_factory.mktemp("lab_busy")
    with lab_with_notebook(work, NOTEBOOK, [SETUP, TRAIN]) as server:
        yield server


def run_cell(page: object, index: int, wait: bool) -> None:
    page.evaluate(  # type: ignore[attr-defined]
        """async ([index, wait]) => { const app = window.jupyterapp;
          app.shell.currentWidget.content.activeCellIndex = index;
          const done = app.commands.execute('notebook:run-cell');
          if (wait) await done; }""",
        [index, wait],
    )


def click_op(page: object, op: str) -> None:
    pos = page.evaluate(  # type: ignore[attr-defined]
        "([sel, id]) => document.querySelector(sel).__lens.nodeScreenPos(id)", [ROOT, op]
    )
    assert pos, f"{op} is not drawn"
    page.mouse.click(pos["x"], pos["y"])  # type: ignore[attr-defined]
    page.wait_for_function(  # type: ignore[attr-defined]
        """([sel, id]) => document.querySelector(sel + ' [data-testid="inspector-id"]')
             ?.textContent.trim() === id""",
        arg=[ROOT, op],
        timeout=15_000,
    )


def test_a_rerun_clicked_during_a_training_cell_waits_for_it(lab: Lab, page: object) -> None:
    page.set_viewport_size({"width": 1400, "height": 1000})  # type: ignore[attr-defined]
    open_in_lab(lab, page, NOTEBOOK)
    wait_for_kernel_idle(page)
    run_cell(page, 0, wait=True)
    wait_for_widget(page)
    click_op(page, SAVED_OP)
    page.wait_for_function(SHOWN, arg=[SECTION, "done"], timeout=30_000)  # type: ignore[attr-defined]

    run_cell(page, 1, wait=False)
    page.wait_for_function(  # type: ignore[attr-defined]
        f"() => ({CELL_TEXT})(1).includes('holding at step 10')", timeout=60_000
    )
    # a read-only request is answered while the cell runs: the saved op's activation plots
    click_op(page, UNSAVED_OP)
    page.wait_for_function(SHOWN, arg=[SECTION, "unsaved"], timeout=15_000)  # type: ignore[attr-defined]
    click_op(page, SAVED_OP)
    page.wait_for_function(SHOWN, arg=[SECTION, "done"], timeout=15_000)  # type: ignore[attr-defined]
    assert "trained" not in page.evaluate(f"({CELL_TEXT})(1)")  # type: ignore[attr-defined]

    # the unsaved op offers a re-run that saves it: clicked while the cell runs
    click_op(page, UNSAVED_OP)
    page.locator(f'{ROOT} [data-testid="rerun"]').first.click()  # type: ignore[attr-defined]
    # the panel says why nothing happens yet, or (today's race) the cell ends meanwhile
    page.wait_for_function(  # type: ignore[attr-defined]
        f"""([sel, waiting]) =>
              (document.querySelector(sel)?.textContent || '').includes(waiting) ||
              ({CELL_TEXT})(1).includes('trained')""",
        arg=[STATUS, WAITING],
        timeout=60_000,
    )
    said = page.locator(STATUS).first.inner_text()  # type: ignore[attr-defined]
    (lab.root_dir / GO).write_text("")
    page.wait_for_function(  # type: ignore[attr-defined]
        f"() => ({CELL_TEXT})(1).includes('trained')", timeout=60_000
    )
    wait_for_kernel_idle(page)
    printed = page.evaluate(f"({CELL_TEXT})(1)")  # type: ignore[attr-defined]
    assert "Error" not in printed, printed

    kernel = Kernel(lab.connection_file())
    try:
        # the cell computed exactly what it computes undisturbed
        assert kernel.run("print(result == reference)").strip() == "True", (
            "the training cell's weights, buffers or RNG state were changed by the re-run"
        )
        assert kernel.run("print(held.is_set())").strip() == "False"
        assert WAITING in said, said
        # the re-run ran after the cell: the op is saved now, and its activation plotted
        saved = f"print(w.model_log[{UNSAVED_OP!r}].activation is not None)"
        assert kernel.run(saved).strip() == "True"
    finally:
        kernel.close()
    page.wait_for_function(SHOWN, arg=[SECTION, "done"], timeout=30_000)  # type: ignore[attr-defined]
    shown_id = page.locator(f'{ROOT} [data-testid="inspector-id"]').first.inner_text()  # type: ignore[attr-defined]
    assert shown_id.strip() == UNSAVED_OP
    assert page.errors == []  # type: ignore[attr-defined]
