#!/usr/bin/env bash
# The wheels bench/gpu_session.sh installs on a lent GPU machine, which has torch,
# transformers, numpy and networkx but cannot reach PyPI: TorchLens and graphviz (the peer),
# diffusers with importlib_metadata (model_zoo imports it), and the widget's pure-Python
# packages (the CUDA tests import lens_widget.widget), at the versions of this checkout's .venv,
# for that machine's Python 3.12. Downloaded into .whl/ (ignored through .git/info/exclude);
# carry it with lens_widget/static. Usage: `bash bench/gpu_wheels.sh` after `make install`.
set -euo pipefail
cd "$(dirname "$0")/.."
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
pins=$(.venv/bin/python - <<'PY'
import importlib.metadata as md
names = """anywidget comm ipython ipywidgets psygnal traitlets widgetsnbextension
jupyterlab_widgets torchlens graphviz diffusers importlib_metadata zipp jedi parso
matplotlib-inline pexpect ptyprocess prompt_toolkit wcwidth stack_data executing asttokens
pure_eval ipython_pygments_lexers""".split()
print(" ".join(f"{name}=={md.version(name)}" for name in names))
PY
)
mkdir -p .whl
# shellcheck disable=SC2086  # one argument per pin
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
  --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 -d .whl $pins
du -sh .whl
