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
    return _span_at(path, len(linecache.getlines(path)), line)


@functools.lru_cache(maxsize=4096)
def _span_at(path: str, n_lines: int, line: int) -> tuple[int, int] | None:
    """`_statement_span`, once per call site (the ops of 12 blocks share a few dozen lines)."""
    spanning = [span for span in _spans(path, n_lines) if span[0] <= line <= span[1]]
    if not spanning:
        return None
    # the innermost: the shortest span (a function's body spans its statements)
    first, last, header_end = min(spanning, key=lambda s: (s[1] - s[0], -s[0]))
    return first, header_end


@functools.lru_cache(maxsize=64)
def _spans(path: str, n_lines: int) -> list[tuple[int, int, int]]:
    """(first line, last line, last line of its header) of every statement of the file
    (`n_lines` in the key: an edited file is parsed again); [] when it does not parse."""
    text = "".join(linecache.getlines(path))
    try:
        tree = ast.parse(text) if text else None
    except (SyntaxError, ValueError):
        tree = None
    spans = []
    for node in ast.walk(tree) if tree is not None else ():
        if not isinstance(node, ast.stmt):
            continue
        end = node.end_lineno or node.lineno
        body = getattr(node, "body", None)
        header = end
        if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
            header = max(node.lineno, body[0].lineno - 1)  # the header, not the block
        spans.append((node.lineno, end, header))
    return spans
