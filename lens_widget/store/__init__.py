"""Files: save, load, ONNX, pandas. Feature folders: monitor/ (the monitor's files),
ranks/ (`lw.load_ranks`)."""
