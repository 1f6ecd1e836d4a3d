"""Model work asked for from the widget never runs while a notebook cell runs.

JupyterLab 4.6 sends widget messages over a kernel subshell, and ipykernel 7 handles them on
that subshell's thread while a cell runs on the main thread (older pairs handle them only
between cells, and ipykernel 7 also between the awaits of an async cell). A re-run or an
ablation sets the model's RNG and buffers to those of the traced pass while it works, so, run
then, it would change what a training loop in the running cell computes.

The gate runs such work at once when no cell runs; otherwise it queues the work, and the
thread of the last cell to finish runs it right after that cell (IPython's `post_execute`),
before the kernel takes the next message. A cell that starts while such work runs (begun
between cells on another thread) waits for it in `pre_execute`. Where requests are only handled
between cells, nothing is ever queued. Requests that only read what was saved do not use it.
"""

from __future__ import annotations

import threading
import warnings
import weakref
from collections.abc import Callable
from typing import Any

Job = Callable[[], None]


class CellGate:
    """Runs jobs between cells: at once when no cell runs, else after the running ones end."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._cells: dict[int, int] = {}  # thread id -> depth of cells running on it
        self._worker: int | None = None  # the thread running jobs, if any
        self._queued: list[Job] = []

    @property
    def cell_running(self) -> bool:
        with self._cond:
            return bool(self._cells)

    def cell_started(self) -> None:
        """A cell starts on this thread (`pre_execute`): after any job now running."""
        me = threading.get_ident()
        with self._cond:
            try:
                while self._worker not in (None, me):
                    self._cond.wait()
            finally:  # interrupted while waiting, the cell still runs: queue work after it
                self._cells[me] = self._cells.get(me, 0) + 1

    def cell_finished(self) -> None:
        """A cell ends on this thread (`post_execute`); the last one to end runs the queue."""
        me = threading.get_ident()
        with self._cond:
            depth = self._cells.pop(me, 0) - 1
            if depth > 0:  # a nested run_cell ended; its caller's cell still runs
                self._cells[me] = depth
            # IPython ends an empty cell without starting it: depth -1, nothing to undo
            while not self._cells and self._queued and self._worker not in (None, me):
                self._cond.wait()  # a job begun while this cell's start was interrupted
            if self._cells or not self._queued:
                return
            jobs, self._queued = self._queued, []
            self._worker = me
        self._run(jobs)

    def run_or_queue(self, job: Job) -> bool:
        """Runs `job` now on this thread (True), or queues it while a cell runs (False)."""
        me = threading.get_ident()
        with self._cond:
            while True:
                if self._cells:
                    self._queued.append(job)
                    return False
                if self._worker in (None, me):
                    break
                self._cond.wait()  # another thread's job: one model job at a time
            nested = self._worker == me
            self._worker = me
        if nested:
            job()
        else:
            self._run([job])
        return True

    def _run(self, jobs: list[Job]) -> None:
        try:
            for i, job in enumerate(jobs):
                try:
                    job()
                except Exception as err:  # one failure must not drop the rest
                    warnings.warn(f"a widget request failed: {err!r}", RuntimeWarning, stacklevel=2)
                except BaseException:  # interrupted: the rest run after the next cell
                    with self._cond:
                        self._queued[:0] = jobs[i + 1 :]
                    raise
        finally:
            with self._cond:
                self._worker = None
                self._cond.notify_all()


_GATE = CellGate()
_HOOKED: weakref.WeakSet[Any] = weakref.WeakSet()  # IPython shells that report cells to it
_HOOK_LOCK = threading.Lock()


def cell_gate() -> CellGate:
    """The process's gate, told of the cells of IPython's shell when one runs us."""
    try:
        from IPython import get_ipython
    except ImportError:  # no IPython: no cells, nothing to wait for
        return _GATE
    shell = get_ipython()
    if shell is None:
        return _GATE
    with _HOOK_LOCK:
        if shell not in _HOOKED:
            _HOOKED.add(shell)
            shell.events.register("pre_execute", _GATE.cell_started)
            shell.events.register("post_execute", _GATE.cell_finished)
            # hooked from inside a cell (the widget's own): its end is counted too
            if _inside_cell(shell):
                _GATE.cell_started()
    return _GATE


def _inside_cell(shell: Any) -> bool:
    """Whether this code runs in a cell of `shell`'s kernel (its request is an execute)."""
    get_parent = getattr(getattr(shell, "kernel", None), "get_parent", None)
    if get_parent is None:
        return False
    try:
        parent = get_parent("shell")
    except Exception:  # an older or stand-in kernel: assume not
        return False
    header = parent.get("header", {}) if isinstance(parent, dict) else {}
    return header.get("msg_type") == "execute_request"
