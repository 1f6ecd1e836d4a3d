"""One head's attention map of one batch item, as the frontend plots it (protocol.ts
`AttentionResult`): queries x keys probabilities, computed on the op's device from its saved
query, key and mask, pooled there to at most MAX_HEATMAP a side, sent as float32.
"""

from __future__ import annotations

from lens_widget.log.attention import attention_grid, attention_map
from lens_widget.log.records import OpRecord
from lens_widget.widget import protocol
from lens_widget.widget.checks import check_index
from lens_widget.widget.tensor_view import MAX_HEATMAP, pool_2d


def attention_view(
    record: OpRecord, *, batch: int = 0, head: int = 0
) -> tuple[protocol.AttentionResult, bytes]:
    """The AttentionResult dict and the float32 little-endian bytes of the (pooled) map.

    Raises AttentionUnavailable (not an attention op, inputs not saved) and ValueError
    (batch or head out of range).
    """
    grid = attention_grid(record)
    batch = check_index("batch", batch, grid.batch)
    head = check_index("head", head, grid.heads)
    weights = attention_map(record, batch, head)
    data, note = pool_2d(weights, MAX_HEATMAP, ("query tokens", "key tokens"))
    values = data.float().cpu().contiguous()
    result: protocol.AttentionResult = {
        "id": record.label,
        "batch": {"index": batch, "size": grid.batch},
        "head": {"index": head, "size": grid.heads},
        "queries": grid.queries,
        "keys": grid.keys,
        "dataShape": list(values.shape),
        "reduced": bool(note),
        "note": note,
    }
    return result, values.numpy().astype("<f4", copy=False).tobytes()
