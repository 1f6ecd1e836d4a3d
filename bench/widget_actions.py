"""What a person does on the widget bench's page, each timed inside the page: a click, a
button, picking a metric to recolor by, a drag that pans, opening modules in turn."""

from __future__ import annotations

from typing import Any

from .measure import median, percentile
from .widget_page import Kernel

STEP_TIMEOUT_MS = 120_000


def canvas_box(page: Any) -> dict[str, float]:
    return page.eval_on_selector(
        '[data-testid="graph-canvas"]',
        "c => { const r = c.getBoundingClientRect(); "
        "return {x: r.left, y: r.top, w: r.width, h: r.height}; }",
    )


def on_screen(page: Any, ids: list[str], limit: int = 20) -> list[tuple[str, dict[str, float]]]:
    """The first `limit` of `ids` whose centre is inside the canvas, with screen positions."""
    found = page.evaluate(
        """([ids, limit]) => {
          const canvas = window.__el.querySelector('[data-testid="graph-canvas"]');
          const c = canvas.getBoundingClientRect();
          const out = [];
          for (const id of ids) {
            const p = window.__el.__lens.nodeScreenPos(id);
            const inside = p && p.x > c.left + 10 && p.x < c.right - 10
              && p.y > c.top + 10 && p.y < c.bottom - 10;
            if (inside) out.push([id, p]);
            if (out.length >= limit) break;
          }
          return out;
        }""",
        [ids, limit],
    )
    return [(i, p) for i, p in found]


def timed_click(page: Any, kind: str, x: float, y: float) -> float:
    page.evaluate("(k) => window.__bench.arm(k)", kind)
    page.mouse.click(x, y)
    return float(page.evaluate("() => window.__bench.done"))


# Metrics picked in turn by the recolor row (any order: each pick changes every color).
RECOLOR_METRICS = ("flops", "bytes", "params", "mean", "std", "absmax")


def timed_recolor(page: Any, kernel: Kernel) -> dict[str, Any]:
    """Pick each metric in turn; ms from the pick to the frame drawn in the new colors."""
    ids = page.evaluate("() => window.__el.__lens.visibleIds")
    probe = [i for i in ids if not i.startswith("@")][:5] + [i for i in ids if i[0] == "@"][:5]
    page.select_option('[data-testid="metric-picker"]', "flops")  # warm: first fetch, legend
    page.wait_for_function(
        "() => !document.querySelector('[data-testid=overlay-note]').textContent",
        timeout=STEP_TIMEOUT_MS,
    )
    kernel.metrics_ms.clear()
    times = []
    for metric in RECOLOR_METRICS[1:]:
        page.evaluate("(p) => window.__bench.armRecolor(p)", probe)
        page.select_option('[data-testid="metric-picker"]', metric)
        times.append(float(page.evaluate("() => window.__bench.done")))
    page.select_option('[data-testid="metric-picker"]', "")
    return {
        "ms": median(times),
        "samples_ms": times,
        "kernel_ms": median(kernel.metrics_ms),
        "visible": len(ids),
    }


def timed_button(page: Any, testid: str) -> float:
    page.evaluate("() => window.__bench.arm('layout')")
    page.click(f'[data-testid="{testid}"]')
    return float(page.evaluate("() => window.__bench.done"))


def wait_idle(page: Any) -> None:
    page.wait_for_function(
        "() => window.__el && window.__el.__lens && window.__el.__lens.layoutStatus === 'idle'",
        timeout=STEP_TIMEOUT_MS,
    )
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")


def timed_pan(page: Any) -> dict[str, float]:
    box = canvas_box(page)
    cx, cy = box["x"] + box["w"] * 0.7, box["y"] + box["h"] * 0.5
    page.mouse.move(cx, cy)
    page.mouse.down()
    page.evaluate("() => window.__bench.startFrames()")
    page.mouse.move(cx - box["w"] * 0.4, cy - box["h"] * 0.2, steps=120)
    page.mouse.up()
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
    frames = page.evaluate("() => window.__bench.stopFrames()")
    stamps = [f[0] for f in frames]
    intervals = [b - a for a, b in zip(stamps, stamps[1:], strict=False)][1:-1]
    draws = [f[1] for i, f in enumerate(frames) if i == 0 or f[1] != frames[i - 1][1]]
    drawn = max((f[2] for f in frames), default=0)
    return {
        "frame_median_ms": median(intervals),
        "frame_p95_ms": percentile(intervals, 95),
        "draw_median_ms": median(draws),
        "draw_p95_ms": percentile(draws, 95),
        "frames": len(intervals),
        "drawn_items": drawn,
    }


def open_in_turn(page: Any, ids: list[str]) -> dict[str, float | None]:
    """Time a click that opens each module of `ids` in turn (Fit first if one is off screen)."""
    times: dict[str, float | None] = {}
    for item in ids:
        found = on_screen(page, [item])
        if not found:
            page.click('[data-testid="fit"]')
            wait_idle(page)
            found = on_screen(page, [item])
        times[item] = timed_click(page, "layout", *found[0][1].values()) if found else None
    return times
