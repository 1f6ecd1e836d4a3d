#!/usr/bin/env bash
# Everything this project checks on a lent GPU machine, in one run (device time is scarce):
# the CUDA tests, host syncs per pass, the CUDA tracing figures of bench/RESULTS.md, the
# per-op tables on CUDA, and what each part of a traced op costs on CUDA (bench.trace_ablation
# on GPT-2 small: where the time above plain goes when the kernels are the GPU's. On
# 2026-11-29 21 rounds with ResNet-50 too ran past 75 s a save mode; this took ~1 min each).
# Results go under bench/results/cuda-<date>-<commit>/. Usage (device tool): here, once,
# `bash bench/gpu_wheels.sh` (TorchLens, graphviz, the widget's pure-Python wheels, and
# diffusers with importlib_metadata, which model_zoo imports, into .whl/); then carry .whl and
# lens_widget/static, and run `OUT=$OUT bash bench/gpu_session.sh` (2026-11-30: 374 s).
set -uo pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:-bench/out/gpu}
mkdir -p "$OUT/run"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD
{ nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; lscpu | grep -E "Model name|^CPU\(s\)"; python3 -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__, 'gpus', torch.cuda.device_count(), 'nccl', torch.cuda.nccl.version())"; } 2>&1 | tee -a "$OUT/session.txt"
timeout 60 python3 -c "
import torch, lens_widget as lw
from model_zoo import BENCH_MODELS
c = BENCH_MODELS['gpt2']('tiny').to(torch.device('cuda'))
log = lw.trace(c.model, c.args, c.kwargs); print('smoke ok:', len(log.ops), 'ops on', log.ops[0].device)
" 2>&1 | tee -a "$OUT/session.txt" || exit 1
timeout 150 python3 -m pytest -p no:cacheprovider -q -rs tests/python/test_trace_cuda.py \
  tests/python/test_offload.py tests/python/test_attention_request.py \
  tests/python/test_widget_tensor_view.py tests/python/test_attention_flops.py \
  -k "cuda or gpu or device" 2>&1 | tee -a "$OUT/session.txt"
timeout 90 python3 -m bench.host_sync --models gpt2,resnet50 2>&1 | tee -a "$OUT/session.txt"
timeout 200 python3 -m bench.run --device cuda --models gpt2,resnet50 --no-backward \
  --repeats 5 --out "$OUT/run" 2>&1 | tee -a "$OUT/session.txt"
for save in all none; do
  timeout 120 python3 -m bench.trace_ablation --device cuda --size bench --models gpt2 \
    --rounds 9 --save $save 2>&1 | tee -a "$OUT/session.txt"
done
timeout 120 python3 -m bench.per_op --device cuda --rounds 5 2>&1 | tee -a "$OUT/session.txt"
ls -R "$OUT"
