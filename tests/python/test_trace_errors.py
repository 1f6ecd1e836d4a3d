"""A forward that raises: the same exception comes back unchanged, its partial log can be
found (`lw.partial_log(err)`, `err.lens_log`), and it is freed as soon as the user lets go
of it, without the cyclic garbage collector (issue 11, items 2 and 8), through weak
references alone: the log names a built-in exception by a copy (issue 25, item 5)."""

from __future__ import annotations

import dataclasses
import gc
import weakref
from collections.abc import Callable, Iterator

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


class Witness:
    """Held by the raising forward's frame, so by the exception's traceback: it dies with
    the exception (which a built-in exception class does not let a test reference weakly)."""


def _names_its_error(log: lw.ModelLog, error: BaseException) -> bool:
    """`log.error` is `error` where its class takes weak references; else a copy of it
    (same class and message, no traceback), made before the partial log was attached."""
    try:
        weakref.ref(error)
    except TypeError:
        copy = log.error
        assert copy is not None and copy is not error and type(copy) is type(error)
        assert str(copy) == str(error) and copy.__traceback__ is None
        return not hasattr(copy, "lens_log") and error.__traceback__ is not None
    return log.error is error


def _raising(make_error: Callable[[], BaseException], *, torch_error: bool = False):
    """A forward that runs two ops, then raises a new exception (no frame keeps it), or
    with `torch_error` a third op that raises torch's own RuntimeError (a shape mismatch).
    ``model.witnesses`` gets a weak reference to a `Witness` of each call."""
    witnesses: list[weakref.ref] = []

    def forward(x: torch.Tensor) -> torch.Tensor:
        witness = Witness()
        witnesses.append(weakref.ref(witness))
        y = torch.relu(x) * 2
        if torch_error:
            return y @ torch.ones(5, 5)
        raise make_error()

    model = FunctionModule(forward)
    model.witnesses = witnesses
    return model


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
    assert _names_its_error(log, error)
    assert (log.error is error) is (kind is FrozenError)  # __slots__ = (): no weak reference
    if kind is FrozenError:
        assert error.code == 7 and vars(error) == {"code": 7}


def test_partial_log_finds_the_log_of_an_ordinary_exception_too():
    with pytest.raises(PlainUserError) as caught:
        lw.trace(_raising(lambda: PlainUserError("boom")), torch.randn(3))
    assert lw.partial_log(caught.value) is caught.value.lens_log
    assert lw.partial_log(ValueError("never traced")) is None


def _trace_and_drop(model: torch.nn.Module) -> tuple[weakref.ref, ...]:
    """Trace a forward that raises, keep only weak references to the log, the error and
    a tensor the log saved."""
    try:
        lw.trace(model, torch.randn(3))
    except Exception as err:
        log = lw.partial_log(err)
        assert log is not None and _names_its_error(log, err)
        saved = log.ops[0].activation
        assert saved is not None
        return weakref.ref(log), model.witnesses[-1], weakref.ref(saved)
    raise AssertionError("the forward should have raised")


@pytest.fixture
def gc_off() -> Iterator[None]:
    """The cyclic collector paused: what is freed meanwhile is freed by reference counting."""
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


# Python's built-in exception classes cannot be referenced weakly (issue 11, item 8).
BUILT_IN = {
    "runtime": lambda: _raising(lambda: RuntimeError("boom")),
    "value": lambda: _raising(lambda: ValueError("bad value")),
    "shape": lambda: _raising(lambda: RuntimeError(), torch_error=True),
}
MODELS = {
    "plain": lambda: _raising(lambda: PlainUserError("boom")),
    "frozen": lambda: _raising(lambda: FrozenError(3)),
    **BUILT_IN,
}


@pytest.mark.parametrize("make_model", MODELS.values(), ids=MODELS.keys())
def test_a_partial_log_is_freed_when_the_user_drops_it(make_model, gc_off):
    model = make_model()
    gc.collect()
    log_ref, error_ref, saved_ref = _trace_and_drop(model)
    assert error_ref() is None, "the exception outlived the user's references"
    assert log_ref() is None, "the partial log waits for the cyclic garbage collector"
    assert saved_ref() is None, "the log's activations outlived it"


@pytest.mark.parametrize("make_model", BUILT_IN.values(), ids=BUILT_IN.keys())
def test_a_built_in_exception_kept_keeps_its_log_and_frees_it_after(make_model, gc_off):
    model = make_model()
    try:
        lw.trace(model, torch.randn(3))
    except Exception as err:  # noqa: BLE001 - the built-in class under test
        error = err
    log_ref = weakref.ref(error.lens_log)  # the user's reference to the log is dropped
    assert type(error).__module__ == "builtins"
    assert error.lens_log is log_ref() and lw.partial_log(error) is log_ref()
    assert _names_its_error(log_ref(), error)
    assert type(vars(error)) is dict, "the exception's own attributes are left as they were"
    assert "the partial log is at err.lens_log" in error.__notes__[-1]
    assert error.__traceback__ is not None
    del error
    assert log_ref() is None


