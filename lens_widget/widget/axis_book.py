"""The axes of every tensor of a log, joined where ops show two are the same axis, and the
evidence of what each is; names are decided once all the evidence is in.

An axis is (node label, output index, dim). Ops join axes that are one (an elementwise op's
input and output dims, a linear's leading dims, the query axis of q and of the scores) in a
union-find (`Classes`: networkx's UnionFind, which sorts the roots on every union, took 3x
the whole pass on a 10,000-node log). Some ops say what an axis is (`say`: an embedding's
ids are tokens, a conv's dim 1 is channels, SDPA's dim -3 heads), each with a weight; a class of
joined axes is named by the heaviest name said of it. A class nothing names may still be
named from others: an axis that merges several (a flatten's "channel×height×width"), or one
that is like another (a slice of tokens holds tokens). Anything else stays "" ("dim i").
"""

from __future__ import annotations

from collections import defaultdict

Axis = tuple[str, int, int]  # (node label, output index, dim)

# How much each kind of evidence weighs: a weak name (a linear's output is "feature") gives way
# to a stronger one (attention's heads and tokens; a router's experts) said of the same axis.
WEAK, MEDIUM, STRONG = 1, 2, 3
# Between names said with equal weight, the first here wins.
PRIORITY = (
    "expert", "top-k", "head", "token", "batch", "channel", "class", "height", "width",
    "depth", "length", "layer", "hidden", "feature",
)  # fmt: skip
# A merge of these parts reads as the first: heads joined back into the model's features.
MERGED_AS: dict[tuple[str, ...], str] = {("head", "feature"): "feature"}
_MAX_DEPTH = 8  # how far a name is derived through merges and likes


class Classes:
    """A union-find of axes: union by size, paths halved on every find."""

    def __init__(self) -> None:
        self._parent: dict[Axis, Axis] = {}
        self._size: dict[Axis, int] = {}

    def __getitem__(self, axis: Axis) -> Axis:
        parent = self._parent
        if axis not in parent:
            parent[axis] = axis
            self._size[axis] = 1
            return axis
        while parent[axis] != axis:
            parent[axis] = parent[parent[axis]]
            axis = parent[axis]
        return axis

    def union(self, a: Axis, b: Axis) -> None:
        ra, rb = self[a], self[b]
        if ra == rb:
            return
        if self._size[ra] < self._size[rb]:
            ra, rb = rb, ra
        self._parent[rb] = ra
        self._size[ra] += self._size[rb]


class AxisBook:
    def __init__(self) -> None:
        self._classes = Classes()
        self._said: dict[Axis, list[tuple[str, int]]] = defaultdict(list)
        self._parts: dict[Axis, tuple[Axis, ...]] = {}  # a merged axis -> the axes it merges
        self._root_parts: dict[Axis, tuple[Axis, ...]] = {}  # the same, by class (so far)
        self._like: dict[Axis, list[Axis]] = defaultdict(list)  # an axis -> axes it is like
        self._names: dict[Axis, str] | None = None
        self.sizes: dict[Axis, int] = {}  # each axis's size, as the pass creates them

    def same(self, a: Axis, b: Axis) -> None:
        """`a` and `b` are one axis."""
        ra, rb = self._classes[a], self._classes[b]
        if ra == rb:
            return
        parts = self._root_parts.pop(ra, None) or self._root_parts.pop(rb, None)
        self._root_parts.pop(rb, None)
        self._classes.union(a, b)
        if parts is not None:
            self._root_parts[self._classes[a]] = parts

    def say(self, axis: Axis, name: str, weight: int) -> None:
        """Evidence that `axis` is a `name` axis."""
        self._said[axis].append((name, weight))

    def merged(self, axis: Axis, parts: tuple[Axis, ...]) -> None:
        """`axis` holds `parts` flattened into one (a view of (batch, token) as batch×token)."""
        self._parts[axis] = parts
        self._root_parts.setdefault(self._classes[axis], parts)

    def parts_of(self, axis: Axis) -> tuple[Axis, ...] | None:
        """The axes merged into `axis`'s class, if one of its axes is a merge."""
        return self._root_parts.get(self._classes[axis])

    def like(self, axis: Axis, source: Axis) -> None:
        """`axis` is another axis of the same kind as `source` (a slice of it, a resampling)."""
        self._like[axis].append(source)

    def name(self, axis: Axis) -> str:
        if self._names is None:
            self._names = self._resolve()
        root = self._classes[axis]
        return self._names.get(root, "") or self._derived(root, 0)

    def _resolve(self) -> dict[Axis, str]:
        tally: dict[Axis, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        for axis, said in self._said.items():
            for name, weight in said:
                tally[self._classes[axis]][name] += weight
        names: dict[Axis, str] = {}
        for root, weights in tally.items():
            names[root] = max(weights, key=lambda n: (weights[n], -_rank(n)))
        # what merges and likes are, by class
        self._class_parts: dict[Axis, tuple[Axis, ...]] = {}
        for merged, parts in self._parts.items():
            self._class_parts.setdefault(self._classes[merged], parts)
        self._class_like: dict[Axis, list[Axis]] = defaultdict(list)
        for axis, sources in self._like.items():
            self._class_like[self._classes[axis]] += sources
        self._derived_names: dict[Axis, str] = {}
        return names

    def _derived(self, root: Axis, depth: int) -> str:
        """A class no evidence names: the names of what it merges, else of what it is like
        when those agree."""
        if root in self._derived_names:
            return self._derived_names[root]
        if depth > _MAX_DEPTH:
            return ""
        self._derived_names[root] = ""  # a cycle of likes names nothing
        name = ""
        parts = self._class_parts.get(root)
        if parts:
            # a size-1 part (a batch of one) is kept for splitting back, not named
            names = tuple(self._named(p, depth + 1) for p in parts if self.sizes.get(p) != 1)
            if all(names):
                name = MERGED_AS.get(names, "×".join(names))
        else:
            sources = {self._named(s, depth + 1) for s in self._class_like.get(root, ())}
            if len(sources) == 1:
                name = sources.pop()
        self._derived_names[root] = name
        return name

    def _named(self, axis: Axis, depth: int) -> str:
        assert self._names is not None
        root = self._classes[axis]
        return self._names.get(root, "") or self._derived(root, depth)


def _rank(name: str) -> int:
    return PRIORITY.index(name) if name in PRIORITY else len(PRIORITY)
