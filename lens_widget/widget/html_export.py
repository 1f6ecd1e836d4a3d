"""One self-contained HTML page of a trace: the widget's bundle, its graph, activation views.

The page opens in any browser with no Jupyter and fetches nothing: the bundle
(lens_widget/static/widget.js, Plotly inside) is imported from a Blob URL, the widget gets
the same trait values the kernel would sync, and a stand-in for the kernel in the page
(js/src/kernel/offline.ts) answers the inspector's activation requests from views made here
by the kernel's own `tensor_view`, pooled so that the whole file stays under `max_bytes`.
"""

from __future__ import annotations

import base64
import gzip
import html
import json
import os
import pathlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch
from ipywidgets.widgets.widget import _remove_buffers

from lens_widget.compare.comparison import OpDiff
from lens_widget.log.model_log import DEFAULT_HTML_BYTES, ModelLog
from lens_widget.widget import wire
from lens_widget.widget.page_answers import PageAnswers, page_answers
from lens_widget.widget.page_views import PageViews, page_views
from lens_widget.widget.payload import NO_MODEL, build_payload

_HERE = pathlib.Path(__file__).resolve().parent
_TEMPLATE = _HERE / "standalone.html"
BUNDLE = _HERE.parent / "static" / "widget.js"
_MARKER = re.compile(r"@@(TITLE|NOTE|BUNDLE|STATE|VIEWS|VALUES)@@")
_BLOCK = re.compile(r'<script type="application/octet-stream" id="lens-(\w+)">([^<]*)</script>')
# Room left for what the views' estimate does not count (offsets, gzip headers, the note).
_SLACK = 0.99
# Re-fits of the views to the budget, and how full a page may stop at.
_FIT_ROUNDS = 4
_FULL = 0.95


def log_state(log: ModelLog) -> dict[str, Any]:
    """The synced traits of a fresh LensWidget showing `log`, as the kernel sends them."""
    graph = wire.encode({**build_payload(log), "noRerun": NO_MODEL})  # as the trait travels
    return {"graph": graph, "view": "unrolled", "selected": "", "expanded": []}


def _packed(data: bytes) -> str:
    """gzip, then base64: what the page's <script type="application/octet-stream"> holds."""
    return base64.b64encode(gzip.compress(data, compresslevel=6, mtime=0)).decode("ascii")


def _json(value: object) -> bytes:
    return json.dumps(value, separators=(",", ":"), allow_nan=False).encode()


def _state_text(state: Mapping[str, Any]) -> str:
    """The traits with binary buffers split out, as ipywidgets sends them to the frontend."""
    plain, paths, buffers = _remove_buffers(dict(state, status=""))
    blobs = [base64.b64encode(bytes(b)).decode("ascii") for b in buffers]
    return _packed(_json({"state": plain, "buffers": list(zip(paths, blobs, strict=True))}))


def _views_text(views: PageViews, max_bytes: int, answers: PageAnswers) -> tuple[str, str]:
    index, chunks, offset = [], [], 0
    written: dict[bytes, int] = {}  # views sharing values point at one copy
    for view in views.views:
        length = view.values.numel()
        if view.digest not in written:
            values = view.values.to(torch.float32).contiguous().numpy().astype("<f4", copy=False)
            chunks.append(values.tobytes())
            written[view.digest] = offset
            offset += length
        index.append({"result": view.result, "offset": written[view.digest], "length": length})
    meta = {
        "views": index,
        "total": views.total,
        "maxBytes": max_bytes,
        "cap": views.cap,
        "noWeights": views.no_weights,
        # the metrics and first NaN/Inf, their values after the views' (page_answers.py)
        "answers": answers.at(offset).meta,
    }
    chunks.append(answers.values.numpy().astype("<f4", copy=False).tobytes())
    return _packed(_json(meta)), _packed(b"".join(chunks))


def _note(log: ModelLog, views: PageViews, max_bytes: int) -> str:
    kept = len(views.views)
    text = f"{log.model_class}: {len(log.ops):,} ops. "
    if views.total == 0:
        return text + "No activations were saved in the trace."
    text += f"{kept:,} of {views.total:,} activations are in this page"
    left = views.total - kept - len(views.no_weights)
    if left:
        text += f"; {left:,} were left out to keep it under {max_bytes / 1e6:.3g} MB"
    if views.no_weights:
        text += f"; {len(views.no_weights):,} parameters and buffers are not (weights=False)"
    if views.cap is not None:
        text += f"; large ones pooled to at most {views.cap:,} values"
    return text + "."


