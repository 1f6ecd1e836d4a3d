"""One contract, checked from both sides: protocol.ts (with the protocol*.ts files it re-exports)
against lens_widget/widget/protocol.py (with the monitor's and the ranks' parts it re-exports).

A small parser reads the TypeScript interfaces (keys, `?` optionality, `| null`, nested
object types) and the string-literal type aliases; each must match the TypedDict or Literal
of the same name. A key added, dropped, made optional or nullable on one side only fails.
"""

import re
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from typing_extensions import get_type_hints

from lens_widget.widget import protocol

ROOT = Path(__file__).resolve().parents[2]
# protocol.py and the modules it re-exports the contract's types from, by part
PROTOCOL_PARTS = {
    protocol.__name__,
    "lens_widget.widget.graph_protocol",
    "lens_widget.widget.request_protocol",
    "lens_widget.widget.monitor.monitor_protocol",
    "lens_widget.widget.ranks.rank_protocol",
}


def protocol_ts() -> Path:
    found = sorted((ROOT / "js" / "src").glob("**/protocol.ts"))
    assert len(found) == 1, f"expected one protocol.ts under js/src, found {found}"
    return found[0]


def protocol_ts_files(main: Path | None = None) -> list[Path]:
    """protocol.ts and the files it re-exports (`export type * from "./protocolRanks"`): the
    whole TypeScript contract. Every protocol*.ts beside it must be one of them."""
    main = main or protocol_ts()
    parts = re.findall(r'^export (?:type )?\* from "\./(\w+)";', main.read_text(), re.M)
    files = [main] + [main.with_name(f"{part}.ts") for part in parts]
    beside = sorted(main.parent.glob("protocol*.ts"))
    assert sorted(files) == beside, f"protocol.ts re-exports {parts}; beside it: {beside}"
    return files


def protocol_ts_text() -> str:
    """The whole TypeScript contract as one text, protocol.ts first."""
    return "\n".join(path.read_text() for path in protocol_ts_files())


# ---- TypeScript side ------------------------------------------------------------------


@dataclass
class TsField:
    optional: bool
    nullable: bool
    objects: list["TsObject | str"]  # inline objects, or names of interfaces, in order


@dataclass
class TsObject:
    fields: dict[str, TsField] = field(default_factory=dict)


def strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def split_top(text: str, separators: str) -> list[str]:
    """Split at separators outside brackets of any kind."""
    parts, depth, current = [], 0, []
    for ch in text:
        if ch in "{[(<":
            depth += 1
        elif ch in "}])>":
            depth -= 1
        if depth == 0 and ch in separators:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    parts.append("".join(current))
    return [p.strip() for p in parts if p.strip()]


