"""`python -m bench.share_bench --quick` runs end to end and reports well-formed figures.

No size or timing asserts beyond what must hold by construction: this checks the bench code.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from lens_widget.widget.html_export import BUNDLE

pytestmark = pytest.mark.skipif(not BUNDLE.exists(), reason="frontend bundle not built")


def test_quick_share_bench(tmp_path):
    out = tmp_path / "share.json"
    # its own process: the bench drives chromium with Playwright's sync API, which refuses to
    # start inside the event loop that the browser tests' session may have left running
    run = subprocess.run(
        [sys.executable, "-m", "bench.share_bench", "--quick", "--ops", "20", "--json", str(out)],
        capture_output=True,
        text=True,
        check=True,
    )
    results = json.loads(out.read_text())
    html = results["html"]
    assert 0 < html["file_bytes"] <= html["max_bytes"]
    assert sum(html["parts_bytes"].values()) < html["file_bytes"]
    assert 0 < html["views_kept"] <= html["views_total"]
    nb = results["notebook"]
    sizes = {int(k): v for k, v in nb["notebook_bytes"].items()}
    assert sizes[0] < sizes[1] < sizes[2]
    assert nb["per_widget_bytes"] == (sizes[2] - sizes[0]) // 2
    # one widget's state holds the bundle and the graph
    assert nb["state_parts_bytes"]["_esm (bundle)"] > BUNDLE.stat().st_size
    # the graph is saved as wire.py's compressed bytes: smaller than its compact JSON
    assert 0 < nb["state_parts_bytes"]["graph"] < nb["graph_compact_json_bytes"]
    assert nb["state_parts_bytes"]["the rest"] >= 0
    assert "grows by" in run.stdout
