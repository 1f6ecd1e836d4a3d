"""Every notebook in notebooks/ runs top to bottom in a fresh kernel from this venv."""

import os
import pathlib

import nbformat
import pytest
from dist_ranks import NO_FSDP2_ON_CPU, fsdp2_runs_on_cpu
from nbclient import NotebookClient

from lens_widget.widget import wire

ROOT = pathlib.Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs(path, monkeypatch, tmp_path):
    if path.name == "ranks.ipynb" and not fsdp2_runs_on_cpu():
        pytest.skip(NO_FSDP2_ON_CPU)  # it runs examples/fsdp_train_step.py on 2 CPU ranks
    # The kernel is the venv's python ("python" in the kernelspec maps to sys.executable);
    # put the checkout first so it imports this lens_widget, installed or not.
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(tmp_path / "config"))
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        kernel_name="python3",
        timeout=300,
        resources={"metadata": {"path": str(path.parent)}},
    )
    client.execute()  # raises CellExecutionError on the first failing cell

    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    if "LensWidget(" in path.read_text():
        views = [o for o in outputs if WIDGET_VIEW in o.get("data", {})]
        assert views, "a LensWidget cell displayed no widget"
        # the widget state saved with the notebook carries the traced graph
        states = nb.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
        # (as wire.py's bytes, in the state's binary buffers: a reopened notebook shows it)
        graphs = [g for s in states.values() if (g := wire.saved_graph(s)) is not None]
        assert graphs and all(g["nOps"] > 0 and g["unrolled"]["nodes"] for g in graphs)