def closing(text: str, start: int) -> int:
    """Index of the brace closing the one at `start`."""
    depth = 0
    for i in range(start, len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return i
    raise ValueError("unbalanced braces in protocol.ts")


def parse_type(text: str) -> tuple[bool, list["TsObject | str"]]:
    """(includes null, the object types it mentions) of a TypeScript type expression."""
    nullable, objects = False, []
    for part in split_top(text, "|"):
        part = re.sub(r"(\[\])+$", "", part.strip())  # T[] -> T
        if part == "null":
            nullable = True
        elif part.startswith("{"):
            objects.append(parse_object(part[1 : closing(part, 0)]))
        elif re.fullmatch(r"[A-Z]\w*", part):
            objects.append(part)
    return nullable, objects


MEMBER = re.compile(r"(?P<key>\w+)(?P<optional>\?)?\s*:\s*(?P<type>.+)", re.S)


def parse_object(body: str) -> TsObject:
    obj = TsObject()
    for member in split_top(body, ";,\n"):
        match = MEMBER.fullmatch(member)
        assert match, f"protocol.ts: cannot read the member {member!r}"
        nullable, objects = parse_type(match["type"])
        obj.fields[match["key"]] = TsField(bool(match["optional"]), nullable, objects)
    return obj


def parse_ts(text: str) -> tuple[dict[str, TsObject], dict[str, set[str]]]:
    """(interfaces by name, string-literal union aliases by name)."""
    text = strip_comments(text)
    interfaces = {}
    for match in re.finditer(r"export\s+interface\s+(\w+)\s*\{", text):
        start = match.end() - 1
        interfaces[match[1]] = parse_object(text[start + 1 : closing(text, start)])
    literals = {}
    for match in re.finditer(r"export\s+type\s+(\w+)\s*=\s*([^;]+);", text):
        parts = split_top(match[2], "|")
        if all(re.fullmatch(r'"[^"]*"', p) for p in parts):
            literals[match[1]] = {p.strip('"') for p in parts}
    return interfaces, literals


# ---- Python side ----------------------------------------------------------------------


def is_typed_dict(value: object) -> bool:
    return isinstance(value, type) and issubclass(value, dict) and hasattr(value, "__total__")


def typed_dicts_in(annotation: object) -> list[type]:
    """The TypedDicts an annotation mentions (through unions, lists, ...), in order."""
    if is_typed_dict(annotation):
        return [annotation]
    return [td for arg in typing.get_args(annotation) for td in typed_dicts_in(arg)]


def is_nullable(annotation: object) -> bool:
    return typing.get_origin(annotation) in (typing.Union, types.UnionType) and type(
        None
    ) in typing.get_args(annotation)


# ---- the comparison -------------------------------------------------------------------


def differences(ts: TsObject, py: type, where: str, interfaces: dict[str, TsObject]) -> list[str]:
    hints = get_type_hints(py)
    found = []
    for key in sorted(set(ts.fields) - set(hints)):
        found.append(f"{where}.{key}: in protocol.ts only")
    for key in sorted(set(hints) - set(ts.fields)):
        found.append(f"{where}.{key}: in protocol.py only")
    for key in sorted(set(ts.fields) & set(hints)):
        ts_field, annotation = ts.fields[key], hints[key]
        if ts_field.optional != (key in py.__optional_keys__):
            found.append(f"{where}.{key}: optional on one side only")
        if ts_field.nullable != is_nullable(annotation):
            found.append(f"{where}.{key}: nullable on one side only")
        py_objects = typed_dicts_in(annotation)
        # names of interfaces, or inline objects (other names are aliases such as NodeKind)
        ts_objects = [o for o in ts_field.objects if not isinstance(o, str) or o in interfaces]
        if len(py_objects) != len(ts_objects):
            found.append(f"{where}.{key}: object types differ")
            continue
        for ts_object, py_object in zip(ts_objects, py_objects, strict=True):
            if isinstance(ts_object, str):  # a named interface: the names must agree too
                if ts_object != py_object.__name__:
                    found.append(f"{where}.{key}: {ts_object} vs {py_object.__name__}")
                continue
            found += differences(ts_object, py_object, f"{where}.{key}", interfaces)
    return found


def reachable(td: type) -> list[type]:
    """`td` and every TypedDict its annotations mention, recursively."""
    found = [td]
    for annotation in get_type_hints(td).values():
        for inner in typed_dicts_in(annotation):
            found += reachable(inner)
    return found


def contract_differences(ts_text: str) -> list[str]:
    interfaces, literals = parse_ts(ts_text)
    found, used = [], set()
    for name, ts in interfaces.items():
        py = getattr(protocol, name, None)
        if not is_typed_dict(py):
            found.append(f"{name}: no TypedDict of that name in protocol.py")
            continue
        found += differences(ts, py, name, interfaces)
        used.update(td.__name__ for td in reachable(py))
    for name, value in vars(protocol).items():
        # protocol.py's own and those of its parts (graph_protocol.py, ...), re-exported
        if is_typed_dict(value) and value.__module__ in PROTOCOL_PARTS and name not in used:
            found.append(f"{name}: a TypedDict in protocol.py that no protocol.ts type uses")
    for name, values in literals.items():
        py = getattr(protocol, name, None)
        if py is None or set(typing.get_args(py)) != values:
            found.append(f"{name}: literal values differ ({values} vs {py})")
    return found


def test_protocol_ts_and_protocol_py_agree():
    text = protocol_ts_text()
    interfaces, literals = parse_ts(text)
    # the parser really read the file
    assert {"GraphPayload", "NodeInfo", "ActivationResult", "ResponseMessage"} <= set(interfaces)
    assert interfaces["ActivationRequest"].fields["params"].objects  # an inline object
    assert {"NodeKind", "PlotKind", "ViewName"} <= set(literals)
    assert contract_differences(text) == []


def _edit(text: str, interface: str, old: str, new: str) -> str:
    start = text.index(f"export interface {interface} ")
    at = text.index(old, start)
    return text[:at] + new + text[at + len(old) :]


@pytest.mark.parametrize(
    ("interface", "old", "new", "expected"),
    [
        (
            "NodeInfo",
            "  kind: NodeKind;",
            "  kind: NodeKind;\n  extra: number;",
            "in protocol.ts only",
        ),
        ("NodeInfo", "  kind: NodeKind;", "", "NodeInfo.kind: in protocol.py only"),
        ("EdgeInfo", "shape: string;", "shape?: string;", "optional on one side"),
        ("ModuleInfo", "parent: string | null;", "parent: string;", "nullable on one side"),
        ("ActivationResult", "edges: number[];", "edges: number[]; bins: number;", "hist.bins"),
        ("ActivationRequest", "output?: number;", "output: number;", "params.output: optional"),
        ("ResponseMessage", "error?: string;", "", "error: in protocol.py only"),
        # the interfaces of the files protocol.ts re-exports are read too
        ("RanksInfo", "worldSize: number | null;", "worldSize: number;", "nullable on one side"),
        ("MonitorStepResult", "  opsKey: number;", "", "opsKey: in protocol.py only"),
        ("OpDetailsResult", "paramCount: number;", "paramCount?: number;", "optional on one"),
    ],
)
def test_a_key_changed_on_one_side_fails(interface, old, new, expected):
    changed = _edit(protocol_ts_text(), interface, old, new)
    found = contract_differences(changed)
    assert any(expected in d for d in found), found


def test_every_protocol_file_is_re_exported(tmp_path):
    """A protocol*.ts that protocol.ts does not re-export would escape the check: refused."""
    (tmp_path / "protocol.ts").write_text('export type * from "./protocolA";\n')
    (tmp_path / "protocolA.ts").write_text("")
    assert protocol_ts_files(tmp_path / "protocol.ts") == [
        tmp_path / "protocol.ts",
        tmp_path / "protocolA.ts",
    ]
    (tmp_path / "protocolB.ts").write_text("")
    with pytest.raises(AssertionError, match="protocolB"):
        protocol_ts_files(tmp_path / "protocol.ts")


def test_a_typed_dict_key_added_on_the_python_side_fails(monkeypatch):
    class EdgeInfo(typing.TypedDict):
        source: str
        target: str
        shape: str
        passes: list[int]
        weight: float

    monkeypatch.setattr(protocol, "EdgeInfo", EdgeInfo)
    found = contract_differences(protocol_ts_text())
    assert "EdgeInfo.weight: in protocol.py only" in found


def test_the_protocol_parts_are_every_protocol_module():
    # a new part left out of PROTOCOL_PARTS would escape the check of unused TypedDicts
    package = ROOT / "lens_widget" / "widget"
    found = {
        ".".join(p.relative_to(ROOT).with_suffix("").parts) for p in package.rglob("*protocol.py")
    }
    assert found == PROTOCOL_PARTS


def test_a_typed_dict_of_a_part_that_protocol_ts_never_uses_fails(monkeypatch):
    class EdgeWeight(typing.TypedDict):
        weight: float

    EdgeWeight.__module__ = "lens_widget.widget.graph_protocol"
    monkeypatch.setattr(protocol, "EdgeWeight", EdgeWeight, raising=False)
    found = contract_differences(protocol_ts_text())
    assert "EdgeWeight: a TypedDict in protocol.py that no protocol.ts type uses" in found
