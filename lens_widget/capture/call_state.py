"""The global state a call ran under that its replay needs: the RNG state before a random
call, and the autocast contexts that were on. Read on the recorder's hot path: nothing here
reads a tensor or reaches a mode."""

from __future__ import annotations

from typing import Any

import torch

from lens_widget.capture.func_facts import FuncFacts
from lens_widget.log.replay import AUTOCAST_DEVICES, ReplayCall


def autocast_state() -> tuple[tuple[str, torch.dtype], ...]:
    """(device type, dtype) of every autocast context that is on."""
    return tuple(
        (device, torch.get_autocast_dtype(device))
        for device in AUTOCAST_DEVICES
        if torch.is_autocast_enabled(device)
    )


def keep_rng_state(
    facts: FuncFacts, args: tuple[Any, ...], kwargs: dict[str, Any] | None, replay: ReplayCall
) -> None:
    """The RNG state before a random call, for its replay; none where its arguments make it
    draw nothing (dropout in eval mode)."""
    draws_when = facts.draws_when
    if draws_when is not None and not draws_when.draws(args, kwargs):
        return
    replay.rng_state = torch.get_rng_state()
    if torch.cuda.is_initialized():
        replay.cuda_rng_states = torch.cuda.get_rng_state_all()
