"""log.to_onnx opens in Netron: the netron package serves the file on loopback and headless
chromium shows the graph with our nodes, named by module path and label."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from torch import nn

import lens_widget as lw

netron = pytest.importorskip("netron")
pytest.importorskip("onnx")


class SmallCNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))
        self.head = nn.Linear(4 * 4 * 4, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(self.head(self.features(x).flatten(1)), dim=-1)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, lw.ModelLog]]:
    torch.manual_seed(0)
    log = lw.trace(SmallCNN().eval(), torch.randn(1, 3, 8, 8))
    path = log.to_onnx(tmp_path / "cnn.onnx")
    address = netron.start(str(path), address=("127.0.0.1", free_port()), browse=False)
    try:
        yield f"http://{address[0]}:{address[1]}", log
    finally:
        netron.stop(address)


def test_netron_shows_the_exported_trace(page, served, artifacts) -> None:
    url, log = served
    # Netron asks the internet for a location and analytics: keep the test on loopback.
    page.route(
        "**/*",
        lambda route: route.continue_() if route.request.url.startswith(url) else route.abort(),
    )
    page.goto(url + "/")
    accept = page.get_by_text("Accept")
    accept.wait_for(timeout=30_000)  # Netron's first-run consent screen
    accept.click()
    page.locator("body.default").wait_for(timeout=30_000)  # the graph page, not the welcome one
    conv = next(n for n in log.ops if n.func == "conv2d")
    node = page.locator(f'[id="node-name-/features/0/{conv.label}"]')
    node.wait_for(timeout=30_000)
    assert "Conv" in node.text_content()
    linear = next(n for n in log.ops if n.func == "linear")
    assert "Gemm" in page.locator(f'[id="node-name-/head/{linear.label}"]').text_content()
    assert page.locator('[id^="node-name-"]').count() == len(log.ops) + len(log.outputs)
    page.screenshot(path=str(artifacts / "netron.png"))
