"""A forward that raises: the same exception comes back unchanged, its partial log can be
found (`lw.partial_log(err)`, `err.lens_log`), and it is freed as soon as the user lets go
of it, without the cyclic garbage collector (issue 11, items 2 and 8)."""

from __future__ import annotations

import dataclasses
import gc
import weakref
from collections.abc import Callable

import pytest
import torch
from function_module import FunctionModule

import lens_widget as lw


@dataclasses.dataclass(frozen=True)
class FrozenError(Exception):
    code: int


class NoNewAttributes(Exception):
    __slots__ = ()

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} takes no new attribute {name!r}")


class PlainUserError(Exception):
    pass


def _raising(make_error: Callable[[], BaseException]) -> FunctionModule:
    """A forward that runs two ops, then raises a new exception (no frame keeps it)."""

    def forward(x: torch.Tensor) -> torch.Tensor:
        torch.relu(x) * 2
        raise make_error()

    return FunctionModule(forward)


@pytest.mark.parametrize(
    "make_error", [lambda: FrozenError(7), lambda: NoNewAttributes("refuses attributes")]
)
def test_an_exception_refusing_attributes_comes_back_unchanged(make_error):
    kind = type(make_error())
    with pytest.raises(kind) as caught:
        lw.trace(_raising(make_error), torch.randn(3))
    error = caught.value
    assert type(error) is kind and not hasattr(error, "lens_log")
    log = lw.partial_log(error)
    assert log is not None and [op.func for op in log.ops] == ["relu", "mul"]
    assert log.error is error
    if kind is FrozenError:
        assert error.code == 7 and vars(error) == {"code": 7}


def test_partial_log_finds_the_log_of_an_ordinary_exception_too():
    with pytest.raises(PlainUserError) as caught:
        lw.trace(_raising(lambda: PlainUserError("boom")), torch.randn(3))
    assert lw.partial_log(caught.value) is caught.value.lens_log
    assert lw.partial_log(ValueError("never traced")) is None


def _trace_and_drop(make_error: Callable[[], BaseException]) -> tuple[weakref.ref, weakref.ref]:
    """Trace a forward that raises, keep only weak references to the log and the error."""
    try:
        lw.trace(_raising(make_error), torch.randn(3))
    except Exception as err:
        log = lw.partial_log(err)
        assert log is not None and log.error is err
        return weakref.ref(log), weakref.ref(err)
    raise AssertionError("the forward should have raised")


@pytest.mark.parametrize(
    "make_error", [lambda: PlainUserError("boom"), lambda: FrozenError(3)], ids=["plain", "frozen"]
)
def test_a_partial_log_is_freed_when_the_user_drops_it(make_error):
    gc.collect()
    gc.disable()
    try:
        log_ref, error_ref = _trace_and_drop(make_error)
        assert error_ref() is None, "the exception outlived the user's references"
        assert log_ref() is None, "the partial log waits for the cyclic garbage collector"
    finally:
        gc.enable()


def test_a_log_kept_alone_still_says_what_went_wrong():
    gc.disable()
    try:
        try:
            lw.trace(_raising(lambda: PlainUserError("kept")), torch.randn(3))
        except PlainUserError as err:
            log = err.lens_log
        error = log.error  # the original exception is gone: a stand-in without traceback
        assert type(error) is PlainUserError and str(error) == "kept"
        assert error.__traceback__ is None and not hasattr(error, "lens_log")
        assert "PARTIAL" in str(log)
    finally:
        gc.enable()
