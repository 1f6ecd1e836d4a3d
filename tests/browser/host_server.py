"""Start a notebook host other than JupyterLab (marimo, Voilà) from this venv on 127.0.0.1, as a
subprocess this test owns, and stop it and whatever it started (its kernels), by pid."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from pathlib import Path

from lab_server import REPO

BIN = Path(sys.executable).parent


def host_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This venv first on PATH and this checkout importable (lens_widget, model_zoo)."""
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
        "PATH": os.pathsep.join([str(BIN), os.environ.get("PATH", "")]),
        **(extra or {}),
    }


def _children(pid: int) -> list[int]:
    """Every process below `pid` (a host's kernels), from /proc."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        parents.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def _kill(pids: list[int], sig: signal.Signals) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie (exited, not reaped by its parent) is not running
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    return False


@contextlib.contextmanager
def running_host(
    cmd: list[str], url: str, work: Path, env: Mapping[str, str], timeout: float = 90
) -> Iterator[Path]:
    """`cmd` (a server on `url`) started in `work`; yields its log once `url` answers (any HTTP
    status: a probe must not be a page that runs the notebook). On exit
    the server is stopped with SIGTERM, then anything it started that is still running."""
    log = work / "host.log"
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, env=dict(env), stdout=out, stderr=subprocess.STDOUT, cwd=work)
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"{cmd[0]} exited: {log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(url, timeout=5):
                    break
            except urllib.error.HTTPError:
                break  # it answers (a 404 is an answer)
            except OSError:
                if time.monotonic() > deadline:
                    tail = log.read_text()[-2000:]
                    raise TimeoutError(f"{cmd[0]} did not start: {tail}") from None
                time.sleep(0.3)
        yield log
    finally:
        below = _children(proc.pid)
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        left = [pid for pid in below if _alive(pid)]
        _kill(left, signal.SIGTERM)
        deadline = time.monotonic() + 10
        while any(_alive(pid) for pid in left) and time.monotonic() < deadline:
            time.sleep(0.2)
        _kill([pid for pid in left if _alive(pid)], signal.SIGKILL)