def _page(title: str, note: str, bundle: str, state: str, views: tuple[str, str]) -> str:
    parts = {
        "TITLE": html.escape(title),
        "NOTE": html.escape(note),
        "BUNDLE": bundle,
        "STATE": state,
        "VIEWS": views[0],
        "VALUES": views[1],
    }
    return _MARKER.sub(lambda m: parts[m.group(1)], _TEMPLATE.read_text(encoding="utf-8"))


@dataclass(frozen=True)
class Page:
    """A page as `write_html` writes it: its bytes, and the note it opens with (what it holds
    and what it left out to stay under its budget)."""

    html: bytes
    note: str


def render_page(
    log: ModelLog,
    state: Mapping[str, Any],
    *,
    max_bytes: int = DEFAULT_HTML_BYTES,
    weights: bool = False,
    diffs: Mapping[str, OpDiff] | None = None,
) -> Page:
    """The page of `log` with the widget `state` (its synced traits), at most `max_bytes`;
    with `weights`, parameters and buffers get views too; `diffs`: a comparison's, whose
    metrics the page answers too.

    Raises ValueError when `max_bytes` cannot hold even the page without activations.
    """
    if not BUNDLE.is_file():
        raise FileNotFoundError(f"{BUNDLE} is missing: build the frontend (`npm run build`)")
    bundle = _packed(BUNDLE.read_bytes())
    state_text = _state_text(state)
    answers = page_answers(log, diffs)

    def page_of(views: PageViews) -> Page:
        note = _note(log, views, max_bytes)
        texts = _views_text(views, max_bytes, answers)
        return Page(_page(log.model_class, note, bundle, state_text, texts).encode("utf-8"), note)

    # the page with no view at all, its note in its longest form ("0 of N ... left out ...")
    weight_labels = [r.label for r in log.nodes if r.kind in ("param", "buffer")]
    empty = PageViews([], len(log.nodes) * 8, weight_labels, cap=0)
    base = len(page_of(empty).html)
    if base > max_bytes:
        raise ValueError(
            f"max_bytes={max_bytes:,} is below the size of the page without activations "
            f"({base:,} bytes: the widget bundle and the graph)"
        )
    # The budget is an estimate (gzip shrinks views by an amount known only once packed):
    # fit, pack, and scale it by what the views really took, keeping the best page that fits.
    budget = (max_bytes - base) * _SLACK
    views = page_views(log, budget, weights=weights)
    best: Page | None = None
    for _ in range(_FIT_ROUNDS):
        page = page_of(views)
        fits = len(page.html) <= max_bytes
        if fits and (best is None or len(page.html) > len(best.html)):
            best = page
        if fits and (views.complete or len(page.html) >= _FULL * max_bytes):
            break
        budget *= (max_bytes - base) * _SLACK / max(1, len(page.html) - base)
        views.fit(budget)
    if best is None:  # not reached: `base` counted the page without views
        views.fit(0.0)
        best = page_of(views)
    return best


def write_html(
    path: str | os.PathLike[str],
    log: ModelLog,
    state: Mapping[str, Any],
    *,
    max_bytes: int = DEFAULT_HTML_BYTES,
    weights: bool = False,
    diffs: Mapping[str, OpDiff] | None = None,
) -> pathlib.Path:
    """Write `render_page`'s page to `path` (same arguments, same ValueError)."""
    page = render_page(log, state, max_bytes=max_bytes, weights=weights, diffs=diffs)
    out = pathlib.Path(path)
    out.write_bytes(page.html)
    return out


def page_blocks(page: str) -> dict[str, bytes]:
    """The data blocks of a page this module wrote, unpacked: "bundle", "state" (JSON),
    "views" (JSON) and "values" (float32 little-endian)."""
    return {
        name: gzip.decompress(base64.b64decode(text)) if text else b""
        for name, text in _BLOCK.findall(page)
    }


def write_log_html(
    log: ModelLog,
    path: str | os.PathLike[str],
    *,
    max_bytes: int = DEFAULT_HTML_BYTES,
    weights: bool = False,
) -> pathlib.Path:
    """`ModelLog.to_html`: the page of a fresh widget showing `log`."""
    return write_html(path, log, log_state(log), max_bytes=max_bytes, weights=weights)
