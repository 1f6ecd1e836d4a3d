"""The monitor view (`LensWidget.from_monitor`, `Monitor.widget()`): its traits, requests and
protocol shapes."""
