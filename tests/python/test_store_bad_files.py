"""Untrusted saved logs: every truncated, tampered, foreign or newer file is one clear
LogFormatError, and nothing in a file is imported or run."""

from __future__ import annotations

import ast
import json
import struct
import sys
from pathlib import Path

import pytest
import torch
from saved_files import load_fails, node, tampered
from torch import nn

import lens_widget as lw
from lens_widget import LogFormatError
from lens_widget.store.format import FORMAT_VERSION
from lens_widget.store.torch_functions import resolve_function

STORE = Path(lw.__file__).parent / "store"


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 3)
        self.drop = nn.Dropout(0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.drop(self.fc(x))) * 2


@pytest.fixture
def saved(tmp_path) -> Path:
    torch.manual_seed(0)
    log = lw.trace(Net().train(), torch.randn(2, 4))
    log.save(tmp_path / "log")
    return tmp_path / "log"


# ---- the JSON file ---------------------------------------------------------------------


def test_truncated_json(saved):
    text = (saved / "log.json").read_bytes()
    (saved / "log.json").write_bytes(text[: len(text) // 2])
    load_fails(saved, r"^log.json: not valid JSON .*truncated or damaged")


def test_newer_version(saved):
    newer = FORMAT_VERSION + 1
    tampered(saved, lambda d: d.update(version=newer))
    load_fails(
        saved, f"format version {newer}, newer than the {FORMAT_VERSION} this lens_widget reads"
    )


@pytest.mark.parametrize("version", ["1", 0, None, 1.0, True])
def test_wrong_version(saved, version):
    tampered(saved, lambda d: d.update(version=version))
    load_fails(saved, "version must be a positive integer")


@pytest.mark.parametrize(
    "content", [b'{"hello": "world"}', b"[1, 2]", b"\x89PNG\r\n\x1a\n\x00\x00", b""]
)
def test_foreign_json_file(saved, content):
    (saved / "log.json").write_bytes(content)
    load_fails(saved, r"^log.json: (not a lens_widget log|not valid JSON)")


def test_non_finite_numbers_are_not_json(saved):
    text = (saved / "log.json").read_text()
    (saved / "log.json").write_text(text.replace('"elapsed":', '"elapsed":NaN,"x":', 1))
    load_fails(saved, "not valid JSON")


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (lambda d: d["nodes"][1].update(pass_index=0), r"nodes\[1\]\.pass_index: 0 is less than 1"),
        (lambda d: d["nodes"][2].update(index="2"), r"nodes\[2\]\.index: '2' is not an integer"),
        (lambda d: d["nodes"][0].update(kind="evil"), r"nodes\[0\]\.kind: 'evil' is not one of"),
        (lambda d: d["nodes"][0].update(extra=1), r"nodes\[0\]: unknown field\(s\) 'extra'"),
        (lambda d: d["nodes"][0].pop("parents"), r"nodes\[0\]: missing field\(s\) parents"),
        (lambda d: d["tensors"][0].update(shape=[-1]), r"tensors\[0\]\.shape\[0\]: -1 is less"),
        (lambda d: d.update(nodes={}), r"log\.json\.nodes: \{\} is not an array"),
        # any class name is only a name (never looked up): control characters are refused
        (lambda d: d["log"].update(error={"type": "Bad\nName", "message": ""}), "does not match"),
        (lambda d: d["log"].update(error={"type": "", "message": ""}), "does not match"),
        (lambda d: d["storages"][0].update(name="../../x"), r"storages\[0\]\.name"),
        # JSON integers are unbounded: 10**400 overflowed later, converted to a float
        (lambda d: d["nodes"][3].update(nbytes=10**400), r"nodes\[3\]\.nbytes: 1000.* int64"),
        (lambda d: d["nodes"][3].update(nbytes=2**63), r"larger than any int64"),
    ],
)
def test_schema_checks_name_the_field(saved, change, match):
    tampered(saved, change)
    load_fails(saved, match)


