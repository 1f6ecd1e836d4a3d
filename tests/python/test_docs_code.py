"""Every ```python block of README.md, CONTRIBUTING.md and docs/*.md runs as written.

The blocks of one file run in order in one namespace, so a later block uses the names of an
earlier one; a file of docs/ starts where the README's quick start leaves off (its first
block: `model`, `ids`, `log`). A block fenced ```python no-run (it needs a GPU, a notebook or
a file that is not here) must still compile. Relative links between the docs must resolve.
Each file runs in a temporary directory, where its blocks may write what they save.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(?P<info>[^\n`]*)\n(?P<code>.*?)^```\s*$", re.M | re.S)
LINK = re.compile(r"\]\((?P<target>[^)#\s]+)(?:#[^)]*)?\)")

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning")


def blocks(path: Path) -> list[tuple[str, str, int]]:
    """(info string, code, line) of every fenced block of a file."""
    text = path.read_text()
    return [
        (m["info"].strip(), m["code"], text.count("\n", 0, m.start()) + 1)
        for m in FENCE.finditer(text)
    ]


def python_blocks(path: Path) -> list[tuple[bool, str, int]]:
    """(runs, code, line) of the Python blocks."""
    found = []
    for info, code, line in blocks(path):
        words = info.split()
        if words[:1] == ["python"]:
            found.append(("no-run" not in words[1:], code, line))
    return found


def run_blocks(path: Path, namespace: dict[str, object]) -> int:
    """Run (or compile) the file's Python blocks in order; the number run."""
    ran = 0
    for runs, code, line in python_blocks(path):
        name = f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}:{line}"
        compiled = compile(code, name, "exec")
        if runs:
            exec(compiled, namespace)  # noqa: S102 - the documentation's own examples
            ran += 1
    return ran


def quick_start() -> dict[str, object]:
    """The namespace the README's first block leaves: the docs continue from it."""
    namespace: dict[str, object] = {"__name__": "docs"}
    runs, code, _ = python_blocks(ROOT / "README.md")[0]
    assert runs
    exec(compile(code, "README.md (quick start)", "exec"), namespace)  # noqa: S102
    return namespace


def test_the_docs_have_python_blocks():
    counts = {path.name: len(python_blocks(path)) for path in DOCS}
    assert counts["README.md"] >= 2 and counts["api.md"] >= 3, counts


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_every_python_block_runs(path, tmp_path, monkeypatch):
    if not python_blocks(path):
        pytest.skip("no Python block")
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "docs"} if path.name == "README.md" else quick_start()
    run_blocks(path, namespace)


def test_a_wrong_call_in_a_block_fails(tmp_path, monkeypatch):
    """The runner really runs: a documented call with a wrong keyword raises."""
    monkeypatch.chdir(tmp_path)
    doc = tmp_path / "doc.md"
    doc.write_text("```python\nimport lens_widget as lw\nlw.trace(None, sav='all')\n```\n")
    with pytest.raises(TypeError, match="sav"):
        run_blocks(doc, {})
    doc.write_text("```python no-run\ndef broken(:\n```\n")
    with pytest.raises(SyntaxError):
        run_blocks(doc, {})


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_relative_links_resolve(path):
    missing = []
    for m in LINK.finditer(path.read_text()):
        target = m["target"]
        if "://" in target or target.startswith("mailto:"):
            continue
        if not (path.parent / target).exists():
            missing.append(target)
    assert missing == []
