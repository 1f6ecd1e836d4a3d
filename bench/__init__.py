"""Benchmarks of lens_widget against a plain forward and TorchLens (`python -m bench.run`),
and the model zoo the tests share (`model_zoo`)."""
