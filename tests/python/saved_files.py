"""Reading, tampering with and failing to load a saved log's log.json, for the tests of
untrusted files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import lens_widget as lw
from lens_widget import LogFormatError


def read_doc(path: Path) -> dict:
    return json.loads((path / "log.json").read_text())


def write_doc(path: Path, document: dict) -> None:
    (path / "log.json").write_text(json.dumps(document))


def node(document: dict, label: str) -> dict:
    return next(n for n in document["nodes"] if n["label"] == label)


def tampered(saved: Path, change) -> None:
    document = read_doc(saved)
    change(document)
    write_doc(saved, document)


def load_fails(path: Path, match: str) -> None:
    with pytest.raises(LogFormatError, match=match):
        lw.load(path)
