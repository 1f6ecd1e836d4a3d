"""`intervene=`: an op's or module's output replaced while tracing (`Intervening`, a
Feature)."""

from lens_widget.capture.interventions.interventions import InterventionFn, Interventions

__all__ = ["InterventionFn", "Interventions"]
