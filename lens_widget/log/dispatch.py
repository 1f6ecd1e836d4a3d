"""What a dispatched model's device hooks did while it was traced (``log.dispatch``).

A model dispatched with accelerate (``dispatch_model``, ``disk_offload``, ``cpu_offload``,
``from_pretrained(device_map=...)``) has a hook on its modules that runs before and after
each call: it moves the call's inputs to the module's device, loads offloaded weights from
CPU memory or disk, puts them back afterwards and moves outputs back. Those calls are not
ops of the model, so they are not in ``log.ops``; each hook call is one DispatchCall here,
in the order they ran. Not saved by ``log.save`` (a loaded log has none).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

DispatchPhase = Literal["pre", "post"]


@dataclass(eq=False)
class DispatchCall:
    """One call of a module's device hook: before (``"pre"``) or after (``"post"``) the
    module's forward.

    `loaded`: the parameters and buffers the hook put on the module, by the model's names
    (``transformer.h.0.attn.c_attn.weight``; a tied weight by the name of the weight it is
    tied to), with their `nbytes` in all; `offloaded`: those it took off (back to the meta
    device, where offloaded weights wait between calls). `moved`: how many of the call's
    arguments (pre) or outputs (post) it replaced by a copy on another device or dtype.
    `device`: where the loaded weights or moved tensors went ("" when nothing was).
    """

    module: str  # its address, as in log.modules ("" for the model itself)
    pass_index: int  # which call of the module (1 for its first), 0 if not known
    phase: DispatchPhase
    loaded: tuple[str, ...] = ()
    nbytes: int = 0
    offloaded: tuple[str, ...] = ()
    moved: int = 0
    device: str = ""
