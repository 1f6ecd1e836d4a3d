"""Tracing inside torch.distributed (`DistributedCapture`, a Feature): engine calls kept
out of the ops, collectives recorded as ops, parameters by name with their sharding."""
