"""The tables of the contract, declared once per language and checked together: the synced
traits (LensWidget's traitlets, protocol.py WidgetTraits, protocol.ts WidgetTraits), the
request kinds (protocol.py REQUEST_KINDS, protocol.ts REQUEST_KINDS) and the group-key
grammar (widget/group_keys.py and graph/folds.ts + chunks.ts, on one shared fixture)."""

from __future__ import annotations

import json
import re
import typing
from pathlib import Path

import pytest
from test_protocol_contract import contract_differences, parse_ts, protocol_ts_text
from typing_extensions import get_type_hints

from lens_widget.widget import group_keys, metric_values, protocol, requests
from lens_widget.widget.lens_widget import LensWidget

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "js" / "fixtures" / "group_keys.json"


# ---- synced traits ---------------------------------------------------------------------


def synced_traits() -> set[str]:
    """The traits LensWidget itself adds and syncs (not anywidget's or ipywidgets' own)."""
    inherited = set(LensWidget.__mro__[1].class_traits(sync=True))
    return set(LensWidget.class_traits(sync=True)) - inherited


def test_the_widget_syncs_exactly_the_traits_of_the_contract():
    assert synced_traits() == set(get_type_hints(protocol.WidgetTraits)) != set()


def test_widget_traits_are_checked_against_typescript():
    """WidgetTraits is an interface of protocol.ts like any other: a trait on one side only
    fails the contract."""
    text = protocol_ts_text()
    assert "WidgetTraits" in parse_ts(text)[0]
    changed = text.replace(
        "  status: string; // kernel", "  note: string;\n  status: string; // kernel"
    )
    assert changed != text
    assert any("WidgetTraits.note" in d for d in contract_differences(changed))


def test_a_trait_added_in_python_only_fails(monkeypatch):
    class WidgetTraits(typing.TypedDict):
        graph: protocol.GraphPayload
        selected: str
        view: protocol.ViewName
        expanded: list[str]
        status: str
        zoom: float

    monkeypatch.setattr(protocol, "WidgetTraits", WidgetTraits)
    assert "WidgetTraits.zoom: in protocol.py only" in contract_differences(protocol_ts_text())


# ---- request kinds ---------------------------------------------------------------------


def ts_request_kinds(text: str) -> dict[str, tuple[bool, bool]]:
    """protocol.ts REQUEST_KINDS: kind -> (runsModel, onPage)."""
    body = text[text.index("export const REQUEST_KINDS = {") :]
    body = body[: body.index("} as const")]
    rows = re.findall(r"(\w+): \{ runsModel: (true|false), onPage: (true|false) \}", body)
    return {kind: (runs == "true", page == "true") for kind, runs, page in rows}


def ts_request_methods(text: str) -> dict[str, str]:
    """Each TypeScript request interface -> the method it names."""
    return dict(re.findall(r"export interface (\w+Request) \{\s*method: \"(\w+)\"", text))


def test_both_languages_declare_the_same_request_kinds():
    text = protocol_ts_text()
    ts = ts_request_kinds(text)
    assert len(ts) >= 7
    assert ts == {k: (s.runs_model, s.on_page) for k, s in protocol.REQUEST_KINDS.items()}


def test_each_request_kind_names_its_typed_dicts_on_both_sides():
    text = protocol_ts_text()
    interfaces = parse_ts(text)[0]
    methods = ts_request_methods(text)
    union = re.search(r"export type Request =([^;]+);", text)
    assert union is not None
    in_union = set(re.findall(r"\w+", union[1]))
    for kind, spec in protocol.REQUEST_KINDS.items():
        method = get_type_hints(spec.request)["method"]
        assert typing.get_args(method) == (kind,), spec.request
        assert methods.get(spec.request.__name__) == kind
        assert spec.request.__name__ in in_union
        assert spec.result.__name__ in interfaces
    assert set(methods.values()) == set(protocol.REQUEST_KINDS)


def test_the_widget_answers_every_kind_and_runs_the_model_for_the_declared_ones():
    for kind in protocol.REQUEST_KINDS:
        assert callable(getattr(LensWidget, requests.handler_name(kind)))
    assert {"rerun", "ablate"} == requests.RUNS_MODEL
    assert requests.handler_name("firstNonfinite") == "_first_nonfinite"


# ---- overlay names -----------------------------------------------------------------------


def test_the_picker_offers_the_kernels_metrics_and_the_frontends_own_overlays():
    """overlay.ts METRICS asks the kernel for each ("metrics" request): exactly the kernel's
    metrics, the wire's MetricName. "device" is the frontend's own (OverlayName), colored from
    NodeInfo.device in the payload, and never a MetricName on the wire."""
    overlay_ts = (ROOT / "js" / "src" / "render" / "overlay.ts").read_text()
    table = overlay_ts[overlay_ts.index("export const METRICS") :]
    table = table[: table.index("];")]
    picker = re.findall(r'name: "(\w+)"', table)
    assert picker == list(metric_values.METRICS)
    assert set(picker) == set(typing.get_args(protocol.MetricName))
    own = re.search(r"export type OverlayName = MetricName \| ([^;]+);", overlay_ts)
    assert own is not None
    assert re.findall(r'"(\w+)"', own[1]) == list(metric_values.FRONTEND_OVERLAYS) == ["device"]
    assert not set(metric_values.FRONTEND_OVERLAYS) & set(typing.get_args(protocol.MetricName))
    assert "device" in get_type_hints(protocol.NodeInfo)


# ---- the group-key grammar -------------------------------------------------------------


@pytest.fixture(scope="module")
def fixture() -> dict[str, typing.Any]:
    return json.loads(FIXTURE.read_text())


def test_python_builds_every_group_key_of_the_fixture(fixture):
    assert len(fixture["stacks"]) > 1 and len(fixture["chunks"]) > 1
    for case in fixture["stacks"]:
        assert group_keys.stack_address(case["blocks"]) == case["key"]
    for case in fixture["outputs"]:
        assert group_keys.output_kind(case["id"]) == case["kind"]
    for case in fixture["chunks"]:
        assert group_keys.chunk_address(case["box"], case["lo"], case["hi"]) == case["key"]


def test_python_accepts_the_fixture_keys_and_refuses_the_others(fixture):
    modules = set(fixture["modules"])
    outputs = {case["kind"] for case in fixture["outputs"] if case["kind"]}
    keys = [case["key"] for case in fixture["stacks"] + fixture["chunks"]]
    assert [k for k in keys if not group_keys.is_group_address(k, modules, outputs)] == []
    refused = [k for k in fixture["notGroups"] if group_keys.is_group_address(k, modules, outputs)]
    assert refused == []