# ---- references between records ---------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (
            lambda d: node(d, "relu_1_3")["parents"].append("ghost"),
            "parents: 'ghost' is not a node",
        ),
        (lambda d: node(d, "relu_1_3")["children"].append("ghost"), "children: 'ghost' is not a"),
        (
            lambda d: node(d, "relu_1_3")["parent_args"][0].update(parent="ghost"),
            "parent_args: 'ghost' is not a node",
        ),
        (
            lambda d: node(d, "relu_1_3")["parent_args"][0].update(output_index=5),
            "parent_args: output 5 of 'dropout_1_2', which has 1",
        ),
        (lambda d: node(d, "linear_1_1").update(module="ghost"), "module 'ghost' is not a module"),
        (
            lambda d: node(d, "linear_1_1")["module_stack"].append(["ghost", 1]),
            "module_stack: 'ghost' is not a module",
        ),
        (lambda d: d["modules"][1].update(parent="ghost"), r"modules\[1\]: parent 'ghost'"),
        (lambda d: d["modules"][1]["outputs"][0][1].append("ghost"), "outputs: 'ghost' is not"),
        (lambda d: d["modules"].append(d["modules"][1]), "address 'fc' appears twice"),
        (lambda d: d["modules"][1].update(parent="fc"), r"modules\[1\]: parent of 'fc' loops"),
        (lambda d: d["modules"][0].update(parent="fc"), r"modules\[0\]: parent of '' loops"),
        (
            lambda d: d["modules"][1]["outputs"].append(d["modules"][1]["outputs"][0]),
            "outputs: pass 1 twice",
        ),
        (lambda d: d["log"].update(failed_op="ghost"), "failed_op 'ghost' is not a node"),
        (lambda d: node(d, "relu_1_3").update(label="mul_1_4"), "label appears twice"),
        (lambda d: d["nodes"][1].update(index=7), "index is 7, but the node is at position 1"),
        (lambda d: node(d, "relu_1_3").update(activations=[999]), "names tensor 999; the log has"),
        (
            lambda d: node(d, "relu_1_3")["replay"]["args"]["$tuple"].append({"$slot": 4}),
            "replay names tensor argument 4; the op has 1",
        ),
        (
            lambda d: node(d, "relu_1_3")["replay"]["literals"].update({"3": 0}),
            "replay.literals: slot 3 of 1",
        ),
        (
            lambda d: node(d, "dropout_1_2")["replay"].update(rng_state=0),
            "replay.rng_state is torch.float32 .* not a CPU RNG state",
        ),
        (lambda d: node(d, "relu_1_3")["shapes"].append([1]), "saved tensors have shapes other"),
        (lambda d: node(d, "relu_1_3").update(dtype="int8"), "saved tensor is torch.float32"),
        (lambda d: d["tensors"][0].update(offset=10**9), r"tensors\[0\]: reaches byte"),
        (lambda d: d["tensors"][0].update(storage=99), r"tensors\[0\]: names storage 99"),
        (lambda d: d["tensors"][0].update(dtype="evil"), "unknown dtype 'evil'"),
        (lambda d: d["tensors"][0].update(stride=[1, 1, 1]), "shape .* and stride .* differ"),
        (
            lambda d: node(d, "relu_1_3")["replay"]["args"]["$tuple"].append({"$eval": "1"}),
            r"replay\.args: unknown value tag '\$eval'",
        ),
        (
            lambda d: node(d, "relu_1_3")["replay"]["args"]["$tuple"].append({"$dtype": "os"}),
            "unknown dtype 'os'",
        ),
        (lambda d: node(d, "relu_1_3")["replay"].update(args=[]), r"replay.args must be a \$tuple"),
        (
            lambda d: node(d, "input.0").update(replay=node(d, "relu_1_3")["replay"]),
            "has no replay",
        ),
        (lambda d: d["log"].update(output={"$tensor": 77}), "names tensor 77"),
        (
            lambda d: node(d, "relu_1_3")["replay"]["args"]["$tuple"].append({"a": 1, "b": 2}),
            "a tagged value must be an object with one key",
        ),
        (
            lambda d: node(d, "relu_1_3")["replay"]["args"]["$tuple"].append({"$slot": -1}),
            r"bad \$slot value -1: expected a non-negative integer",
        ),
    ],
)
def test_every_reference_is_checked(saved, change, match):
    tampered(saved, change)
    load_fails(saved, match)


