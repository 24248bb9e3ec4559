#!/usr/bin/env bash
# The checks that need a CUDA GPU, as one short script for a device session: the CUDA tests (kernels, plan,
# the captured Newton step) and the two GPU benchmarks. Logs go to $OUT (or /tmp/transfer-gpu).
#
# Needs a python3 that imports warp-lang, newton, mujoco, mujoco-warp, usd-core, numpy, torch, hypothesis and
# pytest, and TRANSFER_SHARED pointing at a copy of ../shared (the ANYmal C asset). docs/index.md#gpu-checks
# says how to bring them to the device machine. DEVICE=cpu runs the same script here as a dry run.
set -uo pipefail
out=${OUT:-/tmp/transfer-gpu}
device=${DEVICE:-cuda:0}
mkdir -p "$out"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
status=0
{ nvidia-smi -L 2>/dev/null || echo "no nvidia-smi"; python3 -c "import warp as wp; wp.init(); print(wp.get_cuda_devices())"; } \
    2>&1 | tee "$out/device.txt"
python3 -m pytest -q -p no:cacheprovider -o addopts="" -W ignore::DeprecationWarning \
    tests/test_kernels.py tests/test_plan.py tests/test_step_pipeline.py 2>&1 | tail -n 40 | tee "$out/tests.txt"
status=$((status | $?))
python3 benchmarks/bench_reorder.py --device "$device" --json >"$out/bench_reorder.json" 2>"$out/bench_reorder.err"
status=$((status | $?))
python3 benchmarks/bench_newton.py --device "$device" --worlds 1 16 64 4096 --json >"$out/bench_newton.json" \
    2>"$out/bench_newton.err"
status=$((status | $?))
exit "$status"
