"""The monitor view in the built widget, answered by the real kernel code: a monitored
training run of a small model with a NaN made at a known step. The person picks a
statistic, moves the step slider (the colors change), sees the ranked list with the NaN op
first, clicks it and sees its statistics over the steps (and its value at the kept step)."""

from __future__ import annotations

import pytest
from lens_harness import lens, open_widget, wait_idle, widget_kernel

import lens_widget as lw
from model_zoo.monitored import PoisonNet, train

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning")

POISON, STEPS = 3, 6
SHOWN = "document.querySelector('[data-testid=monitor]').dataset.shown || ''"


def colors(page, ids: list[str]) -> dict[str, str | None]:
    return {i: page.evaluate("(id) => window.__el.__lens.overlayColor(id)", i) for i in ids}


def wait_shown(page, what: str) -> None:
    page.wait_for_function(f"() => ({SHOWN}) === {what!r}", timeout=10000)


def slide(page, index: int) -> None:
    page.evaluate(
        """(i) => { const s = document.querySelector('[data-testid=monitor-slider]');
                    s.value = String(i); s.dispatchEvent(new Event('input')); }""",
        index,
    )


def test_a_monitored_run_colors_ranks_and_plots(page, artifacts) -> None:
    model = PoisonNet(poison_at=POISON)
    mon = lw.Monitor(model, keep="nonfinite")
    w = lw.LensWidget.from_monitor(mon)
    train(model, mon, STEPS)
    nan_op = mon.history.first_nonfinite()[1]
    open_widget(
        page,
        w.graph,
        traits={"monitor": w.monitor, "step": -1},
        python_kernel=widget_kernel(w),
    )
    assert page.locator("[data-testid=monitor-bar]").is_visible()
    # following the latest step: the slider is at its end
    assert page.text_content("[data-testid=monitor-step]") == f"{STEPS - 1} of {STEPS - 1}"
    assert page.is_checked("[data-testid=monitor-follow]")
    # the ranked list opens on the latest step (all NaN after the poisoned update)
    ops = [n["id"] for n in w.graph["unrolled"]["nodes"] if n["kind"] == "op"]
    shown = [i for i in lens(page, "visibleIds") if i in ops]
    assert shown and set(colors(page, shown).values()) == {None}  # no statistic picked yet

    page.select_option("[data-testid=monitor-stat]", "mean")
    slide(page, 1)
    wait_shown(page, "1|activation|mean|value")
    wait_idle(page)
    assert not page.is_checked("[data-testid=monitor-follow]")  # moved: no longer follows
    at_1 = colors(page, shown)
    assert all(c and c.startswith("rgb(") for c in at_1.values()), at_1
    assert "mean @ 1" in page.text_content("[data-testid=overlay-range]")

    page.select_option("[data-testid=monitor-mode]", "change")
    slide(page, 2)
    wait_shown(page, "2|activation|mean|change")
    at_2 = colors(page, shown)
    assert at_2 != at_1, "moving the slider (and to change since the first step) recolors"

    page.select_option("[data-testid=monitor-stat]", "nan")
    page.select_option("[data-testid=monitor-mode]", "value")
    slide(page, POISON)
    wait_shown(page, f"{POISON}|activation|nan|value")
    first = page.locator("[data-testid=monitor-ranked] li").first
    assert first.get_attribute("data-id") == nan_op
    assert "first made here" in first.text_content()
    # linear_1_1 ran before the NaN: its output has none, the log's has the most
    assert colors(page, ["linear_1_1"])["linear_1_1"] == "rgb(68,1,84)"  # the ramp's bottom
    assert colors(page, [nan_op])[nan_op] != "rgb(68,1,84)"

    first.locator("button").click()
    page.wait_for_function(
        "() => document.querySelector('[data-testid=monitor-series]').dataset.plotted"
        " === 'activation,gradient'",
        timeout=20000,
    )
    assert lens(page, "selected") == nan_op  # the op is selected in the graph too
    assert page.locator("[data-testid=monitor-series] .main-svg").count() > 0
    # one x mark at the poisoned step in the activation's NaN/Inf trace
    marks = page.evaluate(
        """() => document.querySelector('[data-testid=monitor-series]').data
                  .filter(t => t.name === 'activation NaN/Inf').map(t => t.x)"""
    )
    assert marks and marks[0][0] == POISON, marks
    # the poisoned step was kept whole: its value is plotted from that step's log
    page.locator("[data-testid=monitor-kept-plot] .main-svg").first.wait_for(timeout=20000)

    # back to following: the slider goes to the latest step
    page.check("[data-testid=monitor-follow]")
    page.wait_for_function(
        f"() => document.querySelector('[data-testid=monitor]').dataset.step === '{STEPS - 1}'"
    )
    sent = page.evaluate("() => window.__fake.log.sent.filter(m => m.method === 'monitorStep')")
    # ids travel once: later requests name the ids the frontend holds
    assert sum(1 for m in sent if "idsOf" not in m["params"]) == 1, sent
    page.screenshot(path=str(artifacts / "monitor_page.png"), full_page=True)
    assert page.errors == []
