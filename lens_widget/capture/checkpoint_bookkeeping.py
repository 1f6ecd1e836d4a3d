"""Tensors that ``torch.utils.checkpoint`` makes for its own bookkeeping: not the model's ops.

Some torch versions (2.6) start each non-reentrant checkpoint region with a dummy
``torch.empty((0,), requires_grad=True)`` fed to ``_NoopSaveInputs``, whose forward returns
another ``torch.empty((0,))``: autograd plumbing that saves the region's inputs. Recorded,
they would be two ``empty`` ops per region that the untraced model never computed.
Newer torch saves the inputs without them. Recognised by the calling function's code object
(those functions, when the installed torch has them), not by a version number.
"""

from __future__ import annotations

from types import CodeType, FrameType

import torch.utils.checkpoint as _checkpoint


def _bookkeeping_codes() -> frozenset[CodeType]:
    codes: set[CodeType] = set()
    saver = getattr(_checkpoint, "_NoopSaveInputs", None)
    forward = getattr(saver, "forward", None)
    if forward is not None and hasattr(forward, "__code__"):
        codes.add(forward.__code__)
    generator = getattr(_checkpoint, "_checkpoint_without_reentrant_generator", None)
    if saver is not None and generator is not None:
        # contextlib.contextmanager keeps the generator function as __wrapped__
        codes.add(getattr(generator, "__wrapped__", generator).__code__)
    return frozenset(codes)


# Code objects of torch.utils.checkpoint functions that make bookkeeping tensors (empty when
# this torch makes none).
BOOKKEEPING_CODES = _bookkeeping_codes()
# The torch functions they call to make them.
BOOKKEEPING_CALLS = frozenset({"empty"}) if BOOKKEEPING_CODES else frozenset()


def is_checkpoint_bookkeeping(frame: FrameType) -> bool:
    """Whether `frame` (the caller of a torch function) is checkpoint's own bookkeeping."""
    return frame.f_code in BOOKKEEPING_CODES