@pytest.mark.parametrize(("depth", "match"), [(100_000, "not valid JSON"), (300, "nested deeper")])
def test_deep_nesting_is_an_error_not_a_crash(saved, depth, match):
    text = (saved / "log.json").read_text()
    nested = "[" * depth + "]" * depth
    (saved / "log.json").write_text(text.replace('"kwargs":{}', f'"kwargs":{{"a":{nested}}}', 1))
    load_fails(saved, match)


# ---- the safetensors file ----------------------------------------------------------------


def split_safetensors(path: Path) -> tuple[dict, bytes]:
    raw = path.read_bytes()
    n = struct.unpack("<Q", raw[:8])[0]
    return json.loads(raw[8 : 8 + n]), raw[8 + n :]


def join_safetensors(path: Path, header: dict, data: bytes) -> None:
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text + data)


def test_missing_tensor_file(saved):
    (saved / "tensors.safetensors").unlink()
    load_fails(saved, "tensors.safetensors: missing")


def test_truncated_tensor_file(saved):
    raw = (saved / "tensors.safetensors").read_bytes()
    (saved / "tensors.safetensors").write_bytes(raw[:-20])
    load_fails(saved, "tensors.safetensors: damaged or not a safetensors file")


def test_header_lying_about_offsets(saved):
    path = saved / "tensors.safetensors"
    header, data = split_safetensors(path)
    header["s0"]["data_offsets"][1] += 4096  # says the tensor runs past the end of the file
    join_safetensors(path, header, data)
    load_fails(saved, "tensors.safetensors: damaged or not a safetensors file")


def test_header_lying_about_its_length(saved):
    path = saved / "tensors.safetensors"
    raw = path.read_bytes()
    path.write_bytes(struct.pack("<Q", 10**12) + raw[8:])
    load_fails(saved, "tensors.safetensors: damaged or not a safetensors file")


def test_header_lying_about_a_shape(saved):
    path = saved / "tensors.safetensors"
    header, data = split_safetensors(path)
    name = next(k for k in header if k != "__metadata__")
    header[name]["shape"] = [10**6]  # more elements than its byte range holds
    join_safetensors(path, header, data)
    load_fails(saved, "tensors.safetensors: damaged or not a safetensors file")


def test_header_consistent_but_not_what_log_json_says(saved):
    path = saved / "tensors.safetensors"
    header, data = split_safetensors(path)
    name = next(k for k in header if k != "__metadata__" and header[k]["dtype"] == "F32")
    header[name]["dtype"] = "I32"  # same size, other type
    join_safetensors(path, header, data)
    load_fails(saved, f"tensors.safetensors: {name} is I32 .* log.json says torch.float32")


def test_tensor_file_of_another_save(saved, tmp_path):
    lw.trace(Net(), torch.randn(2, 4)).save(tmp_path / "other")
    (saved / "tensors.safetensors").write_bytes(
        (tmp_path / "other" / "tensors.safetensors").read_bytes()
    )
    load_fails(saved, "belongs to a different save than log.json")


def test_foreign_safetensors_file(saved):
    from safetensors.torch import save_file

    save_file({"s0": torch.zeros(3)}, str(saved / "tensors.safetensors"))
    load_fails(saved, "not the tensor file of a lens_widget log")


def test_not_a_directory(tmp_path):
    (tmp_path / "log.json").write_text("{}")
    with pytest.raises(LogFormatError, match="a saved log is a directory"):
        lw.load(tmp_path / "log.json")
    with pytest.raises(FileNotFoundError):
        lw.load(tmp_path / "nowhere")
    with pytest.raises(LogFormatError, match="log.json: missing"):
        lw.load(tmp_path.parent)


# ---- nothing from a file is imported or run ------------------------------------------------


