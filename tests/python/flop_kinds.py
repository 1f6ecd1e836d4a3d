"""Which traced functions do matrix work (counted by torch's own formulas) in the zoo's models:
their counts add up to what FlopCounterMode counts; every other count is elementwise or norm
work (pointwise_flops.py)."""

MATRIX_FUNCS = frozenset(
    {"linear", "conv1d", "conv2d", "matmul", "__matmul__", "addmm", "baddbmm", "bmm", "mm",
     "einsum", "scaled_dot_product_attention", "multi_head_attention_forward",
     "_transformer_encoder_layer_fwd", "_grouped_mm"}
)  # fmt: skip


def matrix_flops(ops) -> int:
    return sum(op.flops for op in ops if op.func in MATRIX_FUNCS and op.flops is not None)
