"""The figures print(log) writes (human_count, human_bytes) read back as the value they stand
for, within the last digit shown, at every magnitude; units are chosen after rounding."""

from __future__ import annotations

import math
import re

import pytest

from lens_widget.log.summary import human_bytes, human_count

SI = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
BINARY = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40, "PiB": 2**50}
VALUES = [
    sign * m * 10.0**e
    for e in range(-9, 16)
    for m in (1, 1.0004, 1.5, 2.345678, 5, 9.99, 9.995, 9.9996)
    for sign in (1, -1)
]


def read_back(text: str, units: dict[str, float]) -> tuple[float, float]:
    """The value a printed figure says, and half a step of its last digit."""
    m = re.fullmatch(r"(-?)(\d+)(?:\.(\d+))?(?:e([+-]\d+))? ?([A-Za-z]*)", text)
    assert m and m[5] in units, text
    decimals = len(m[3] or "")
    scale = 10.0 ** int(m[4] or 0) * units[m[5]]
    return float(f"{m[1]}{m[2]}.{m[3] or '0'}") * scale, 0.5 * 10.0**-decimals * scale


@pytest.mark.parametrize("v", VALUES)
def test_a_count_reads_back_within_the_digit_shown(v):
    value, half = read_back(human_count(v), SI)
    assert abs(value - v) <= half + 1e-9 * abs(v), (v, human_count(v))
    if abs(v) >= 1000:
        assert abs(value - v) / abs(v) <= 0.05 + 1e-12, (v, human_count(v))


@pytest.mark.parametrize("v", [round(x) for x in VALUES if abs(x) >= 1])
def test_a_size_reads_back_within_the_digit_shown(v):
    value, half = read_back(human_bytes(v), BINARY)
    assert abs(value - v) <= half + 1e-9 * abs(v), (v, human_bytes(v))
    assert abs(value - v) / abs(v) <= 0.05 + 1e-12, (v, human_bytes(v))


def test_the_unit_is_chosen_after_rounding():
    assert human_count(999_960) == "1.0M"  # was "1000.0K"
    assert human_count(1e15) == "1.0P"  # was "1000.0T"
    assert human_count(139_840) == "139.8K"
    assert human_bytes(1_048_575) == "1.0 MiB"  # was "1024.0 KB"
    assert human_bytes(1023) == "1023 B"


def test_zero_nan_and_infinity():
    assert human_count(0) == "0" and human_bytes(0) == "0 B"
    assert human_count(math.nan) == "nan" and human_count(-math.inf) == "-inf"
    assert human_bytes(math.inf) == "inf B"
