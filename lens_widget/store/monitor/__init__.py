"""The monitor's files: `mon.save` / `lw.load_monitor`, `mon.to_tensorboard`."""
