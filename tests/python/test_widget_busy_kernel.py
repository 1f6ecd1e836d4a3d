"""Widget requests that run the model never race a running cell (cell_gate.py).

ipykernel 7 handles widget messages on a subshell thread while a cell runs on the main thread.
A re-run asked for then waits ("waiting for the running cell") and runs on the cell's thread
when the cell has finished, so a training loop in the cell computes exactly what it computes
undisturbed; read-only requests are still answered at once. The real-JupyterLab twin of the
first test is tests/browser/test_jupyterlab_busy_kernel.py.
"""

import builtins
import hashlib
import sys
import threading
from types import SimpleNamespace

import pytest
import torch
from torch import nn
from widget_replies import Replies

from lens_widget.widget import requests
from lens_widget.widget.cell_gate import CellGate, _inside_cell
from lens_widget.widget.lens_widget import LensWidget

UNSAVED = "batch_norm_1_3"  # not saved (save=["linear"]): a re-run saves it
RERUN = {"type": "request", "id": 7, "method": "rerun", "params": {"id": UNSAVED}}

training = threading.Event()  # the shown model's training runs past its hold point
held, more = threading.Event(), threading.Event()


class Hold(nn.Module):
    """Makes a racing re-run (the old failure) race for sure: a forward run on another thread
    while the training runs waits until the training has taken more steps."""

    def forward(self, x):
        if training.is_set() and threading.current_thread() is not threading.main_thread():
            held.set()
            more.wait(timeout=30)
        return x


def make() -> nn.Module:
    torch.manual_seed(0)
    layers = [nn.Linear(8, 16), nn.BatchNorm1d(16), Hold(), nn.ReLU(), nn.Dropout(0.5)]
    return nn.Sequential(*layers, nn.Linear(16, 4)).train()


def shown(model: nn.Module) -> LensWidget:
    torch.manual_seed(2)
    return LensWidget(model, torch.randn(4, 8), save=["linear"])


def train(model: nn.Module, click=None) -> str:
    """30 SGD steps (BatchNorm statistics, dropout masks); `click` is called on another
    thread at step 10, as ipykernel's subshell delivers a click. The digest of the weights,
    buffers and RNG state at the end."""
    torch.manual_seed(1)
    x = torch.randn(64, 8)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(30):
        if click is not None and step == 10:
            training.set()
            delivered = threading.Thread(target=click)
            delivered.start()
            # until it is answered ("waiting"), or (racing) its re-run holds in the forward
            while delivered.is_alive() and not held.wait(timeout=0.01):
                pass
        if click is not None and step == 15:
            more.set()
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    training.clear()
    digest = hashlib.sha256()
    for t in [*model.state_dict().values(), torch.get_rng_state()]:
        digest.update(t.detach().contiguous().numpy().tobytes())
    return digest.hexdigest()


@pytest.fixture()
def shell():
    """A real IPython shell (its pre_execute/post_execute around each run_cell); what it
    changes in the process is put back."""
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    main, names = sys.modules["__main__"], set(vars(builtins))
    config = Config()
    config.HistoryManager.enabled = False
    sh = InteractiveShell.instance(config=config)
    try:
        yield sh
    finally:
        InteractiveShell.clear_instance()
        sys.modules["__main__"] = main
        for name in set(vars(builtins)) - names:
            delattr(builtins, name)
        training.clear(), held.clear(), more.clear()


def run(shell, code: str) -> None:
    result = shell.run_cell(code)
    assert result.success, result.error_in_exec or result.error_before_exec


def test_a_rerun_asked_while_a_training_cell_runs_waits_for_it(shell) -> None:
    undisturbed = make()
    shown(undisturbed)  # its trace's forward moved the BatchNorm statistics
    reference = train(undisturbed)
    shell.user_ns.update(make=make, shown=shown, train=train, LensWidget=LensWidget)
    run(shell, "model = make(); w = shown(model)")
    w = shell.user_ns["w"]
    replies = Replies(w)
    sent_at: list[tuple[str, bool]] = []  # (message type, sent on the main thread)
    send = w.send

    def record(content, buffers=None):
        sent_at.append((content["type"], threading.current_thread() is threading.main_thread()))
        send(content, buffers)

    w.send = record
    shell.user_ns["click"] = lambda: w._on_msg(w, RERUN, [])
    run(shell, "result = train(model, click)\ncell_ended = True")

    # the cell computed what it computes undisturbed: weights, BatchNorm buffers, RNG
    assert shell.user_ns["result"] == reference, "the re-run changed the training cell's result"
    assert not held.is_set()  # no forward ran beside the cell
    # it was told at once, from the comm's thread, that it waits for the cell...
    assert replies.sent[0][0] == {"type": "waiting", "id": 7, "reason": requests.WAITING}
    assert sent_at[0] == ("waiting", False)
    # ...and was re-run when the cell had finished, on the cell's thread
    assert replies.sent[-1][0] == {"type": "response", "id": 7, "ok": True, "result": {"ok": True}}
    assert sent_at[-1] == ("response", True)
    assert w.model_log[UNSAVED].activation is not None


def test_a_rerun_asked_between_cells_runs_at_once(shell) -> None:
    shell.user_ns.update(make=make, shown=shown)
    run(shell, "w = shown(make())")
    w = shell.user_ns["w"]
    reply, _ = Replies(w).ask("rerun", {"id": UNSAVED}, req_id=3)
    assert reply == {"type": "response", "id": 3, "ok": True, "result": {"ok": True}}
    assert w.model_log[UNSAVED].activation is not None


