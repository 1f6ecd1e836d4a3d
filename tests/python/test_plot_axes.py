"""Plots name their axes from the dims the kernel knows (#24 item 8): recurrent cells' states
are (batch, hidden); an attention op's output with its heads still split, (batch, token,
head, feature), is a token x head·feature heatmap per batch item, not one sliver per token."""

from __future__ import annotations

import numpy as np
import pytest

import lens_widget as lw
from lens_widget.widget import requests
from lens_widget.widget.dim_names import DimNames
from model_zoo import gpt2
from model_zoo.rnn_cells import gru_cell_lm, lstm_cell_lm


def _activation(log: lw.ModelLog, label: str, **params: object) -> tuple[dict, np.ndarray]:
    result, (buf,) = requests.activation(log.by_label, {"id": label, **params}, DimNames(log.nodes))
    return result, np.frombuffer(buf, "<f4").reshape(result["dataShape"])


@pytest.mark.parametrize(("case", "func"), [(gru_cell_lm, "gru_cell"), (lstm_cell_lm, "lstm_cell")])
def test_a_recurrent_cell_state_is_batch_by_hidden(case, func) -> None:
    zoo = case()
    log = lw.trace(zoo.model, zoo.args)
    cells = [op for op in log.ops if op.func == func]
    assert len(cells) == 10
    for output in range(2 if func == "lstm_cell" else 1):
        result, _ = _activation(log, cells[3].label, output=output)
        assert result["dims"] == ["batch", "hidden"]
        assert result["plot"] == "heatmap" and result["axes"] == ["batch", "hidden"]


def test_heads_split_from_tokens_plot_as_tokens_by_head_features() -> None:
    zoo = gpt2()
    log = lw.trace(zoo.model, zoo.args, zoo.kwargs)
    sdpa = next(op for op in log.ops if op.func == "scaled_dot_product_attention")
    # transformers' SDPA path: transpose(1, 2) to (batch, token, head, feature), after a
    # reshape (transformers 5) or straight after SDPA (4.x)
    near = [log[c] for c in sdpa.children]
    near += [log[g] for n in near for g in n.children]
    moved = next(n for n in near if n.func == "transpose")
    result, data = _activation(log, moved.label, batch=1)
    assert result["shape"] == [2, 12, 2, 16]
    assert result["dims"] == ["batch", "token", "head", "feature"]
    assert result["plot"] == "sequence"
    assert result["axes"] == ["token", "head×feature"]
    np.testing.assert_array_equal(data, moved.activation[1].reshape(12, 32).numpy())
    assert "batch 1 of 2" in result["note"]
    # SDPA's own output, heads first, stays one tile per head
    result, _ = _activation(log, sdpa.label)
    assert result["plot"] == "images" and result["axes"] == ["head", "token", "feature"]
