"""The tracer. Its core, every op's path, is the modules of this folder; each optional
feature is a subfolder that attaches to the recorder through `features.Feature`'s hooks:
backward/ (gradients), offload/ (saved values to disk), dispatch/ (accelerate's hooks),
distributed/ (inside torch.distributed), monitor/ (`lw.Monitor`), interventions/
(`intervene=`), timing/ (`timing=True`). Only `session.py`, `trace.py` and `tracing.py`
compose them (tests/python/test_import_layers.py)."""
