"""NaN/Inf that reach the output (or a gradient) against NaN/Inf masked away later (#24 item
7): `nonfinite_reach`, the "nonfiniteMasked" metric and the inspector's answer; first_nonfinite
keeps its meaning (the first op that made one, masked or not)."""

from __future__ import annotations

import struct

import lens_widget as lw
from lens_widget.log.nonfinite import nonfinite_reach
from lens_widget.widget import LensWidget
from model_zoo import t5
from model_zoo.nonfinite import nonfinite_heads
from tests.python.widget_replies import ask


def _ops(log: lw.ModelLog, func: str) -> list[str]:
    return [op.label for op in log.ops if op.func == func]


def test_a_leak_reaches_the_output_and_a_clamped_log_is_masked() -> None:
    case = nonfinite_heads()
    log = lw.trace(case.model, case.args)
    leaking, bucket_log = _ops(log, "log")
    reach = nonfinite_reach(log.nodes)
    assert reach[leaking] is True
    assert reach[bucket_log] is False
    assert set(reach) >= {leaking, bucket_log}
    assert all(reach[o.label] for o in log.outputs if o.label in reach)
    assert log.first_nonfinite().label == leaking  # unchanged: the first that made one


def test_t5_relative_position_log_is_masked_and_the_widget_says_so() -> None:
    case = t5()
    widget = LensWidget(case.model, case.args, case.kwargs)
    log = widget.model_log
    logs = _ops(log, "log")
    assert logs and log.first_nonfinite().label == logs[0]
    reply, (buf,) = ask(widget, "metrics", {"metric": "nonfiniteMasked"})
    values = dict(
        zip(
            reply["result"]["ids"],
            struct.unpack(f"<{len(reply['result']['ids'])}f", buf),
            strict=True,
        )
    )
    assert all(values[label] == 1.0 for label in logs)
    # every op whose NaN/Inf is masked, and only those: nothing in T5 reaches its outputs
    reply, (flags,) = ask(widget, "metrics", {"metric": "nonfinite"})
    flagged = struct.unpack(f"<{len(reply['result']['ids'])}f", flags)
    assert [v for v in flagged if v == 1.0] and list(flagged) == [
        values[i] for i in reply["result"]["ids"]
    ]
    reply, _ = ask(widget, "opDetails", {"id": logs[0]})
    assert reply["result"]["nonfinite"] == "masked"
    linear = next(op.label for op in log.ops if op.func == "linear")
    assert ask(widget, "opDetails", {"id": linear})[0]["result"]["nonfinite"] is None


def test_the_widget_calls_a_leak_one_that_reaches() -> None:
    case = nonfinite_heads()
    widget = LensWidget(case.model, case.args)
    leaking, bucket_log = _ops(widget.model_log, "log")
    assert ask(widget, "opDetails", {"id": leaking})[0]["result"]["nonfinite"] == "reaches"
    assert ask(widget, "opDetails", {"id": bucket_log})[0]["result"]["nonfinite"] == "masked"
