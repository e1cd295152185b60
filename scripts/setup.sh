#!/usr/bin/env bash
# All set-up of pairmd on a Debian machine: installs the dependencies from Debian's packages
# (skipped when they are already there), then configures and builds into build/.
# CUDA comes from the CUDA Toolkit when nvcc is found (PATH or /usr/local/cuda); without it
# the CPU backend is built alone, unless PAIRMD_REQUIRE_CUDA=1 (CI), which makes that an error.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(build-essential cmake pkg-config libyaml-cpp-dev libhdf5-dev libfftw3-dev libsz2 libaec-dev librandom123-dev libgtest-dev libcli11-dev
          python3 python3-numpy python3-h5py python3-mdanalysis python3-griddataformats python3-matplotlib hdf5-tools
          python3-gsd python3-venv python3-pip
          libopenmpi-dev openmpi-bin  # MPI: replica ensembles (optional to the build; docs/replicas.md)
          gemmi-dev tao-pegtl-dev zlib1g-dev pymol-data  # sop-build: gemmi (PEGTL: its mmCIF parser); pymol-data: a protein for the SOP tests
          clang-format  # scripts/check_format.sh (CI)
          lammps  # `lmp`: the bonded terms against LAMMPS (tests/python/check_lammps_bonded.py)
          pybind11-dev python3-pybind11 python3-dev python3-pytest)  # the Python module and its tests
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [[ ${#missing[@]} -gt 0 ]]; then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [[ $(id -u) -ne 0 ]] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" > /dev/null
fi

if ! command -v nvcc > /dev/null && [[ -x /usr/local/cuda/bin/nvcc ]]; then
  export PATH=/usr/local/cuda/bin:$PATH
fi
cuda=OFF
if command -v nvcc > /dev/null; then
  cuda=ON
  echo "setup: CUDA backend will be built with $(nvcc --version | tail -n 1)"
elif [[ "${PAIRMD_REQUIRE_CUDA:-0}" == 1 ]]; then
  echo "setup: error: PAIRMD_REQUIRE_CUDA=1 but no nvcc (install the CUDA Toolkit)" >&2
  exit 1
else
  echo "setup: note: no nvcc found; building the CPU backend only (install the CUDA Toolkit for GPUs)"
fi

# Configuring also fetches GSD's source distribution from PyPI (pinned by its hash) and builds
# its C library into pairmd (CMakeLists.txt; -DPAIRMD_GSD_SOURCE=FILE for a local copy).
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DPAIRMD_CUDA=$cuda > build.configure.log
cmake --build build -j"$(nproc)"
echo "setup: built build/pairmd"

# OVITO and a current gsd are on PyPI only: a virtual environment for the tests that open
# pairmd's files with them (tests/python/check_peer_tools.py). Best effort: without network the
# tests report themselves as skipped, with the reason.
peer=build/peer-tools
if ! "$peer/bin/python" -c "import ovito, gsd.hoomd" > /dev/null 2>&1; then
  if python3 -m venv "$peer" > /dev/null 2>&1 && "$peer/bin/pip" install -q --disable-pip-version-check ovito gsd > build.peer-tools.log 2>&1; then
    echo "setup: PyPI's ovito and gsd in $peer (for the peer-tool tests)"
  else
    echo "setup: note: could not install PyPI's ovito and gsd into $peer (see build.peer-tools.log); their tests will be skipped"
  fi
fi