def test_read_only_requests_are_answered_while_a_cell_runs(shell) -> None:
    shell.user_ns.update(make=make, shown=shown)
    run(shell, "w = shown(make())")
    w = shell.user_ns["w"]
    replies = Replies(w)

    def ask_from_the_comm_thread(method: str, params: dict) -> list:
        asked = threading.Thread(target=replies.ask, args=(method, params))
        asked.start()
        asked.join()
        return list(replies.sent)

    shell.user_ns["ask"] = ask_from_the_comm_thread
    run(shell, "plotted = ask('activation', {'id': 'linear_1_1'})")
    (reply, buffers), *_ = shell.user_ns["plotted"]  # answered before the cell ended
    assert reply["ok"] and reply["result"]["id"] == "linear_1_1" and buffers
    # an unsaved op's answer (which offers the re-run) too
    run(shell, f"unsaved = ask('activation', {{'id': {UNSAVED!r}}})")
    reply, _ = shell.user_ns["unsaved"][-1]
    assert not reply["ok"] and "not saved" in reply["error"]


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (RERUN, 7),
        ({"type": "request", "id": 2, "method": "ablate", "params": {}}, 2),
        ({"type": "request", "id": 2, "method": "activation", "params": {}}, None),
        ({"type": "request", "id": 2, "method": "endAblation", "params": {}}, None),
        ({"type": "request", "id": "2", "method": "rerun", "params": {}}, None),
        ({"type": "other", "id": 2, "method": "rerun"}, None),
        ([], None),
    ],
)
def test_which_requests_run_the_model(content, expected) -> None:
    assert requests.runs_model(content) == expected


# ---- the gate alone ---------------------------------------------------------------------


def in_thread(fn, *args):
    """What `fn(*args)` returns, called on another thread (as the comm's subshell does)."""
    out = []
    t = threading.Thread(target=lambda: out.append(fn(*args)))
    t.start()
    t.join()
    return out[0]


def test_jobs_asked_during_a_cell_run_in_order_on_its_thread_when_it_ends() -> None:
    gate, ran = CellGate(), []

    def job(name: str):
        return lambda: ran.append((name, threading.current_thread().name))

    assert gate.run_or_queue(job("idle")) is True  # no cell: at once, on the asking thread
    gate.cell_started()
    gate.cell_started()  # a nested run_cell
    assert in_thread(gate.run_or_queue, job("a")) is False
    assert in_thread(gate.run_or_queue, job("b")) is False
    assert gate.run_or_queue(job("same thread")) is False  # an async cell's await
    gate.cell_finished()
    assert ran == [("idle", "MainThread")]  # the outer cell still runs
    gate.cell_finished()
    assert [name for name, _ in ran] == ["idle", "a", "b", "same thread"]
    assert {thread for _, thread in ran} == {"MainThread"}
    gate.cell_finished()  # IPython ends an empty cell without starting it: no effect
    assert not gate.cell_running and gate.run_or_queue(job("after")) is True


def test_queued_jobs_wait_for_every_running_cell() -> None:
    gate, ran = CellGate(), []
    gate.cell_started()
    other_started, other_may_end = threading.Event(), threading.Event()

    def cell_on_a_subshell() -> None:
        gate.cell_started()
        other_started.set()
        other_may_end.wait()
        gate.cell_finished()

    other = threading.Thread(target=cell_on_a_subshell)
    other.start()
    other_started.wait()
    assert in_thread(gate.run_or_queue, lambda: ran.append(threading.current_thread())) is False
    gate.cell_finished()
    assert ran == []  # the subshell's cell still runs
    other_may_end.set()
    other.join()
    assert ran == [other]  # run by the last cell to end, on its thread


def test_a_failing_job_does_not_drop_the_next() -> None:
    gate, ran = CellGate(), []

    def fails() -> None:
        raise ValueError("boom")

    gate.cell_started()
    in_thread(gate.run_or_queue, fails)
    in_thread(gate.run_or_queue, lambda: ran.append(1))
    with pytest.warns(RuntimeWarning, match="boom"):
        gate.cell_finished()
    assert ran == [1]


def test_a_cell_that_starts_while_a_job_runs_waits_for_it() -> None:
    gate, order = CellGate(), []
    job_started, job_may_end = threading.Event(), threading.Event()

    def job() -> None:
        job_started.set()
        job_may_end.wait()
        order.append("job")

    def cell() -> None:
        gate.cell_started()
        order.append("cell")
        gate.cell_finished()

    asked = threading.Thread(target=gate.run_or_queue, args=(job,))
    asked.start()
    job_started.wait()
    starting = threading.Thread(target=cell)
    starting.start()
    starting.join(timeout=0.5)  # a cell that did not wait would be done by now
    job_may_end.set()
    asked.join()
    starting.join()
    assert order == ["job", "cell"]


@pytest.mark.parametrize(
    ("msg_type", "inside"), [("execute_request", True), ("comm_msg", False), (None, False)]
)
def test_hooked_from_inside_a_cell_counts_that_cell(msg_type, inside) -> None:
    """The first widget, made in a cell, hooks the gate to IPython after that cell's
    pre_execute: ipykernel's parent request says whether a cell is running."""
    parent = {"header": {"msg_type": msg_type}} if msg_type else {}
    kernel = SimpleNamespace(get_parent=lambda channel: parent)
    assert _inside_cell(SimpleNamespace(kernel=kernel)) is inside
    assert _inside_cell(SimpleNamespace()) is False  # IPython without a kernel
