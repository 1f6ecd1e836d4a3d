"""The straightforward form of lens_widget/log/repeated_blocks.py's search and fold, as it was
before the fast one: every module's ops by scanning, every repeat's prefix tried against every
parameter. Quadratic, but plainly right; tests check the fast code gives the same answers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from lens_widget.log.records import ModuleInfo, OpRecord
from lens_widget.log.repeated_blocks import MIN_BLOCK_OPS, block_signature


def ops_inside(nodes: Sequence[OpRecord], address: str) -> list[OpRecord]:
    """The ops run inside module `address` (nested modules included), in order."""
    return [n for n in nodes if n.kind == "op" and any(a == address for a, _ in n.module_stack)]


def reference_repeated_blocks(
    nodes: Sequence[OpRecord], modules: Mapping[str, ModuleInfo]
) -> list[list[str]]:
    inside = {address: ops_inside(nodes, address) for address in modules if address}
    children: dict[str | None, list[str]] = {}
    for address, info in modules.items():
        if address and len(inside[address]) >= MIN_BLOCK_OPS:
            children.setdefault(info.parent, []).append(address)
    groups: list[list[str]] = []
    for siblings in children.values():
        run: list[str] = []
        run_key: object = None
        for address in siblings:
            key = block_signature(address, modules[address].class_name, inside[address])
            produced = {op.label for op in inside[run[-1]]} if run else set()
            feeds = any(p in produced for op in inside[address] for p in op.parents)
            if key == run_key and feeds:
                run.append(address)
                continue
            if len(run) > 1:
                groups.append(run)
            run, run_key = [address], key
        if len(run) > 1:
            groups.append(run)
    hidden = [member for group in groups for member in group[1:]]
    kept = [g for g in groups if not any(g[0].startswith(h + ".") for h in hidden)]
    order = list(modules)
    return sorted(kept, key=lambda g: order.index(g[0]))


def reference_folded_layers(
    nodes: Sequence[OpRecord], groups: Sequence[Sequence[str]]
) -> dict[str, str]:
    alias: dict[str, str] = {}
    for group in groups:
        first = ops_inside(nodes, group[0])
        for member in group[1:]:
            for mine, theirs in zip(ops_inside(nodes, member), first, strict=True):
                alias[mine.layer] = alias.get(theirs.layer, theirs.layer)
    labels = {node.label for node in nodes}
    prefixes = {m + ".": group[0] + "." for group in groups for m in group[1:]}
    for node in nodes:
        if node.kind not in ("param", "buffer"):
            continue
        for prefix, first_prefix in prefixes.items():
            if node.label.startswith(prefix):
                twin = first_prefix + node.label[len(prefix) :]
                if twin in labels:
                    alias[node.layer] = alias.get(twin, twin)
    return alias
