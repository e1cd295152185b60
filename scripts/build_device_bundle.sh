#!/usr/bin/env bash
# Builds pairmd here for the H100/H200 (sm_90), with yaml-cpp and HDF5 linked statically
# (the GPU machine has neither), and bundles the binaries plus the few shared libraries they
# still need into device-bundle/ (git-ignored). Pass `device-bundle` in the device tool's
# `carry` and run scripts/device_run.sh there.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-device -DCMAKE_BUILD_TYPE=Release -DPAIRMD_CUDA=ON -DPAIRMD_STATIC_DEPS=ON \
      -DCMAKE_CUDA_ARCHITECTURES=90 > build-device.log
targets=(pairmd pairmd_tests pairmd_gpu_tests)
for t in $(sed -n 's/^add_executable(\([a-z_0-9]*\).*/\1/p' bench/CMakeLists.txt tests/CMakeLists.txt analysis/CMakeLists.txt 2>/dev/null); do
  [[ " ${targets[*]} " == *" $t "* ]] || targets+=("$t")
done
cmake --build build-device -j"$(nproc)" --target "${targets[@]}" pairmd_small_disk >> build-device.log
rm -rf device-bundle && mkdir -p device-bundle/lib
for t in "${targets[@]}"; do
  f=$(find build-device -type f -name "$t" -perm -u+x | head -n 1)
  [[ -n "$f" ]] && cp "$f" device-bundle/ && strip "device-bundle/$t"  # host symbols only: kernel names stay
done
# The output tests' small-disk library (LD_PRELOAD), found there at its build-time path.
cp build-device/tests/libpairmd_small_disk.so device-bundle/lib/
# Shared libraries the static HDF5 still pulls in, and the OpenMP runtime.
for lib in libsz.so.2 libaec.so.0 libgomp.so.1; do
  cp -L "/usr/lib/x86_64-linux-gnu/$lib" device-bundle/lib/
done
# The protein of the SOP tests and the `sop` stage (issue 20): PDB 1TII from Debian's
# pymol-data (scripts/setup.sh installs it), which the GPU machine lacks.
cp /usr/share/pymol/test/dat/1tii.pdb device-bundle/ 2>/dev/null ||
  echo "build_device_bundle: no /usr/share/pymol/test/dat/1tii.pdb (pymol-data): the sop stage will fail" >&2
# Tests that run the pairmd binary or read configs find them under the build-time paths.
echo "$PWD" > device-bundle/source_dir.txt
ls -la device-bundle device-bundle/lib
du -sh device-bundle
