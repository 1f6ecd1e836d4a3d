"""Gradients: the backward pass a traced step runs (`BackwardCapture`, a Feature), its
autograd calls, leaves and passes, and checkpoint recomputations."""
