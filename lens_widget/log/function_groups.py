"""Function groups: the ops a plain function of the model's code ran, boxed like a module.

transformers builds attention masks, position ids and caches in plain functions
(`create_causal_mask`, `DynamicCache.update`) called from a module's forward. Their ops are
not in any submodule, so without a group they sit loose beside the model's own modules. An
op's `function` (OpRecord) names the outermost such function it ran in, below its module's
forward; the ops of one module pass with the same `function` form one group, addressed
``<module>.<function>()`` (``transformer.create_causal_mask()``; ``create_causal_mask()`` at
the top level), a child of that module.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from lens_widget.log.records import OpRecord

FUNCTION_MARK = "()"


@dataclass
class FunctionGroup:
    """One function of the model's code, as called from one module's forward."""

    address: str  # "transformer.create_causal_mask()"
    function: str  # "create_causal_mask"
    module: str  # the module whose forward called it ("" at the top level)
    n_passes: int  # the module passes it ran in
    n_ops: int  # ops inside it, every pass counted


def function_address(module: str, function: str) -> str:
    """Where a function group sits: ``transformer.create_causal_mask()``."""
    return f"{module}.{function}{FUNCTION_MARK}" if module else f"{function}{FUNCTION_MARK}"


def function_groups(nodes: Iterable[OpRecord]) -> dict[str, FunctionGroup]:
    """Every function group, in the order its first op ran."""
    found: dict[str, FunctionGroup] = {}
    passes: dict[str, set[int]] = {}
    for node in nodes:
        if node.kind != "op" or not node.function:
            continue
        address = function_address(node.module, node.function)
        group = found.get(address)
        if group is None:
            group = found[address] = FunctionGroup(address, node.function, node.module, 0, 0)
            passes[address] = set()
        group.n_ops += 1
        passes[address].add(node.module_stack[-1][1] if node.module_stack else 1)
    for address, group in found.items():
        group.n_passes = len(passes[address])
    return found
