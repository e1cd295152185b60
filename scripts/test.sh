#!/usr/bin/env bash
# One command from a fresh Debian machine to a passing test suite: set-up (dependencies,
# configure, build), then every test through CTest. GPU tests run where a GPU is present and
# are reported as skipped, with the reason, where it is not.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
ctest --test-dir build --output-on-failure -j"$(nproc)" --timeout 900
if ! build/tests/pairmd_gpu_tests --gtest_list_tests > /dev/null 2>&1; then
  echo "test: no GPU test binary (built without CUDA)"
else
  reason=$(build/tests/pairmd_gpu_tests --gtest_filter='GpuPairList.*' 2>&1 | grep -m1 -o 'no GPU: .*' || true)
  [[ -n "$reason" ]] && echo "test: GPU tests were skipped here: $reason (they run on the H100: scripts/device_run.sh)"
fi
