"""`intervene=`: an op's or module's output replaced while tracing (`Intervening`, a
Feature)."""