@pytest.mark.parametrize("make_model", BUILT_IN.values(), ids=BUILT_IN.keys())
def test_a_log_kept_alone_names_a_stand_in_of_its_built_in_exception(make_model, gc_off):
    model = make_model()
    try:
        lw.trace(model, torch.randn(3))
    except Exception as err:  # noqa: BLE001 - the built-in class under test
        log, kind, message = err.lens_log, type(err), str(err)
    assert model.witnesses[-1]() is None, "the log kept its exception alive"
    error = log.error
    assert type(error) is kind and str(error) == message
    assert error.__traceback__ is None and not hasattr(error, "lens_log")
    assert log.error is error and "PARTIAL" in str(log)


ERRORS_WITH_FIELDS = {
    "stop": (lambda: StopIteration(4), {"value": 4}),
    "os": (
        lambda: FileNotFoundError(2, "no file", "w.pt"),
        {"errno": 2, "strerror": "no file", "filename": "w.pt"},
    ),
    "syntax": (lambda: SyntaxError("bad", ("m.py", 3, 2, "x y")), {"lineno": 3, "offset": 2}),
}


@pytest.mark.parametrize(
    ("make_error", "fields"), ERRORS_WITH_FIELDS.values(), ids=ERRORS_WITH_FIELDS
)
def test_the_copy_of_a_built_in_exception_has_the_fields_its_init_sets(make_error, fields, gc_off):
    """Built-in classes set these in __init__, not from __new__'s arguments."""
    try:
        with lw.tracing() as t:
            torch.relu(torch.randn(3))
            error = make_error()
            error.__notes__ = ["the user's note"]  # add_note, also on Python 3.10
            raise error
    except Exception as err:  # noqa: BLE001 - the built-in classes under test
        kind, message = type(err), str(err)
        assert err.__notes__[-1].endswith("the partial log is at err.lens_log")
        del error
    copy = t.log.error
    assert type(copy) is kind and str(copy) == message and copy.__traceback__ is None
    assert {name: getattr(copy, name) for name in fields} == fields
    assert copy.__notes__ == ["the user's note"], "the note naming err.lens_log is err's alone"


def _section_and_drop(make_error: Callable[[], BaseException]) -> list[weakref.ref]:
    """Weak references to the partial log of a section that raised and to a saved tensor."""
    try:
        with lw.tracing() as t:
            torch.relu(torch.randn(3)) * 2
            raise make_error()
    except Exception as err:
        assert err.lens_log is t.log and _names_its_error(t.log, err)
        saved = t.log.ops[-1].activation
        assert saved is not None
        return [weakref.ref(t.log), weakref.ref(saved)]
    raise AssertionError("the block should have raised")


@pytest.mark.parametrize(
    "make_error", [lambda: RuntimeError("step"), lambda: StopIteration(4)], ids=["runtime", "stop"]
)
def test_a_partial_section_log_is_freed_when_the_user_drops_it(make_error, gc_off):
    gc.collect()
    assert [ref() for ref in _section_and_drop(make_error)] == [None, None]


def test_a_log_kept_alone_still_says_what_went_wrong(gc_off):
    try:
        lw.trace(_raising(lambda: PlainUserError("kept")), torch.randn(3))
    except PlainUserError as err:
        log = err.lens_log
    error = log.error  # the original exception is gone: a stand-in without traceback
    assert type(error) is PlainUserError and str(error) == "kept"
    assert error.__traceback__ is None and not hasattr(error, "lens_log")
    assert "PARTIAL" in str(log)


@pytest.mark.parametrize("layout", [torch.strided, torch.jagged])
def test_a_nested_tensor_is_a_clear_error_that_changes_nothing(layout):
    """torch.nested tensors have no one shape per node: refused up front as an input, and a
    jagged one as the output of an op inside the forward (the partial log holds the ops
    before it); a strided one made inside the forward (as torch's fast paths make them) is
    recorded padded (test_fast_paths.py)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch: "nested tensors are in prototype stage"
        nested = torch.nested.nested_tensor([torch.randn(3, 6), torch.randn(5, 6)], layout=layout)
    model = torch.nn.Linear(6, 6)
    call = torch.nn.Module.__call__
    name = str(layout).removeprefix("torch.")
    with pytest.raises(TypeError, match=f"cannot trace nested tensors .*layout {name}"):
        lw.trace(model, (nested,))
    assert torch.nn.Module.__call__ is call and torch._C._len_torch_function_stack() == 0

    def make_nested(x: torch.Tensor) -> torch.Tensor:
        y = x * 2
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return torch.nested.as_nested_tensor([y[:2], y[2:]], layout=layout) + 1

    if layout is torch.strided:  # what torch's fast paths make: traced, shown padded
        x = torch.randn(5, 6)
        log = lw.trace(FunctionModule(make_nested), (x,))
        assert torch.equal(log.output.to_padded_tensor(0.0), make_nested(x).to_padded_tensor(0.0))
        assert log.nodes[-1].nested_shapes == (((2, 6), (3, 6)),)
        return
    with pytest.raises(TypeError, match="pad them") as err:
        lw.trace(FunctionModule(make_nested), (torch.randn(5, 6),))
    assert [op.func for op in err.value.lens_log.ops][:1] == ["mul"]


def test_a_forward_returning_a_generator_warns_that_its_ops_come_later():
    def lazy(x: torch.Tensor):  # noqa: ANN202
        return (x * k for k in range(3))

    with pytest.warns(UserWarning, match="returned a generator: its ops run when it is consumed"):
        log = lw.trace(FunctionModule(lazy), (torch.randn(2),))
    assert log.ops == []
