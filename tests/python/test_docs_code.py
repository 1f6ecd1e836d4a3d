"""Every code block of README.md, CONTRIBUTING.md and docs/*.md runs; every relative link resolves.

A ```python block is run; the blocks of one file run in order in one namespace, so a later
block uses the names of an earlier one. A block that cannot run here (needs CUDA, a notebook
front end, a display) says so in its fence, ```python no-run, and is only compiled. Other
languages (bash, text, mermaid) are not run. Blocks run as files in a temporary directory, so
whatever they save lands there and source lines name a real file.
"""

from __future__ import annotations

import re
import runpy
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted([ROOT / "README.md", ROOT / "CONTRIBUTING.md", *(ROOT / "docs").glob("*.md")])
FENCE = re.compile(r"^(?P<indent> *)```(?P<info>[^`]*)$")
# [text](target) and ![alt](target); the target ends at the first space or ")".
LINK = re.compile(r"!?\[[^\]]*\]\((?P<target>[^)\s]+)\)")


@dataclass(frozen=True)
class Block:
    """One fenced block: its info string (language and flags), first line number and text."""

    info: tuple[str, ...]
    line: int
    text: str


def code_blocks(path: Path) -> list[Block]:
    """The fenced blocks of a Markdown file, in order."""
    blocks: list[Block] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    open_at: int | None = None
    info: tuple[str, ...] = ()
    body: list[str] = []
    for number, line in enumerate(lines, start=1):
        match = FENCE.match(line)
        if match is None:
            if open_at is not None:
                body.append(line)
            continue
        if open_at is None:
            open_at, info, body = number, tuple(match["info"].split()), []
        else:
            blocks.append(Block(info, open_at, "\n".join(body) + "\n"))
            open_at = None
    assert open_at is None, f"{path.name}: the block opened at line {open_at} is never closed"
    return blocks


# A block that names the ops of transformers 5's models (GPT-2's `embedding_1_2`) says so in its
# fence, ```python transformers-5: under transformers 4 it and the blocks after it (which may use
# its names) are only compiled.
FLAGS = {"no-run", "transformers-5"}


def transformers_major() -> int | None:
    try:
        import transformers
    except ImportError:
        return None
    return int(transformers.__version__.split(".")[0])


def python_blocks(path: Path) -> tuple[list[Block], list[Block]]:
    """(blocks to run, blocks only compiled) of one file."""
    python = [b for b in code_blocks(path) if b.info[:1] == ("python",)]
    unknown = [b for b in python if set(b.info[1:]) - FLAGS]
    assert not unknown, f"{path.name}: unknown fence flags at lines {[b.line for b in unknown]}"
    to_run = [b for b in python if "no-run" not in b.info]
    if (transformers_major() or 5) < 5:
        first = next((i for i, b in enumerate(to_run) if "transformers-5" in b.info), len(to_run))
        to_run = to_run[:first]
    return to_run, [b for b in python if b not in to_run]


def heading_anchors(path: Path) -> set[str]:
    """GitHub's anchors for the headings of a Markdown file (outside code blocks)."""
    anchors: set[str] = set()
    in_code = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            in_code = not in_code
        elif not in_code and line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            anchors.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return anchors


def resolves(linked: Path, anchor: str) -> bool:
    """The file exists, and so does the anchor if one is named in a Markdown file."""
    if not linked.exists():
        return False
    return not anchor or linked.suffix != ".md" or anchor in heading_anchors(linked)


@pytest.mark.parametrize("path", DOCS, ids=[p.relative_to(ROOT).as_posix() for p in DOCS])
def test_python_blocks_run(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each python block runs without error, in order, in one namespace per file."""
    to_run, compile_only = python_blocks(path)
    for block in compile_only:  # still valid Python: a renamed call fails here at least
        compile(block.text, f"{path.name}:{block.line}", "exec")
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {}
    torch = pytest.importorskip("torch")
    with torch.random.fork_rng(devices=[]):  # the examples seed torch: later tests see no change
        for block in to_run:
            script = tmp_path / f"{path.stem}_line{block.line}.py"
            script.write_text(block.text, encoding="utf-8")
            try:
                namespace = runpy.run_path(str(script), init_globals=namespace)
            except Exception as err:
                where = f"{path.name}: the block at line {block.line}"
                raise AssertionError(f"{where} raised {err!r}") from err


def test_docs_have_blocks_to_run() -> None:
    """The docs that show the API run it: README.md and docs/api.md hold runnable blocks."""
    counts = {p.relative_to(ROOT).as_posix(): [len(b) for b in python_blocks(p)] for p in DOCS}
    assert counts["README.md"][0] >= 2, counts
    assert counts["docs/api.md"][0] >= 4, counts
    assert sum(n for n, _ in counts.values()) > sum(m for _, m in counts.values()), counts


@pytest.mark.parametrize("path", DOCS, ids=[p.relative_to(ROOT).as_posix() for p in DOCS])
def test_relative_links_resolve(path: Path) -> None:
    """Every relative link points at a file that exists, and a #anchor at one of its headings."""
    text = path.read_text(encoding="utf-8")
    text = re.sub(r"```.*?```", "", text, flags=re.S)  # links shown inside code are not links
    broken = []
    for match in LINK.finditer(text):
        target = match["target"]
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        file_part, _, anchor = target.partition("#")
        linked = (path.parent / file_part).resolve() if file_part else path
        if not resolves(linked, anchor):
            broken.append(target)
    assert not broken, f"{path.name}: links that do not resolve: {broken}"
