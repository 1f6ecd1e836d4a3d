"""The monitor's data: its statistics per step, columnar (`StepHistory`)."""
