"""Ops that torch's own modules run while they are imported inside a traced call (torch 2.6's
lazy ``torch._dynamo`` import from ``torch.utils.checkpoint``) are not the model's ops."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import ModuleType

import pytest
import torch
from torch import nn

import lens_widget as lw

_SOURCE = "import torch\n\nBASE = torch.ones(3)\nTABLE = (BASE.abs() + 2) * BASE\n"


class _OneModuleFinder(importlib.abc.MetaPathFinder):
    """Finds one module name in one file, through Python's ordinary import machinery."""

    def __init__(self, name: str, path: Path) -> None:
        self.name, self.path = name, path

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.name:
            return None
        return importlib.util.spec_from_file_location(fullname, self.path)


@pytest.fixture
def lazy_module(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[str]:
    name: str = request.param
    path = tmp_path / "lazy_probe.py"
    path.write_text(_SOURCE)
    finder = _OneModuleFinder(name, path)
    sys.meta_path.insert(0, finder)
    try:
        yield name
    finally:
        sys.meta_path.remove(finder)
        sys.modules.pop(name, None)


class ImportsLazily(nn.Module):
    """Imports a module the first time it runs, as torch does with torch._dynamo."""

    def __init__(self, module: str) -> None:
        super().__init__()
        self.fc, self.module = nn.Linear(3, 3), module

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        table = importlib.import_module(self.module).TABLE
        return self.fc(x) * table


@pytest.mark.parametrize("lazy_module", ["torch._lens_widget_import_probe"], indirect=True)
def test_a_torch_modules_import_time_ops_are_not_recorded(lazy_module: str) -> None:
    model, x = ImportsLazily(lazy_module), torch.randn(2, 3)
    log = lw.trace(model, (x,))
    assert [op.func for op in log.ops] == ["linear", "mul"]
    out = log.ops[-1].activation
    assert out is not None and torch.equal(out, model(x))
    assert torch.equal(sys.modules[lazy_module].TABLE, torch.full((3,), 3.0))


@pytest.mark.parametrize("lazy_module", ["lens_widget_user_import_probe"], indirect=True)
def test_a_user_modules_import_time_ops_are_still_recorded(lazy_module: str) -> None:
    """Only torch's own imports are passed over: a user's code run by an import is traced."""
    log = lw.trace(ImportsLazily(lazy_module), (torch.randn(2, 3),))
    assert [op.func for op in log.ops] == ["ones", "abs", "add", "mul", "linear", "mul"]
