"""log.save / lw.load on the real models of the test zoo: the loaded log is the same log."""

from __future__ import annotations

import dataclasses
import json

import pytest
import torch
from function_module import FunctionModule
from log_equality import NOT_PLAIN, assert_same_log, assert_same_tensor
from small_models import view_then_write
from torch import nn
from torch.nn import functional as F

import lens_widget as lw
from lens_widget.log.records import OpRecord
from lens_widget.store.load import SavedError
from model_zoo import TEST_MODELS as BUILDERS

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning")

# Train mode adds dropout (saved RNG states), BatchNorm statistics and drop-path.
TRAIN_CASES = ["gpt2", "bert", "swin", "mobilenet_v2"]


def trace_case(name: str, mode: str = "eval"):
    case = BUILDERS[name]()
    case.model.train(mode == "train")
    torch.manual_seed(0)
    return lw.trace(case.model, case.args, case.kwargs)


def assert_round_trip(log, tmp_path):
    log.save(tmp_path / "log")
    loaded = lw.load(tmp_path / "log")
    assert_same_log(log, loaded)
    original_report = log.validate()
    report = loaded.validate()
    assert report.checked == original_report.checked
    assert report.skipped == original_report.skipped
    return loaded


@pytest.mark.parametrize(
    ("name", "mode"),
    [(name, "eval") for name in BUILDERS] + [(name, "train") for name in TRAIN_CASES],
)
def test_zoo_model_round_trip(name, mode, tmp_path):
    log = trace_case(name, mode)
    loaded = assert_round_trip(log, tmp_path)
    # every op replays after loading, but those inside torch.vmap (transformers 4.5x's masks)
    assert loaded.validate().checked == len([op for op in log.ops if op.no_values is None])


def test_output_tree_comes_back_with_its_fields(tmp_path):
    log = trace_case("gpt2")
    log.save(tmp_path / "gpt2")
    loaded = lw.load(tmp_path / "gpt2")
    assert type(loaded.output).__name__ == "SavedObject"
    assert loaded.output.type_name == type(log.output).__name__
    assert list(loaded.output) == list(log.output.keys())
    assert_same_tensor(log.output.logits, loaded.output.logits, "logits")
    assert_same_tensor(log.output["logits"], loaded.output["logits"], "logits")


def test_every_record_field_is_in_the_format(tmp_path):
    """A new OpRecord field must be added to the format (and docs/log-format.md)."""
    log = trace_case("small_cnn")
    log.save(tmp_path / "cnn")
    document = json.loads((tmp_path / "cnn" / "log.json").read_text())
    # Underscored fields are metrics computed on use (FLOPs, stats), not state to keep.
    fields = {f.name for f in dataclasses.fields(OpRecord) if not f.name.startswith("_")}
    # `function` is written only where an op ran in a helper (version 5; test_model_structure),
    # `nested_shapes` only where an output was a nested tensor (version 6; test_fast_paths)
    assert set(document["nodes"][0]) == fields - {"function", "nested_shapes"}
    assert fields >= NOT_PLAIN - {"_flops", "_stats"}


def test_partial_trace_keeps_its_error(tmp_path):
    def fails(x):
        y = torch.relu(x)
        return y.view(7)  # 2x3 cannot be viewed as 7

    with pytest.raises(RuntimeError) as info:
        lw.trace(FunctionModule(fails), torch.randn(2, 3))
    log = info.value.lens_log
    loaded = assert_round_trip(log, tmp_path)
    assert type(loaded.error).__name__ == "RuntimeError"
    assert isinstance(loaded.error, SavedError)
    assert str(loaded.error) == str(log.error)
    assert loaded.failed_op == log.failed_op and loaded[log.failed_op].failed


@pytest.mark.parametrize("name", ["ÜberError", "my-error"])
def test_an_error_class_of_any_name_round_trips(tmp_path, name):
    """A non-ASCII class name, or one type() made that is no identifier, loads back."""
    error_class = type(name, (Exception,), {})

    def fails(x):
        raise error_class("bad")

    with pytest.raises(error_class) as info:
        lw.trace(FunctionModule(fails), torch.randn(2, 3))
    loaded = assert_round_trip(lw.partial_log(info.value), tmp_path)
    assert type(loaded.error).__name__ == name and str(loaded.error) == "bad"


def test_graph_only_log(tmp_path):
    log = lw.trace(trace_model(), torch.randn(3, 4), save=None)
    loaded = assert_round_trip(log, tmp_path)
    assert all(node.activations is None for node in loaded.nodes)


