"""`--device` of the benches: option parsing, the no-CUDA message, and that the tracing-only
path imports nothing of the widget (the GPU machine may lack anywidget and playwright).

No timing asserts and no full bench run: the one subprocess run is a single tiny model.
"""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest
import torch

from bench import per_op, run

ROOT = pathlib.Path(__file__).resolve().parents[2]
WIDGET_ONLY = ("anywidget", "ipywidgets", "playwright", "lens_widget.widget")

# Runs a bench module as `python -m` would, with the widget-only packages made unimportable;
# prints every attempt to import one (an attempt swallowed by an `except` still counts).
BLOCKED_RUN = """
import importlib.abc, runpy, sys
attempted = []
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if any(name == b or name.startswith(b + ".") for b in {blocked!r}):
            attempted.append(name)
            raise ImportError("blocked for the test: " + name)
sys.meta_path.insert(0, Block())
sys.argv = [{module!r}, *{argv!r}]
try:
    runpy.run_module({module!r}, run_name="__main__")
finally:
    print("ATTEMPTED", sorted(set(attempted)), flush=True)
"""


def _run_blocked(module: str, *argv: str) -> subprocess.CompletedProcess[str]:
    code = BLOCKED_RUN.format(blocked=WIDGET_ONLY, module=module, argv=list(argv))
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )


def test_device_option_parsing():
    assert run._parse([]).device == "cpu"
    assert run._parse(["--device", "cuda", "--quick"]).device == "cuda"
    args = per_op.parse_args(["--device", "cuda", "--quick"])
    assert (args.device, args.ops, args.rounds) == ("cuda", 300, 2)
    args = per_op.parse_args([])
    assert (args.device, args.ops, args.rounds) == ("cpu", 3000, 7)
    with pytest.raises(SystemExit):
        run._parse(["--device", "tpu"])
    with pytest.raises(SystemExit):
        per_op.parse_args(["--device", "gpu"])


@pytest.mark.skipif(
    torch.cuda.is_available(), reason="checks the message for a machine without CUDA"
)
@pytest.mark.parametrize("module", ["bench.run", "bench.per_op"])
def test_cuda_without_cuda_exits_with_a_clear_message(module):
    proc = _run_blocked(module, "--device", "cuda", "--quick")
    assert proc.returncode == 1
    assert "--device cuda: no CUDA device is available" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert "ATTEMPTED []" in proc.stdout  # importing the bench needs none of the widget


def test_tracing_only_run_needs_no_widget(tmp_path):
    proc = _run_blocked(
        "bench.run",
        *("--quick", "--models", "looped", "--grad-model", "", "--repeats", "1"),
        *("--no-widget", "--no-graph", "--no-torchlens", "--no-memory", "--out", str(tmp_path)),
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "ATTEMPTED []" in proc.stdout
    (run_file,) = (tmp_path / "results").glob("*-quick.json")
    assert '"device": "cpu"' in run_file.read_text()
    assert "- device: cpu" in (tmp_path / "RESULTS.md").read_text()
