"""`lens_widget.log.error_handle`: a partial log names a built-in exception (which takes no
weak reference) without keeping it alive, and never hands back one that is gone or going
(issue 11, item 8)."""

from __future__ import annotations

import copy
import gc
import pickle

from lens_widget.log.error_handle import LiveDict, handle


def _handled(error: BaseException):
    held = handle(error)
    assert held is not None, "CPython with the GIL: the handle is available"
    return held


def test_the_handle_gives_the_exception_while_it_lives_and_none_after():
    error = RuntimeError("boom")
    error.code = 3
    held = _handled(error)
    assert held() is error and type(vars(error)) is LiveDict and vars(error) == {"code": 3}
    del error
    assert held() is None
    others = [RuntimeError(i) for i in range(1000)]  # reuse the freed address: still None
    assert held() is None and len(others) == 1000


def test_two_handles_of_one_exception_share_its_sign_of_life():
    error = ValueError("twice")
    first, second = _handled(error), _handled(error)
    assert first() is error and second() is error
    del error
    assert first() is None and second() is None


def test_a_shallow_copy_does_not_keep_the_handle_alive():
    error = RuntimeError("original")
    error.note = "kept"
    held = _handled(error)
    twin = copy.copy(error)
    assert type(vars(twin)) is dict and twin.note == "kept" and held() is error
    del error
    assert held() is None and str(twin) == "original"


def test_a_kept_dict_of_the_exception_blocks_the_handle():
    error = RuntimeError("dict kept")
    held = _handled(error)
    attributes = vars(error)
    assert held() is None, "vars(err) could outlive the exception: the handle gives nothing"
    del attributes
    assert held() is error
    attributes = vars(error)
    del error
    assert held() is None and type(attributes) is LiveDict


def test_an_exception_being_freed_is_not_handed_back():
    # AttributeError clears `obj` before its __dict__: Spy.__del__ runs while the exception
    # is being freed, its dict still there. Handing it back then would resurrect freed memory.
    seen = []

    class Spy:
        def __del__(self) -> None:
            seen.append(held())

    error = AttributeError("gone", name="x", obj=Spy())
    held = _handled(error)
    del error
    assert seen == [None] and held() is None


def test_an_exception_freed_in_a_cycle_or_a_long_chain_is_gone():
    def raise_and_keep():
        try:
            raise RuntimeError("in a cycle")
        except RuntimeError as err:
            caught = err  # the frame, in err's traceback, holds err: a cycle
            return _handled(caught)

    held = raise_and_keep()
    gc.collect()
    assert held() is None

    # 200 exceptions chained by __context__: CPython defers deep deallocations (trashcan)
    head: BaseException = RuntimeError(0)
    handles = [_handled(head)]
    for i in range(1, 200):
        error = RuntimeError(i)
        error.__context__ = head
        head = error
        handles.append(_handled(head))
    del error, head
    assert all(held() is None for held in handles)


def test_copies_and_pickles_of_the_exception_carry_a_plain_dict():
    error = ValueError("bad", 2)
    error.code = 7
    assert _handled(error)() is error
    for twin in (copy.deepcopy(error), pickle.loads(pickle.dumps(error))):
        assert type(vars(twin)) is dict and twin.code == 7 and twin.args == ("bad", 2)
    assert type(copy.copy(vars(error))) is dict
    assert b"lens_widget" not in pickle.dumps(error)


class RefusesAttributes(Exception):
    __slots__ = ()

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(name)


def test_an_exception_refusing_a_new_dict_gets_no_handle():
    error = RefusesAttributes("untouched")
    assert handle(error) is None and type(vars(error)) is dict
