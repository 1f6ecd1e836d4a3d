"""Repeated blocks: chains of sibling modules of one class that run the same op sequence.

`h.0 … h.23` of a GPT-2 have distinct weights, so their ops are distinct layers; but a reader
sees one block repeated 24 times. A block's *signature* is its class and, for every op inside
it in execution order, the function, the op's module relative to the block, where each of its
inputs came from (another op of the block by position, or from outside), its output shapes and
the shapes of the parameters it read: two ResNet stages of different widths run the same ops
but are not the same block, and a fold must never show a shape one of its blocks lacks. Consecutive
siblings with equal signatures, each fed by the one before (a stack, not parallel branches such
as query/key/value), form a group; the groups drive the `×24` fold in both views.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from lens_widget.log.records import ModuleInfo, OpRecord

Signature = tuple[object, ...]

# Smaller look-alike siblings (a conv-norm-act pair) are clearer unfolded.
MIN_BLOCK_OPS = 5


def ops_by_module(nodes: Sequence[OpRecord]) -> dict[str, list[OpRecord]]:
    """Every module address -> the ops run inside it (nested modules included), in order."""
    found: dict[str, list[OpRecord]] = {}
    for node in nodes:
        if node.kind != "op":
            continue
        seen: set[str] = set()
        for address, _ in node.module_stack:
            if address and address not in seen:  # a module re-entered inside itself counts once
                seen.add(address)
                found.setdefault(address, []).append(node)
    return found


def _relative(address: str, block: str) -> str:
    return address[len(block) :] if address.startswith(block) else address


def block_signature(block: str, class_name: str, ops: Sequence[OpRecord]) -> Signature:
    position = {op.label: i for i, op in enumerate(ops)}
    steps: list[object] = [class_name]
    for op in ops:
        inputs = tuple(position.get(parent, -1) for parent in op.parents)
        params = tuple(use.shape for use in op.params)
        steps.append((op.func, _relative(op.module, block), inputs, op.shape, op.shapes, params))
    return tuple(steps)


def find_repeated_blocks(
    nodes: Sequence[OpRecord], modules: Mapping[str, ModuleInfo]
) -> list[list[str]]:
    """Groups of >= 2 chained, consecutive sibling modules with equal signatures, in call order.

    A group nested inside a later member of an outer group is dropped (the outer fold already
    shows it through the first member); groups inside the first member are kept.
    """
    inside = ops_by_module(nodes)
    children: dict[str | None, list[str]] = {}
    for address, info in modules.items():
        if address and len(inside.get(address, ())) >= MIN_BLOCK_OPS:
            children.setdefault(info.parent, []).append(address)

    groups: list[list[str]] = []
    for siblings in children.values():
        run: list[str] = []
        run_key: Signature | None = None
        for address in siblings:
            info = modules[address]
            key = block_signature(address, info.class_name, inside[address])
            if key == run_key and _feeds(inside[run[-1]], inside[address]):
                run.append(address)
                continue
            if len(run) > 1:
                groups.append(run)
            run, run_key = [address], key
        if len(run) > 1:
            groups.append(run)

    hidden = {member for group in groups for member in group[1:]}
    kept = [g for g in groups if not any(a in hidden for a in _enclosing(g[0]))]
    order = {address: i for i, address in enumerate(modules)}
    return sorted(kept, key=lambda g: order[g[0]])


def _feeds(before: Sequence[OpRecord], after: Sequence[OpRecord]) -> bool:
    produced = {op.label for op in before}
    return any(parent in produced for op in after for parent in op.parents)


def _enclosing(name: str) -> Iterator[str]:
    """Every dotted prefix of `name`, shortest first: "a.b.c" -> "a", "a.b" (the modules
    that hold it). Looking these up in a set replaces a scan over every module."""
    dot = name.find(".")
    while dot != -1:
        yield name[:dot]
        dot = name.find(".", dot + 1)


def folded_layers(nodes: Sequence[OpRecord], groups: Sequence[Sequence[str]]) -> dict[str, str]:
    """Layer -> the layer it folds into: each repeat's ops map onto the first block's ops,
    and its parameters and buffers onto the first block's of the same relative name.

    Signatures are equal within a group, so the k-th op of every member is the same step.
    """
    inside = ops_by_module(nodes)
    alias: dict[str, str] = {}
    for group in groups:
        first = inside[group[0]]
        for member in group[1:]:
            for mine, theirs in zip(inside[member], first, strict=True):
                alias[mine.layer] = alias.get(theirs.layer, theirs.layer)
    labels = {node.label for node in nodes}
    # Each repeat's address -> its first block's address, in group order.
    first_of = {m: group[0] for group in groups for m in group[1:]}
    order = {m: i for i, m in enumerate(first_of)}
    holders: dict[str, list[str]] = {}  # module address -> the repeats it lies in, in order
    for node in nodes:
        if node.kind not in ("param", "buffer"):
            continue
        # The repeats holding this parameter (their addresses are dotted prefixes of its
        # name), in group order: a later one overrides an earlier one.
        owner = node.label.rpartition(".")[0]
        found = holders.get(owner)
        if found is None:
            found = holders[owner] = sorted(
                (a for a in (*_enclosing(owner), owner) if a in first_of), key=order.__getitem__
            )
        for mine in found:
            twin = first_of[mine] + node.label[len(mine) :]
            if twin in labels:
                alias[node.layer] = alias.get(twin, twin)
    return alias
