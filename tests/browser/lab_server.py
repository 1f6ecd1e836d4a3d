"""Start a throwaway JupyterLab (or Notebook 7) from this venv on 127.0.0.1, isolated from the
user's config.

One server serves a whole test module (starting one takes seconds), so each test starts from
what the module seeded, whatever ran before it: `Lab.reset` stops the kernels and puts the
notebooks and settings back, and `Lab.tree_url` opens a page in a workspace of its own
(JupyterLab brings a workspace's tabs back, so a shared one hands a test the tabs of the last).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

REPO = Path(__file__).resolve().parents[2]
JUPYTER = Path(sys.executable).parent / "jupyter"


@dataclass
class Lab:
    url: str  # http://127.0.0.1:PORT
    runtime_dir: Path  # kernels' connection files land here
    pid: int
    log: Path
    root_dir: Path
    settings_dir: Path  # the user settings: a test may change one (the theme)
    seeded: Path  # the notebooks and settings as the module seeded them, for reset()

    def api(self, path: str, method: str = "GET") -> object:
        req = urllib.request.Request(self.url + path, method=method)
        with urllib.request.urlopen(req, timeout=10) as r:
            body = r.read()
        return json.loads(body) if body else None

    def connection_file(self, timeout: float = 60) -> Path:
        """The connection file of the (single) running kernel."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            kernels = self.api("/api/kernels")
            if kernels:
                path = self.runtime_dir / f"kernel-{kernels[0]['id']}.json"  # type: ignore[index]
                if path.exists():
                    return path
            time.sleep(0.2)
        raise TimeoutError("no kernel started")

    def tree_url(self, path: str) -> str:
        """JupyterLab's page for `path` in a new, empty workspace: nothing an earlier page left
        open comes back (a restored tab, or the file the URL names opened a second time and
        brought to the front once the workspace was saved)."""
        return f"{self.url}/lab/workspaces/test-{uuid.uuid4().hex[:12]}/tree/{path}"

    def reset(self) -> None:
        """No session or kernel left running; the notebooks and user settings as seeded."""
        for session in self.api("/api/sessions"):  # type: ignore[attr-defined]
            self.api(f"/api/sessions/{session['id']}", method="DELETE")
        for kernel in self.api("/api/kernels"):  # type: ignore[attr-defined]
            self.api(f"/api/kernels/{kernel['id']}", method="DELETE")
        for live, seeded in ((self.root_dir, "root"), (self.settings_dir, "settings")):
            shutil.rmtree(live)
            shutil.copytree(self.seeded / seeded, live)


# The file browser is marked restoring until JupyterLab has handled the page's URL: its tree
# route opens the URL's file (again) and activates it, and it runs only after the workspace
# was saved, seconds after the notebook can already be shown. A page is ready after that.
LAB_ROUTED = """() => {
  const browser = document.getElementById('filebrowser');
  return !!browser && !browser.classList.contains('jp-mod-restoring');
}"""


def open_in_lab(lab: Lab, page: object, path: str) -> None:
    """`path` in JupyterLab, in a workspace of its own, once JupyterLab is done with the URL."""
    page.goto(lab.tree_url(path))  # type: ignore[attr-defined]
    page.wait_for_function(LAB_ROUTED, timeout=90_000)  # type: ignore[attr-defined]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _seed_config(config: Path) -> None:
    # A news toast would cover the notebook; a fresh settings dir has none of the user's state.
    settings = config / "lab" / "user-settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    (settings / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False})
    )


def write_notebook(path: Path, cells: list[str]) -> None:
    """A notebook of these code cells on the python3 kernel."""
    import nbformat

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    nbformat.write(nb, path)


@contextlib.contextmanager
def lab_with_notebook(work: Path, name: str, cells: list[str]) -> Iterator[Lab]:
    """JupyterLab serving one notebook, `name`, of these code cells."""
    root = work / "notebooks"
    root.mkdir()
    write_notebook(root / name, cells)
    with running_lab(root, work) as server:
        yield server


@contextlib.contextmanager
def running_lab(
    root_dir: Path, work: Path, timeout: float = 90, app: Literal["lab", "notebook"] = "lab"
) -> Iterator[Lab]:
    """JupyterLab (`app="lab"`) or Notebook 7 (`app="notebook"`) serving `root_dir`; stopped
    (only this server, by pid) on exit. Either exposes its app as `window.jupyterapp`."""
    # the same trait lives on each app's own class
    expose = {"lab": "LabApp", "notebook": "JupyterNotebookApp"}[app]
    config, runtime = work / "config", work / "runtime"
    _seed_config(config)
    runtime.mkdir()
    settings, seeded = config / "lab" / "user-settings", work / "seeded"
    shutil.copytree(root_dir, seeded / "root")
    shutil.copytree(settings, seeded / "settings")
    port = free_port()
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(config),
        "JUPYTER_RUNTIME_DIR": str(runtime),
        "JUPYTERLAB_WORKSPACES_DIR": str(work / "workspaces"),
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
        # the kernelspec says "python": make sure that is this venv's
        "PATH": os.pathsep.join([str(JUPYTER.parent), os.environ.get("PATH", "")]),
    }
    log = work / "jupyter.log"
    cmd = [
        str(JUPYTER),
        app,
        "--allow-root",
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        "--IdentityProvider.token=",
        "--ServerApp.password=",
        # a loopback, token-less throwaway: lets /api/shutdown (which stops kernels) be POSTed
        "--ServerApp.disable_check_xsrf=True",
        f"--ServerApp.root_dir={root_dir}",
        f"--{expose}.expose_app_in_browser=True",
    ]
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=work)
    lab = Lab(f"http://127.0.0.1:{port}", runtime, proc.pid, log, root_dir, settings, seeded)
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"jupyter {app} exited: {log.read_text()[-2000:]}")
            try:
                lab.api("/api/status")
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise TimeoutError(
                        f"jupyter {app} did not start: {log.read_text()[-2000:]}"
                    ) from None
                time.sleep(0.3)
        yield lab
    finally:
        _stop(lab, proc)


def _stop(lab: Lab, proc: subprocess.Popen[bytes]) -> None:
    # Ask the server to shut down (it stops its kernels); fall back to signals, by pid only.
    try:
        lab.api("/api/shutdown", method="POST")
        proc.wait(timeout=15)
    except (OSError, subprocess.TimeoutExpired):
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
