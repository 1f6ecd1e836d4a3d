"""Models dispatched by accelerate: their device hooks run unrecorded, moved tensors and
loaded weights read as the model's (`DispatchHooks`)."""
