"""The whole statement an op was called from: a call that spans several lines
(``attn_output = torch.nn.functional.scaled_dot_product_attention(`` ...) is recorded by its
first line only; the inspector shows all of it.
"""

from __future__ import annotations

import ast
import functools
import linecache
import textwrap

# A statement longer than this many lines is shown up to it (with a note).
MAX_LINES = 40


def statement_at(source: str, fallback: str) -> str:
    """The statement at `source` ("path/file.py:123"), dedented; `fallback` (the recorded
    line) when the file cannot be read or parsed any more."""
    path, _, line_text = source.rpartition(":")
    if not path or not line_text.isdigit():
        return fallback
    line = int(line_text)
    span = _statement_span(path, line)
    if span is None:
        return fallback
    first, last = span
    lines = linecache.getlines(path)
    cut = last - first + 1 > MAX_LINES
    text = "".join(lines[first - 1 : min(last, first + MAX_LINES - 1)])
    text = textwrap.dedent(text).rstrip()
    return text + "\n…" if cut else text or fallback


def _statement_span(path: str, line: int) -> tuple[int, int] | None:
    """(first, last) line of the innermost statement that starts at or spans `line`; of a
    compound statement (if, for, with) only its header."""
    tree = _parsed(path, len(linecache.getlines(path)))
    if tree is None:
        return None
    spanning = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.stmt) and node.lineno <= line <= (node.end_lineno or node.lineno)
    ]
    if not spanning:
        return None
    # the innermost: the shortest span (a function's body spans its statements)
    best = min(spanning, key=lambda n: ((n.end_lineno or n.lineno) - n.lineno, -n.lineno))
    end = best.end_lineno or best.lineno
    body = getattr(best, "body", None)
    if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
        end = max(best.lineno, body[0].lineno - 1)  # the header, not the block
    return best.lineno, end


@functools.lru_cache(maxsize=64)
def _parsed(path: str, n_lines: int) -> ast.Module | None:
    """The file's syntax tree (`n_lines` in the key: an edited file is parsed again)."""
    text = "".join(linecache.getlines(path))
    if not text:
        return None
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError):
        return None