def test_weights_left_out(tmp_path):
    model = trace_model()
    log = lw.trace(model, torch.randn(3, 4))
    log.save(tmp_path / "with")
    log.save(tmp_path / "without", weights=False)
    with_size = (tmp_path / "with" / "tensors.safetensors").stat().st_size
    without_size = (tmp_path / "without" / "tensors.safetensors").stat().st_size
    weight_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    assert with_size - without_size >= weight_bytes
    loaded = lw.load(tmp_path / "without")
    assert loaded["fc.weight"].activations is None
    assert loaded["linear_1_1"].activations is not None
    report = loaded.validate()
    assert report.skipped == {"linear_1_1": "input 'fc.weight' was not saved"}


def test_a_loaded_log_saves_again(tmp_path):
    log = trace_case("gpt2")
    log.save(tmp_path / "a")
    loaded = lw.load(tmp_path / "a")
    loaded.save(tmp_path / "b")
    assert_same_log(log, lw.load(tmp_path / "b"))
    # saving over the files a loaded log is mapped from leaves that log intact
    loaded.save(tmp_path / "a")
    assert_same_log(log, loaded)
    assert_same_log(log, lw.load(tmp_path / "a"))


def test_save_refuses_a_directory_that_is_not_a_log(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    log = lw.trace(trace_model(), torch.randn(3, 4))
    with pytest.raises(FileExistsError, match="not a saved lens_widget log"):
        log.save(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]
    (tmp_path / "file").write_text("x")
    with pytest.raises(FileExistsError, match="is a file"):
        log.save(tmp_path / "file")


def test_unsavable_tensor_raises_before_writing(tmp_path):
    log = lw.trace(trace_model(), torch.randn(3, 4))
    node = log["relu_1_2"]
    node.activations = (node.activation.to_sparse_csr(),)
    with pytest.raises(TypeError, match="output 0 of relu_1_2"):
        log.save(tmp_path / "sparse")
    assert list((tmp_path / "sparse").iterdir()) == []  # (CSR: only COO is saved)


class TwoLayers(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.fc(x)) * 2


def trace_model() -> nn.Module:
    torch.manual_seed(0)
    return TwoLayers()


def test_a_random_op_that_drew_on_cuda_is_skipped_after_loading(tmp_path):
    """Its draws came from a CUDA generator, which a loaded (CPU) log cannot replay: validate
    reports it as skipped instead of failing. (The CUDA state is set by hand: no GPU here.)"""
    torch.manual_seed(0)
    log = lw.trace(nn.Dropout(0.5).train(), torch.randn(4, 4))
    (drop,) = log.ops
    drop.device = "cuda:0"
    drop.replay[0].cuda_rng_states = [torch.zeros(16, dtype=torch.uint8)]
    log.save(tmp_path / "log")
    report = lw.load(tmp_path / "log").validate()
    assert report.skipped == {drop.label: "drew random numbers on CUDA; a loaded log is on the CPU"}


def test_output_of_a_second_output_describes_itself(tmp_path):
    """An output sink fed by an op's second output (topk's int64 indices) has that tensor's
    dtype and shape, not the op's first output's; the log saves and loads."""

    def top(x):
        values, indices = torch.topk(x, 2)
        return values.sum(), indices

    log = lw.trace(FunctionModule(top), torch.randn(3, 5))
    sink = log["output.1"]
    assert (sink.dtype, sink.shape) == ("int64", (3, 2))
    assert log["topk_1_1"].dtype == "float32"
    assert_round_trip(log, tmp_path)


def test_an_input_written_through_another_view_round_trips(tmp_path):
    """The op reading `v` after `y` was written through another view replays from a copy
    kept with its call (ReplayCall.literals); loading such a log raised TypeError."""
    with torch.no_grad():
        log = lw.trace(FunctionModule(view_then_write), torch.randn(2, 3))
    call = log["add_1_4"].replay[0]
    assert list(call.literals) == [0]
    loaded = assert_round_trip(log, tmp_path)
    assert torch.equal(loaded["add_1_4"].replay[0].literals[0], call.literals[0])


def test_functions_torch_lists_as_ignored_still_replay_after_loading(tmp_path):
    """F.hardswish and F.hardsigmoid (MobileNetV3, EfficientNet's variants) dispatch through
    __torch_function__ though torch.overrides lists them as ignored: a trace records them, so
    a loaded log must replay them too."""

    def gates(x):
        return F.hardswish(x) * F.hardsigmoid(x)

    log = lw.trace(FunctionModule(gates), torch.randn(2, 5))
    assert [op.func for op in log.ops] == ["hardswish", "hardsigmoid", "mul"]
    loaded = assert_round_trip(log, tmp_path)
    assert loaded.validate().checked == 3
