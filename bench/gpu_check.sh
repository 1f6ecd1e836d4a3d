#!/usr/bin/env bash
# The CUDA figures of bench/RESULTS.md in one run on a lent GPU machine (see docs/benchmarks):
# host syncs per pass, the per-op table and the tracing rows against TorchLens.
# Usage: OUT=<folder> bash bench/gpu_check.sh  (TorchLens and graphviz wheels in .whl/ if absent)
set -uo pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:-bench/out/gpu}
mkdir -p "$OUT/run"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
  export PYTHONPATH=/tmp/site:$PWD
else
  export PYTHONPATH=$PWD
fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$OUT/machine.txt"
python3 -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)" | tee -a "$OUT/machine.txt"
# smoke: a traced tiny GPT-2 on the GPU, else stop before spending the budget
timeout 60 python3 -c "
import torch, lens_widget as lw
from model_zoo import BENCH_MODELS
c = BENCH_MODELS['gpt2']('tiny').to(torch.device('cuda'))
log = lw.trace(c.model, c.args, c.kwargs); print('smoke ok:', len(log.ops), 'ops on', log.ops[0].activation.device if log.ops[0].activation is not None else '?')
" 2>&1 | tee "$OUT/smoke.txt" || exit 1
timeout 90 python3 -m bench.host_sync --models gpt2,resnet50 2>&1 | tee "$OUT/host_sync.txt"
timeout 150 python3 -m bench.per_op --device cuda --rounds 7 2>&1 | tee "$OUT/per_op.txt"
timeout 240 python3 -m bench.run --device cuda --models gpt2,resnet50 --no-backward \
  --repeats 5 --out "$OUT/run" 2>&1 | tee "$OUT/run.txt"