@pytest.mark.parametrize(
    "func",
    [
        "os.system", "builtins.eval", "subprocess.Popen", "antigravity.fly", "torch.load",
        "torch.from_file", "torch.hub.load", "torch.serialization.load", "torch.Tensor.x.y",
    ],
)  # fmt: skip
def test_function_outside_torch_is_skipped_never_imported(saved, func):
    def name_it(document):
        replay = node(document, "relu_1_3")["replay"]
        replay["func"] = func
        replay["args"] = {"$tuple": [{"$slot": 0}, "echo pwned > /tmp/lens_pwned"]}

    tampered(saved, name_it)
    modules = set(sys.modules)
    loaded = lw.load(saved)
    report = loaded.validate()
    assert set(sys.modules) == modules
    assert "relu_1_3" in report.skipped
    assert func in report.skipped["relu_1_3"]
    assert "not one of torch's functions" in report.skipped["relu_1_3"]
    assert report.checked == len(loaded.ops) - 1
    loaded.save(saved.parent / "again")  # the skip and its reason survive a second save
    assert lw.load(saved.parent / "again").validate().skipped == report.skipped


def test_allow_list_holds_torch_ops_only():
    assert resolve_function("torch.nn.functional.linear") is torch.nn.functional.linear
    assert resolve_function("torch.Tensor.add") is torch.Tensor.add
    assert resolve_function("torch.arange") is torch.arange
    for name in ("torch.load", "torch.save", "torch.from_file", "os.system", "torch.hub.load",
                 "torch.compile", "torch.set_default_device", "torch.manual_seed"):  # fmt: skip
        assert resolve_function(name) is None, name
    assert resolve_function("torch.nn.functional.hardswish") is torch.nn.functional.hardswish
    # torch.ops names: only the allow-listed library operators, and only once registered
    for name in ("torch.ops.aten.from_file", "torch.ops.aten._save", "torch.ops.torchvision.x",
                 "torch.ops.torchvision.nms.default", "torch.ops.load_library"):  # fmt: skip
        assert resolve_function(name) is None, name
    registered = resolve_function("torch.ops.torchvision.nms")
    assert (registered is None) == ("torchvision" not in sys.modules)


FORBIDDEN_CALLS = {"eval", "exec", "compile", "__import__"}
FORBIDDEN_MODULES = {"pickle", "marshal", "shelve", "dill", "cloudpickle", "joblib"}


def test_store_code_has_no_pickle_eval_or_torch_load():
    for path in sorted(STORE.glob("*.py")):
        tree = ast.parse(path.read_text())
        for item in ast.walk(tree):
            if isinstance(item, ast.Call) and isinstance(item.func, ast.Name):
                assert item.func.id not in FORBIDDEN_CALLS, (path.name, item.func.id)
            if isinstance(item, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in item.names] + [getattr(item, "module", None) or ""]
                assert not FORBIDDEN_MODULES & {n.split(".")[0] for n in names}, path.name
            if isinstance(item, ast.Attribute) and item.attr in ("load", "loads"):
                owner = ast.unparse(item.value)
                assert owner not in ("torch", "pickle", "torch.serialization"), path.name
            if isinstance(item, ast.Attribute) and item.attr == "import_module":
                assert path.name == "optional.py", path.name  # fixed names of extras only


class Autocast(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return self.fc(x)


@pytest.mark.parametrize(
    ("autocast", "match"),
    [
        ([["tpu", "bfloat16"]], r"replay.autocast\[0\]\[0\]: 'tpu' is not one of"),
        ([["cpu", "os.system"]], r"replay.autocast: unknown dtype 'os.system'"),
        ([["cpu"]], r"is not a pair"),
    ],
)
def test_bad_autocast_of_a_replay(tmp_path, autocast, match):
    lw.trace(Autocast(), torch.randn(2, 4)).save(tmp_path / "log")
    tampered(tmp_path / "log", lambda d: node(d, "linear_1_1")["replay"].update(autocast=autocast))
    load_fails(tmp_path / "log", match)
