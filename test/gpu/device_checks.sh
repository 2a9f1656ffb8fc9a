#!/usr/bin/env bash
# One device-tool call that runs every GPU check whose artifacts were compiled
# on the CPU machine (see each script's docstring for its compile step):
#   examples (check + bench), wsc.matmul's cuda tests, the planted hang,
#   compute-sanitizer, stress with random delays.
# Usage on the GPU machine, from the repo root, with .artifacts carried:
#   bash test/gpu/device_checks.sh OUTDIR
# Each step has its own time limit so one slow step cannot starve the rest;
# every log lands in OUTDIR. The limits add up to 14 minutes, more than one
# device-tool call allows; the steps measured alone took 2 min (matmul), 61 s
# (hang's unbounded case), 10 s (sanitize, 6 kernels) and 35 s (stress), so
# the script fits one call in practice: split it when a step grows.
set -u
out=${1:?usage: device_checks.sh OUTDIR}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
# wsc.passes and wsc.dialects map to top-level folders: install the package
# (offline, no dependencies) so they import as they do on the CPU machine.
python3 -m pip install -q --no-deps --no-build-isolation -e . > "$out/install.txt" 2>&1
nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader > "$out/device.txt"
python3 -c "import torch, cuda.bindings; print('torch', torch.__version__, 'cuda-bindings', cuda.bindings.__version__)" >> "$out/device.txt"

step() {  # step NAME SECONDS COMMAND...
  local name=$1 limit=$2; shift 2
  local start=$SECONDS
  timeout "$limit" "$@" > "$out/$name.txt" 2>&1
  echo "$name: exit $? in $((SECONDS - start)) s" | tee -a "$out/summary.txt"
}

step examples 90 bash -c 'for dir in .artifacts/examples/*/; do echo "== $dir";
  python3 -m wsc.runtime.run_cli "$dir/check" --check;
  python3 -m wsc.runtime.run_cli "$dir/bench" --check --bench; done'
step matmul 240 env WSC_CACHE_DIR=.artifacts/wsc-cache python3 -m pytest -q -m cuda test/python/test_matmul.py
step hang 70 python3 test/gpu/hang.py run .artifacts/hang
step sanitize 240 python3 test/gpu/sanitize.py run .artifacts/sanitize --out "$out/sanitize-full.txt"
step stress 200 python3 test/gpu/stress.py run .artifacts/stress --launches 1000 --out "$out/stress-full.txt"
cat "$out/summary.txt"
