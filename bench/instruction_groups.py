"""What kind of work a difference of instructions is (`bench.instructions --by-kind`): a
callgrind dump's self cost per C function, summed by the kind of work that function does.

The question it answers: is the trace's cost above a floor one C call that could go, or the
interpreter running more bytecodes (and making the objects they make)? Self costs only, so
every instruction is counted once, under the function that ran it.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

# kind of work -> a pattern of the C functions (as callgrind_annotate names them) doing it;
# the first that matches wins
KINDS: dict[str, re.Pattern[str]] = {
    kind: re.compile(pattern)
    for kind, pattern in {
        "the interpreter's loop": r"ceval\.c:|:_PyEval_EvalFrameDefault",
        "calls in and out (frames, the call protocol)": (
            r"frame\.c|_PyFrame|frameobject|initialize_locals|call\.c"
        ),
        "allocation and freeing": (
            r"obmalloc|malloc|free|tuple_alloc|dealloc|PyTuple_New|GC_New|GC_Link|GC_UnTrack"
            r"|_Py_NewReference|memset|MaybeUntrack|GenericAlloc"
        ),
        "dict and attribute lookups": (
            r"dict|_PyType_Lookup|find_name_in_mro|[Gg]et[Aa]ttr|siphash|Hash"
        ),
        "torch (libtorch, libc10, pybind11)": r"libtorch|libc10|pybind11|torch::|c10::|at::",
        "the cyclic garbage collector": r"gcmodule",
    }.items()
}
OTHER = "the rest"
_ROW = re.compile(r"\s*([\d,]+)\s+\([^)]*\)\s+(.+)$")


def self_costs(dump: Path) -> dict[str, int]:
    """Instructions each C function ran itself in `dump` (callgrind_annotate's list)."""
    text = subprocess.run(
        ["callgrind_annotate", "--inclusive=no", "--threshold=100", "--auto=no", str(dump)],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    costs: dict[str, int] = {}
    for line in text.splitlines():
        row = _ROW.match(line)
        if row and "PROGRAM TOTALS" not in line:
            costs[row[2]] = costs.get(row[2], 0) + int(row[1].replace(",", ""))
    return costs


def kind_of(function: str) -> str:
    return next((kind for kind, pattern in KINDS.items() if pattern.search(function)), OTHER)


def by_kind(costs: dict[str, int]) -> dict[str, int]:
    """`costs` (per C function, as self_costs gives, or a difference of two) summed by kind."""
    sums = dict.fromkeys([*KINDS, OTHER], 0)
    for function, cost in costs.items():
        sums[kind_of(function)] += cost
    return sums


def difference(after: dict[str, int], before: dict[str, int]) -> dict[str, int]:
    """Per C function, `after`'s cost minus `before`'s."""
    return {f: after.get(f, 0) - before.get(f, 0) for f in after.keys() | before.keys()}
