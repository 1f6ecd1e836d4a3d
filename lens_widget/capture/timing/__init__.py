"""`timing=True`: each op timed (`Timing`, a Feature)."""
