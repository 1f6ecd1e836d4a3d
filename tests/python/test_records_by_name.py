"""Records are built by name: a field added to or moved in log/records.py cannot shift the
value of another. OpRecord takes keywords only; the per-op builder (capture/op_recording.py),
which skips __init__ for speed, sets every field by name."""

import ast
import dataclasses
from pathlib import Path

import pytest
import torch

import lens_widget as lw
from lens_widget.capture import op_details
from lens_widget.capture.op_details import FILLED_FIELDS
from lens_widget.log.records import OpRecord

PACKAGE = Path(lw.__file__).resolve().parent
FIELDS = {f.name for f in dataclasses.fields(OpRecord)}


def _trees() -> list[tuple[Path, ast.Module]]:
    return [(p, ast.parse(p.read_text(), str(p))) for p in sorted(PACKAGE.rglob("*.py"))]


def _is_record_new(call: ast.Call) -> bool:
    """`_new_record(OpRecord)` or `object.__new__(OpRecord)`: a record without __init__."""
    named = isinstance(call.func, ast.Name) and call.func.id == "_new_record"
    dunder = isinstance(call.func, ast.Attribute) and call.func.attr == "__new__"
    first = call.args[0] if call.args else None
    return (named or dunder) and isinstance(first, ast.Name) and first.id == "OpRecord"


def test_an_op_record_cannot_be_built_positionally():
    with pytest.raises(TypeError):
        OpRecord("x", "op", "relu", 0, "x")  # type: ignore[misc]
    record = OpRecord(label="x", kind="op", func="relu", index=0, layer="x")
    assert (record.label, record.func, record.pass_index) == ("x", "relu", 1)


def test_every_op_record_call_in_the_package_names_its_fields():
    calls = []
    for path, tree in _trees():
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "OpRecord"
            ):
                calls.append(node)
                where = f"{path.relative_to(PACKAGE)}:{node.lineno}"
                assert not node.args, f"{where}: OpRecord built with positional arguments"
                assert all(k.arg is not None for k in node.keywords), f"{where}: **kwargs"
    assert calls  # sinks (build_log.py), sources (tensor_book.py), loading (store/load.py)


def test_records_built_without_init_set_every_field_by_name():
    """Where a record is made with object.__new__ (the per-op path), each field of OpRecord
    (those __init__ leaves to their defaults too) is assigned by name in that function, but
    for those fill_details sets on every record it fills (FILLED_FIELDS)."""
    sites = 0
    for path, tree in _trees():
        for func in ast.walk(tree):
            if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            made = [
                n.targets[0].id
                for n in ast.walk(func)
                if isinstance(n, ast.Assign)
                and isinstance(n.value, ast.Call)
                and _is_record_new(n.value)
                and isinstance(n.targets[0], ast.Name)
            ]
            for name in made:
                sites += 1
                assigned = {
                    target.attr
                    for n in ast.walk(func)
                    if isinstance(n, (ast.Assign, ast.AnnAssign))
                    for target in (n.targets if isinstance(n, ast.Assign) else [n.target])
                    if isinstance(target, ast.Attribute)
                    and isinstance(target.value, ast.Name)
                    and target.value.id == name
                }
                where = f"{path.relative_to(PACKAGE)}:{func.name}"
                assert FIELDS - FILLED_FIELDS - assigned == set(), f"{where} leaves fields unset"
                assert assigned - FIELDS == set(), f"{where} sets fields OpRecord lacks"
    assert sites >= 1  # the recorder's per-op builder


def _targets(node: ast.expr) -> list[ast.expr]:
    return [t for e in node.elts for t in _targets(e)] if isinstance(node, ast.Tuple) else [node]


def test_fill_details_sets_every_field_the_builders_leave():
    tree = ast.parse(Path(op_details.__file__).read_text())
    fill = next(
        f for f in ast.walk(tree) if isinstance(f, ast.FunctionDef) and f.name == "fill_details"
    )
    assigned = {
        target.attr
        for n in ast.walk(fill)
        if isinstance(n, ast.Assign)
        for whole in n.targets
        for target in _targets(whole)
        if isinstance(target, ast.Attribute)
        and isinstance(target.value, ast.Name)
        and target.value.id == "node"
    }
    assert assigned >= FILLED_FIELDS
    assert FILLED_FIELDS < FIELDS


def test_a_failed_ops_record_has_no_output_metadata():
    class Fails(torch.nn.Module):
        def forward(self, x):
            return torch.matmul(x.relu(), torch.ones(3, 3))

    with pytest.raises(RuntimeError) as raised:
        lw.trace(Fails(), torch.randn(2, 4))
    log = lw.partial_log(raised.value)
    assert log is not None
    failed = next(n for n in log.ops if n.failed)
    assert (failed.func, failed.shape, failed.dtype, failed.device) == ("matmul", None, None, None)
    assert failed.parents == [n.label for n in log.ops if n.func in ("relu", "ones")]
    assert failed.source.startswith(__file__) and "torch.matmul" in failed.source_code


def test_traced_records_have_every_field():
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU(), torch.nn.Identity())
    for save in (None, "all"):
        log = lw.trace(model, torch.randn(2, 4), save=save)
        for record in log.nodes:
            for name in FIELDS:
                getattr(record, name)  # an unset slot raises AttributeError
        relu = next(n for n in log.ops if n.func == "relu")
        assert (relu.kind, relu.module, relu.shape, relu.n_passes) == ("op", "1", (2, 4), 1)
        assert relu.flops == 2 * 4 and relu.time_ms is None and relu.grads is None
