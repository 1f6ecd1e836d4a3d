"""Fixtures of lens_widget/widget/wire.py's bytes for the TypeScript decoder's tests (vitest).

    PYTHONPATH=$PWD .venv/bin/python tests/python/wire_fixtures.py   # rewrites tests/js/fixtures/

`EDGE_VALUE` holds what a GraphPayload rarely has but the codec must carry (tests/js/wire.test.ts
spells the same value in TypeScript); the payload fixture is a small synthetic GraphPayload
with its JSON beside it. tests/python/test_widget_wire.py checks the files still decode to these.
"""

from __future__ import annotations

import json
import pathlib
from typing import Any

from lens_widget.widget import wire
from model_zoo.synthetic_payload import make_payload

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "js" / "fixtures"
EDGE_BIN = FIXTURES / "wire_edge.bin"
PAYLOAD_BIN = FIXTURES / "wire_payload.bin"
PAYLOAD_JSON = FIXTURES / "wire_payload.json"

EDGE_VALUE: dict[str, Any] = {
    "rows": [
        {"id": "a", "n": 1, "f": 0.5, "opt": None, "only": "first", "pair": ["w", [3, 4]]},
        {
            "id": "b",
            "n": -70000,
            "f": float("inf"),
            "opt": "x",
            "nested": {"deep": [True]},
            "pair": ["b", []],
        },
        {
            "id": "é\u2603",
            "n": 2**40,
            "f": float("-inf"),
            "opt": None,
            "__proto__": "plain key",
            "pair": ["", [1]],
        },
    ],
    "nan": float("nan"),
    "surrogate": "\ud800",
    "mixed": [1, "a", None, [2], {"k": 1}],
    "big": [2**60, 1],
    "bools": [True, False] * 10,
    "ints": list(range(-5, 20)),
    "floats": [0.1 * i for i in range(12)],
    "ragged": [[1, 2], [], [3]],
    "empty": {"list": [], "dict": {}},
    "none": None,
}


def payload() -> dict[str, Any]:
    return make_payload(n_layers=1)


def write() -> None:
    FIXTURES.mkdir(parents=True, exist_ok=True)
    EDGE_BIN.write_bytes(wire.encode(EDGE_VALUE))
    p = payload()
    PAYLOAD_BIN.write_bytes(wire.encode(p))
    PAYLOAD_JSON.write_text(json.dumps(p, indent=None) + "\n")


if __name__ == "__main__":
    write()
    print(f"wrote {EDGE_BIN.name}, {PAYLOAD_BIN.name}, {PAYLOAD_JSON.name} in {FIXTURES}")
