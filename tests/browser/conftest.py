"""Shared Playwright fixtures: Debian's chromium, headless, no network beyond loopback."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from lab_server import Lab

from bench.chromium import CHROMIUM, CHROMIUM_ARGS

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "fixtures"))  # lens_harness, for test_widget_page
ARTIFACTS = HERE / "artifacts"


def _where(stack: str | None) -> str:
    """The first frames of a page error's stack, on one line."""
    return " ".join((stack or "").split())[:600]


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    if not shutil.which(CHROMIUM) and not Path(CHROMIUM).exists():
        # CI installs chromium (`make test`): missing there is a failure, not a skip.
        (pytest.fail if os.environ.get("CI") else pytest.skip)(f"no chromium at {CHROMIUM}")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture()
def page(browser: object) -> Iterator[object]:
    """A fresh page; console errors and uncaught exceptions go to `page.errors`, every
    requested URL to `page.request_urls`."""
    context = browser.new_context(device_scale_factor=1)  # type: ignore[attr-defined]
    p = context.new_page()
    errors: list[str] = []
    # with where it was thrown: a failure names the script, not only the message
    p.on("pageerror", lambda e: errors.append(f"pageerror: {e} | {_where(e.stack)}"))
    p.on(
        "console",
        lambda m: errors.append(f"console.{m.type}: {m.text}") if m.type == "error" else None,
    )
    p.errors = errors  # type: ignore[attr-defined]
    urls: list[str] = []
    p.on("request", lambda r: urls.append(r.url))
    p.request_urls = urls  # type: ignore[attr-defined]
    yield p
    context.close()


@pytest.fixture()
def artifacts() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


@pytest.fixture()
def lab(lab_server: Lab) -> Lab:
    """The module's JupyterLab (or Notebook 7) server (`lab_server`, module-scoped), as the
    module seeded it: no kernel left from an earlier test, its notebooks and settings back."""
    lab_server.reset()
    return lab_server
