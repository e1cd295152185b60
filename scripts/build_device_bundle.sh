#!/usr/bin/env bash
# Builds pairmd here for the H100/H200 (sm_90), with yaml-cpp and HDF5 linked statically
# (the GPU machine has neither), and bundles the binaries plus the few shared libraries they
# still need into device-bundle/ (git-ignored), with Open MPI's mpirun and libraries in
# device-bundle/mpi (replica ensembles; the device machine has no MPI). Pass `device-bundle` in the device tool's
# `carry` and run scripts/device_run.sh there.
#
# The Python module (device-bundle/python/pairmd*.so, scripts/device_run.sh python) is built for
# the GPU machine's python3, which is not Debian's: Python 3.12 with NumPy 2 (KINDS.md; its
# python3 is /opt/torch/.venv/bin/python3, 3.12.3). So it is built against a Python 3.12 here
# (PAIRMD_DEVICE_PYTHON, default python3.12 on the PATH or pyenv's 3.12) in a virtual
# environment build-py312/ with PyPI's pybind11 (Debian's 2.10 predates NumPy 2). Without such
# a Python, or without PyPI, the bundle is built without the module, and says so.
set -euo pipefail
cd "$(dirname "$0")/.."
python_args=(-DPAIRMD_PYTHON=OFF)
# A candidate must run (pyenv's shim for python3.12 exists but fails where 3.12 is not selected).
device_python=${PAIRMD_DEVICE_PYTHON:-}
if [[ -z "$device_python" ]]; then
  for c in "$(command -v python3.12 || true)" $(ls -d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.12*/bin/python3 2>/dev/null); do
    if [[ -n "$c" ]] && "$c" -c 'import sys' 2> /dev/null; then device_python=$c; break; fi
  done
fi
if [[ -n "$device_python" ]] && { [[ -x build-py312/bin/python ]] || "$device_python" -m venv build-py312; } &&
   { build-py312/bin/python -c "import pybind11" 2> /dev/null ||
     build-py312/bin/pip install -q --disable-pip-version-check "pybind11>=2.12"; }; then
  python_args=(-DPAIRMD_PYTHON=ON -DPython_EXECUTABLE="$PWD/build-py312/bin/python"
               -Dpybind11_DIR="$(build-py312/bin/python -m pybind11 --cmakedir)")
  echo "device bundle: Python module for $(build-py312/bin/python --version) with pybind11 $(build-py312/bin/python -m pybind11 --version)"
else
  echo "device bundle: note: no Python 3.12 with PyPI's pybind11 here: the bundle has no Python module"
fi
cmake -S . -B build-device -DCMAKE_BUILD_TYPE=Release -DPAIRMD_CUDA=ON -DPAIRMD_STATIC_DEPS=ON \
      -DCMAKE_CUDA_ARCHITECTURES=90 -DPAIRMD_PYTHON=OFF > build-device.log
targets=(pairmd pairmd_tests pairmd_gpu_tests)
for t in $(sed -n 's/^add_executable(\([a-z_0-9]*\).*/\1/p' CMakeLists.txt bench/CMakeLists.txt tests/CMakeLists.txt analysis/CMakeLists.txt 2>/dev/null); do
  [[ " ${targets[*]} " == *" $t "* ]] || targets+=("$t")
done
cmake --build build-device -j"$(nproc)" --target "${targets[@]}" pairmd_small_disk >> build-device.log
rm -rf device-bundle && mkdir -p device-bundle/lib
# The device tool carries at most 64 MiB and the full bundle is ~73 MB: PAIRMD_BUNDLE_SKIP names
# binaries to leave out of this bundle (e.g. "dcs_bench msm_bench pairmd_dcs_gpu_tests
# pairmd_output_tests pairmd_tests" for a run of the gpu, python, replicas or bench stages).
for t in "${targets[@]}"; do
  [[ " ${PAIRMD_BUNDLE_SKIP:-} " == *" $t "* ]] && continue
  f=$(find build-device -type f -name "$t" -perm -u+x | head -n 1)
  [[ -n "$f" ]] && cp "$f" device-bundle/ && strip "device-bundle/$t"  # host symbols only: kernel names stay
done
# The Python module, imported there with PYTHONPATH=device-bundle/python. A shared module cannot
# take Debian's static yaml-cpp and HDF5 (not position-independent), so it is built in a build
# of its own against the shared ones, which travel beside it in python/lib (their own
# dependencies, libcurl, libssl and the like, are on the GPU machine's Ubuntu).
if [[ "${python_args[0]}" == -DPAIRMD_PYTHON=ON ]]; then
  cmake -S . -B build-device-py -DCMAKE_BUILD_TYPE=Release -DPAIRMD_CUDA=ON -DPAIRMD_STATIC_DEPS=OFF \
        -DCMAKE_CUDA_ARCHITECTURES=90 "${python_args[@]}" > build-device-py.log
  if cmake --build build-device-py -j"$(nproc)" --target pairmd_python >> build-device-py.log 2>&1; then
    mkdir -p device-bundle/python/lib && cp build-device-py/python/pairmd*.so device-bundle/python/ &&
      strip -x device-bundle/python/pairmd*.so
    for lib in $(ldd device-bundle/python/pairmd*.so | awk '/yaml-cpp|hdf5|libsz|libaec|fftw3/ {print $3}'); do
      cp -L "$lib" device-bundle/python/lib/
    done
  else
    echo "device bundle: the Python module did not build (build-device-py.log)" >&2
  fi
fi
# The output tests' small-disk library (LD_PRELOAD), found there at its build-time path.
cp build-device/tests/libpairmd_small_disk.so device-bundle/lib/
# Shared libraries the static HDF5 still pulls in, and the OpenMP runtime.
for lib in libsz.so.2 libaec.so.0 libgomp.so.1; do
  cp -L "/usr/lib/x86_64-linux-gnu/$lib" device-bundle/lib/
done
# Open MPI for replica ensembles (the device machine has none): mpirun, libraries, plugins, help
# texts, under device-bundle/mpi (source device-bundle/mpi/env.sh; scripts/bundle_mpi.sh).
scripts/bundle_mpi.sh device-bundle device-bundle/pairmd
# The protein of the SOP tests and the `sop` stage (issue 20): PDB 1TII from Debian's
# pymol-data (scripts/setup.sh installs it), which the GPU machine lacks.
cp /usr/share/pymol/test/dat/1tii.pdb device-bundle/ 2>/dev/null ||
  echo "build_device_bundle: no /usr/share/pymol/test/dat/1tii.pdb (pymol-data): the sop stage will fail" >&2
# Tests that run the pairmd binary or read configs find them under the build-time paths.
echo "$PWD" > device-bundle/source_dir.txt
ls -la device-bundle device-bundle/lib
du -sh device-bundle
size=$(du -sm device-bundle | cut -f1)
[[ $size -le 60 ]] || echo "device bundle: ${size} MB, more than the device tool carries (64 MiB): set PAIRMD_BUNDLE_SKIP (above)" >&2
