"""After the pass: name the plain function of the model's code each op ran in (OpRecord.function).

Read once per layer from its call path (call_site.helper_calls), so it costs nothing per op
while the model runs. The outermost function below the module's forward names the group; a
function called from two lines of one forward is two groups (``rotate_half``,
``rotate_half~2``). A group of one op says nothing the op does not, and one holding every op
of its module is the module's own box again (a function traced as a model): those look one
call deeper, or are no group.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from lens_widget.capture.call_site import helper_calls
from lens_widget.capture.links import Layer
from lens_widget.log.records import OpRecord

MIN_GROUP_OPS = 2
_MAX_DEPTH = 8


def name_helper_calls(
    by_key: Mapping[Any, Layer], ops: Sequence[OpRecord], class_of: Mapping[str, str]
) -> None:
    """Set `function` on the ops of every layer in `by_key` ((module path, function name,
    call path) -> Layer) whose call path runs through a helper; `ops`: every op record;
    `class_of`: module address -> class name (a method of the module's own class is named
    without it: ``compute_bias`` in a T5Attention, ``Cache.update`` stays)."""
    chains = [
        (layer, calls)
        for key, layer in by_key.items()
        if layer.first is not None and (calls := helper_calls(key[2]))
    ]
    if not chains:
        return
    # Only the ops of these layers can be in a group; how many ops each module call and
    # the top level hold does not change while groups are named deeper.
    named: list[OpRecord] = []
    for layer, _ in chains:
        named += layer.later
        named.append(layer.first)  # pyright: ignore[reportArgumentType]  # chains have a first
    inside: Counter[tuple[str, int]] = Counter(entry for op in ops for entry in op.module_stack)
    # A model's top level is its root module's box, the whole trace: a method holding only the
    # ops made outside every submodule (a detector's `transform.postprocess(...)` after its
    # heads) is a group of its own. A traced section's top is the ops it made itself.
    model = "" in class_of
    top = len(ops) if model else sum(1 for op in ops if not op.module_stack)
    depth: Counter[str] = Counter()  # module -> how many calls down its groups are named
    for _ in range(_MAX_DEPTH):
        _name_at(chains, depth, class_of)
        whole = _whole_groups(named, inside, top)
        if not whole:
            break
        depth.update(whole)
    for module in _whole_groups(named, inside, top):  # still whole past the depth limit
        for op in named:
            if op.module == module:
                op.function = ""
    _name_by_innermost(chains, depth, class_of)
    sizes = Counter((op.module_stack, op.function) for op in named if op.function)
    for op in named:
        if op.function and sizes[op.module_stack, op.function] < MIN_GROUP_OPS:
            op.function = ""


def _name_at(
    chains: list[tuple[Layer, tuple[tuple[str, int], ...]]],
    depth: Counter[str],
    class_of: Mapping[str, str],
) -> None:
    ordinal: dict[tuple[str, str, int], int] = {}  # (module, helper, calling site) -> k
    taken: Counter[tuple[str, str]] = Counter()
    for layer, calls in chains:
        first = layer.first
        assert first is not None
        module = first.module
        at = depth[module]
        function = ""
        if at < len(calls):
            name, site = calls[at]
            name = _shown_name(name, module, class_of)
            k = ordinal.get((module, name, site))
            if k is None:
                taken[module, name] += 1
                k = ordinal[module, name, site] = taken[module, name]
            function = name if k == 1 else f"{name}~{k}"
        first.function = function
        for node in layer.later:
            node.function = function


def _whole_groups(
    named: Sequence[OpRecord], inside: Mapping[tuple[str, int], int], top: int
) -> set[str]:
    """Modules one of whose passes ran every op inside it, nested modules' included, inside one
    group: the group is that module's own box again. At a traced section's top (no module) the
    ops it made itself: a `step()` calling the model and the loss is the section itself.
    `named`: the ops that may have a function; `inside`: the ops per module call (its stack
    entry); `top`: the ops outside every module call."""
    grouped = Counter((op.module_stack, op.function) for op in named if op.function)
    return {
        stack[-1][0] if stack else ""
        for (stack, _), n in grouped.items()
        if n == (inside[stack[-1]] if stack else top)
    }


def _shown_name(name: str, module: str, class_of: Mapping[str, str]) -> str:
    """A helper's name as the group shows it: a method of the module's own class by its name
    (``compute_bias``), a method of one of its submodules by the attribute it is called
    through (``transform.postprocess``: torchvision calls it so, not through `__call__`), any
    other by its qualified name (``Cache.update``)."""
    cls, dot, method = name.rpartition(".")
    if not dot:
        return name
    if class_of.get(module) == cls:
        return method
    prefix = f"{module}." if module else ""
    children = [
        a[len(prefix) :]
        for a, c in class_of.items()
        if c == cls and a.startswith(prefix) and a and "." not in a[len(prefix) :]
    ]
    return f"{children[0]}.{method}" if len(children) == 1 else name


def _name_by_innermost(
    chains: list[tuple[Layer, tuple[tuple[str, int], ...]]],
    depth: Counter[str],
    class_of: Mapping[str, str],
) -> None:
    """Names each group by the innermost function every one of its ops ran in: timm's
    `forward_features` calls `_pos_embed`, which made all of the group's ops; the box is
    `_pos_embed`, not its caller. Kept where another group of the module has that name."""
    members: dict[tuple[str, str], list[tuple[Layer, tuple[tuple[str, int], ...]]]] = {}
    for layer, calls in chains:
        first = layer.first
        assert first is not None
        if first.function:
            members.setdefault((first.module, first.function), []).append((layer, calls))
    taken = set(members)
    for (module, _), group in members.items():
        at = depth[module]
        common = group[0][1][at:]
        for _, calls in group[1:]:
            mine = calls[at:]
            n = 0
            while n < min(len(common), len(mine)) and common[n] == mine[n]:
                n += 1
            common = common[:n]
        if len(common) < 2:
            continue
        name = _shown_name(common[-1][0], module, class_of)
        if (module, name) in taken:
            continue
        taken.add((module, name))
        for layer, _ in group:
            for op in (layer.first, *layer.later):
                if op is not None:
                    op.function = name
