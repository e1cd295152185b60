#!/usr/bin/env bash
# Runs on the GPU machine (through the device tool), from the repository root, with
# device-bundle/ carried there (see scripts/build_device_bundle.sh). Stages, in the order
# given (default: tests sanitize bench compare dcs):
#   tests      every test, GPU tests included (GoogleTest XML and logs into $OUT)
#   gpu        the GPU backend, pair-list and physics tests (tests/test_physics.cpp, every
#              strategy) alone (a check before timing)
#   sanitize   the GPU tests under compute-sanitizer memcheck and racecheck, launched one by one,
#              and memcheck of the tests that compare graph launches with them, as graphs (and of
#              the step decided after the fused kernel, 62,500 particles)
#   smoke      a quick look: the default strategy and atom_gather at N = 4k, 62.5k and 1M
#   bench      LJ liquid scaling of the default strategy, N = 4k .. 4M (issues 3 and 12)
#   compare    all strategies: LJ liquid at 64k and 1M, Kremer-Grest melt (issue 4)
#   openmm     pairmd compare and OpenMM (bench/openmm_lj.py, wheels carried in .whl/) on the
#              same LJ liquids in one job, and their ratio (issue 12)
#   semiflexible  the semiflexible Kremer-Grest melt (configs/semiflexible_melt.yaml, angles) at
#              64,000 beads: every strategy (pairmd compare), then OpenMM on the same model
#              (bench/openmm_semiflexible.py, CustomAngleForce; wheels in .whl/) in the same
#              job, and their ratio (issue 32: pairmd >= 1.5x); semiflexible_{pairmd,openmm}.*,
#              semiflexible.txt
#   pme        particle-mesh Ewald (issue 35): the PME GPU tests (pme_tests.log), then the periodic
#              polyelectrolyte (configs/polyelectrolyte_pme.yaml) at 64k and 256k: every strategy
#              (pairmd compare) and OpenMM's PME at the same accuracy (bench/openmm_pme.py; wheels
#              in .whl/) in the same job, and their ratio; pme_{pairmd,openmm}.*, pme.txt
#   pme_equal  pairmd and OpenMM at equal measured PME force error (64k, 256k)
#   polyel     the screened polyelectrolyte at 135,000 particles, every strategy (issue 33)
#   pme_fft    cuFFT's time per grid size (bench/pme_fft_sizes.cu)
#   pme_profile  per-kernel GPU time (Nsight Compute) of the PME polyelectrolyte at 64k
#   cpu        the CPU reference backend on 1 and all cores, 32k LJ liquid (issue 2)
#   profile    per-kernel GPU time (Nsight Compute) of the default path, 62,500-particle liquid
#   profile_1m the same on the 1,000,188-particle liquid (fewer steps; kernel_times_1m.txt)
#   skin       the default, pair_slots and atom_gather at N = 4k .. 1M for skins 0.25 .. 0.45
#   ab         an A/B of two builds in one job: device-bundle-a/pairmd (a baseline, built by
#              scripts/build_device_bundle.sh into device-bundle and renamed, carried too) and
#              device-bundle/pairmd, run alternately (PAIRMD_AB_ROUNDS, default 2): the default,
#              pair_slots and atom_gather on the LJ liquid at 4k .. 1M and the default and
#              atom_gather on the Kremer-Grest melt at 64,000; ab.log, ab.csv. With
#              PAIRMD_AB_C_ENV="VAR=value ...", a third build c: device-bundle/pairmd under that
#              environment (a development switch)
#   dcs        the potential-map kernels benchmark (issue 5), if built
#   msm        multilevel-summation maps (issue 18): the MSM and DCS GPU tests (quick), then
#              msm_bench: 10k/100k/1M atoms on 0.5 and 1.0 lattices, MSM against the exact sum
#              (time, error, crossover), GPU and CPU; msm_tests.log, msm_bench.{log,csv}
#   msm_sanitize  the small MSM GPU tests under compute-sanitizer memcheck and racecheck
#              (the short-range kernel shares atoms through shared memory); sanitize_msm_*.log
#   rsqrt      exact DCS with a share of 1/sqrt on the FMA pipes (issue 18, stretch):
#              gather_coalesced against gather_mixed_rsqrt, 100k atoms on 256^3; rsqrt.{log,csv}
#   replicas   replica ensembles sharing the one GPU (issue 16): K = 1, 2, 4, 8 replicas of the
#              LJ liquid (N = 4,000 and 32,000; independent, and replica exchange every 100 steps)
#              under the bundle's Open MPI (device-bundle/mpi, scripts/bundle_mpi.sh); aggregate
#              timesteps/s of each K against one replica -> replicas.{log,csv}. If the bundle's
#              mpirun cannot start, K plain processes run side by side instead (marked FALLBACK)
#   sop        coarse-grained proteins (issue 20): the SOP model of PDB 1TII chain D (98 beads;
#              device-bundle/1tii.pdb) and assemblies of 1,024 and 10,240 copies in a periodic box
#              (100,352 and 1,003,520 beads), built there by `pairmd sop-build --copies`:
#              timesteps/s of every strategy (pairmd compare) and of the CPU backend, overdamped
#              (brownian, dt 40 fs) and underdamped (langevin, dt 20 fs), and the list rebuilds per
#              step of overdamped dynamics for skins 1-4 A; sop_*.csv, sop.log (the systems
#              themselves are built in a scratch directory, not in $OUT)
#   ensembles  many systems on one GPU (issue 31): ensemble_bench for K copies of the 98-bead SOP
#              model (overdamped and underdamped), the 4,000- and 500-particle LJ liquids, and
#              replica exchange on one GPU (`pairmd run` without mpirun, 16 and 64 replicas);
#              ensembles.log, ensemble_*.csv
#   ensemble_outputs  (issue 31) what each output costs 64 replicas of configs/lj_tempering.yaml
#              sharing one GPU (`pairmd run` without mpirun, 20,000 steps, the config's exchange
#              every 200): the run with no trajectory or checkpoints (and with exchanges every
#              1,000), then with each output of the config alone, GSD frames, thermo every 200,
#              and everything as configured; wall time and rates of each (ensemble_outputs.log)
#   sop_skin   sop-build's default skin: 100,352 SOP beads, overdamped and underdamped, skins
#              1-5 A, the default strategy (sop_skin.log)
#   python     the Python module (issue 19; device-bundle/python, built for the machine's
#              python3 3.12 by build_device_bundle.sh): its pytest suite with the GPU tests
#              (python_tests.log), then bench/python_overhead.py: a sim.run(1) loop, one
#              sim.run(S) call and `pairmd run` per step at N = 4,000 on the GPU
#              (python_overhead.{log,csv}; the target: the loop within 20 % of the program)
#   multi_gpu  (issue 17; a machine with several GPUs) replica exchange with 1, 2 and 4 ranks per
#              GPU, LJ liquid 62,500 and Kremer-Grest melt 64,000: aggregate timesteps/s against one
#              replica, meeting cost, acceptance (multi_gpu.csv); files read back (demux) and the
#              ensemble's restart checked bit for bit (multi_gpu_restart.log)
#   perrank    (issue 31) several replicas per rank on the one GPU: mpirun -np 2 with 8 replicas
#              (each rank one CUDA ensemble of 4) against the 8 as threads of one process (one
#              ensemble of 8) and 8 ranks of one: thermo rows, exchange log and walk the same; the
#              2 x 4 run's restart bitwise; demux; aggregate timesteps/s of each (perrank.log)
# Results land in $OUT (the device tool brings them back); a summary is printed last.
set -uo pipefail
# The SOP tests (tests/test_sop.cpp) read the protein structure from here (Debian's pymol-data
# is not installed on the GPU machine).
export PAIRMD_SOP_PDB=$PWD/device-bundle/1tii.pdb
cd "$(dirname "$0")/.."
B=$PWD/device-bundle
# pairmd links libmpi (replica ensembles): the bundle's Open MPI libraries (scripts/bundle_mpi.sh;
# no C++ runtime or zlib among them) serve every stage; `replicas` also sources its env.sh.
export LD_LIBRARY_PATH=$B/lib:$B/mpi/lib:${LD_LIBRARY_PATH:-}
# cuFFT (PME, kernels/pme_gpu.cu) is linked as a shared library, 280 MB: too large to carry. The
# GPU machine's image has it (its CUDA toolkit, or PyTorch's nvidia-cufft wheel): put its folder
# on the path where the loader does not find it already.
if ldd "$B/pairmd" 2>/dev/null | grep -q 'libcufft.* not found'; then
  cufft=$(find /usr/local/cuda*/ /usr/local/lib /opt -name 'libcufft.so.1[0-9]' 2>/dev/null | head -n 1)
  [[ -n "$cufft" ]] && export LD_LIBRARY_PATH=$(dirname "$cufft"):$LD_LIBRARY_PATH
  echo "cuFFT: ${cufft:-not found on this machine (PME runs on the GPU will not start)}"
fi
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
stages=("$@")
[[ ${#stages[@]} -eq 0 ]] && stages=(tests sanitize bench compare dcs)
summary=()
# Tests name the pairmd binary and the sources by their build-time paths: recreate those.
src=$(cat "$B/source_dir.txt" 2>/dev/null || echo "$PWD")
if [[ "$src" != "$PWD" && ! -e "$src" ]]; then mkdir -p "$(dirname "$src")" && ln -s "$PWD" "$src"; fi
mkdir -p "$src/build-device/tests" && ln -sf "$B/pairmd" "$src/build-device/pairmd" 2>/dev/null
ln -sf "$B/lib/libpairmd_small_disk.so" "$src/build-device/tests/libpairmd_small_disk.so" 2>/dev/null
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"

# The OpenMM PME runs' starts: frame 0 of a short pairmd run of the periodic polyelectrolyte at
# 63,990 and 255,960 particles (1,422 and 5,688 chains), relaxed as pairmd relaxes it, in `states`.
pme_openmm_starts() {
  states=()
  for chains in 1422 5688; do
    "$B/pairmd" run configs/polyelectrolyte_pme.yaml --set system.chains.count=$chains --steps 10 --backend cuda \
      --set output.progress=off --set output.trajectory.every=10 --output /tmp/pme_state_$chains --overwrite \
      > /tmp/pme_state_$chains.out 2>&1 || tail -3 /tmp/pme_state_$chains.out
    states+=("$(ls /tmp/pme_state_$chains*.h5 | grep -v checkpoint | head -n 1)")
  done
}

for stage in "${stages[@]}"; do
  echo "=== $stage ($(date +%T))"
  case $stage in
    tests)
      timeout "${PAIRMD_GPU_TESTS_TIMEOUT:-420}" "$B/pairmd_gpu_tests" --gtest_output=xml:"$OUT/gpu_tests.xml" \
        > "$OUT/gpu_tests.log" 2>&1
      summary+=("gpu tests: exit $? ($(grep -E '^\[  (PASSED|FAILED)' "$OUT/gpu_tests.log" | tr '\n' ' '))")
      grep -E '^\[(forces|trajectory|momentum|same run)\]|^(NVE|Langevin|Brownian) |FAILED|Failure|error' "$OUT/gpu_tests.log" | head -150
      "$B/pairmd_tests" > "$OUT/cpu_tests.log" 2>&1
      summary+=("cpu tests: exit $?")
      "$B/pairmd_output_tests" > "$OUT/output_tests.log" 2>&1
      summary+=("output tests: exit $? ($(grep -E '^\[  (PASSED|FAILED)' "$OUT/output_tests.log" | tr '\n' ' '))")
      for t in "$B"/*_gpu_test* "$B"/dcs_tests; do
        [[ -x "$t" && "$(basename "$t")" != pairmd_gpu_tests ]] || continue
        "$t" > "$OUT/$(basename "$t").log" 2>&1
        summary+=("$(basename "$t"): exit $? ($(grep -E '^\[  (PASSED|FAILED)' "$OUT/$(basename "$t").log" | tr '\n' ' '))")
      done
      ;;
    python)
      if ! ls "$B"/python/pairmd*.so > /dev/null 2>&1; then
        summary+=("python: no module in the bundle (scripts/build_device_bundle.sh says why)")
        continue
      fi
      export PYTHONPATH=$B/python${PYTHONPATH:+:$PYTHONPATH}
      export LD_LIBRARY_PATH=$B/python/lib:$LD_LIBRARY_PATH  # the module's shared yaml-cpp and HDF5
      ldd "$B"/python/pairmd*.so | grep 'not found' | tee "$OUT/python_ldd_missing.log"
      python3 -c "import sys, numpy, pairmd; print('python', sys.version.split()[0], 'numpy', numpy.__version__, 'pairmd', pairmd.__version__, pairmd.cuda_available(), pairmd.cuda_status())" \
        2>&1 | tee "$OUT/python_import.log"
      PAIRMD_BINARY=$B/pairmd python3 -m pytest -q -rs -p no:cacheprovider tests/python/test_module.py \
        > "$OUT/python_tests.log" 2>&1
      summary+=("python tests: exit $? ($(tail -n 1 "$OUT/python_tests.log"))")
      python3 bench/python_overhead.py --pairmd "$B/pairmd" --backend cuda --out "$OUT/python_overhead" \
        > "$OUT/python_overhead.log" 2>&1
      summary+=("python overhead: exit $? ($(grep -m1 '^run(1) loop' "$OUT/python_overhead.log"))")
      cat "$OUT/python_overhead.log"
      ;;
    gpu)
      # A hang (a test that never ends) must not take the session's whole device time.
      timeout "${PAIRMD_GPU_TESTS_TIMEOUT:-420}" "$B/pairmd_gpu_tests" --gtest_output=xml:"$OUT/gpu_tests.xml" \
        > "$OUT/gpu_tests.log" 2>&1
      summary+=("gpu tests: exit $? ($(grep -E '^\[  (PASSED|FAILED)' "$OUT/gpu_tests.log" | tr '\n' ' '))")
      grep -E 'FAILED|Failure|exception' "$OUT/gpu_tests.log" | head -20
      ;;
    sanitize)
      # Small systems: the sanitizers slow kernels down by 10-100x.
      export PAIRMD_SYNC_LAUNCHES=1
      filter='GpuPairList.*:GpuBackend.BondedTerms*:GpuBackend.ForcesMatchCpu*:GpuBackend.ListOverflow*:GpuBackend.EnergyAndVirial*:GpuBackend.BlowUps*:GpuBackend.BlowUpInStepsLeft*'
      for tool in memcheck racecheck; do
        compute-sanitizer --tool $tool --error-exitcode 99 "$B/pairmd_gpu_tests" --gtest_filter="$filter" \
          > "$OUT/sanitize_$tool.log" 2>&1
        rc=$?
        summary+=("compute-sanitizer $tool: exit $rc, $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitize_$tool.log" | tail -1)")
      done
      unset PAIRMD_SYNC_LAUNCHES
      # The same launches as CUDA graphs (step chunks, list builds replayed), which the runs
      # above, launched one by one, do not exercise.
      compute-sanitizer --tool memcheck --error-exitcode 99 "$B/pairmd_gpu_tests" \
        --gtest_filter='GpuBackend.GraphsChangeNoResult:GpuBackend.StepsLeftRunningChangeNothing:GpuBackend.ListsOutgrowing*:GpuBackend.LargeSystemsDecide*' \
        > "$OUT/sanitize_memcheck_graphs.log" 2>&1
      summary+=("compute-sanitizer memcheck (graphs): exit $?, $(grep -E 'ERROR SUMMARY' "$OUT/sanitize_memcheck_graphs.log" | tail -1)")
      ;;
    barostat)
      # The barostat's cost (issue #34): NPT every step against NVT, LJ liquid, 4,000 to 1M.
      PAIRMD=$B/pairmd OUT=$OUT/barostat_speed SIZES=${PAIRMD_BAROSTAT_SIZES:-4000,32000,62500,256000,1000188} \
        bash bench/barostat_speed.sh > "$OUT/barostat_speed.log" 2>&1
      summary+=("barostat speed: exit $? ($(tail -1 "$OUT/barostat_speed.log"))")
      ;;
    smoke)
      "$B/pairmd" compare configs/lj_liquid.yaml --strategies pair_slots_fused,atom_gather \
        --sizes 4000,62500,1000188 --steps 200 --repeats 3 --warmup 300 --no-reference \
        --out "$OUT/smoke" > "$OUT/smoke.log" 2>&1
      summary+=("smoke: exit $?")
      cat "$OUT/smoke.log"
      ;;
    openmm)
      # pairmd and OpenMM on the same GPU in one job. The wheels travel in .whl/ (docs/benchmarks.md).
      "$B/pairmd" compare configs/lj_liquid.yaml --strategies pair_slots_fused,pair_slots,atom_gather,pair_warp \
        --sizes 4000,32000,62500,256000,1000188 --steps 200 --repeats 5 --warmup 500 --no-reference \
        --out "$OUT/vs_openmm_pairmd" > "$OUT/vs_openmm_pairmd.log" 2>&1
      summary+=("openmm stage, pairmd compare: exit $?")
      cat "$OUT/vs_openmm_pairmd.log"
      if python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl; then
        PYTHONPATH=/tmp/site:${PYTHONPATH:-} PYTHONUNBUFFERED=1 python3 bench/openmm_lj.py \
          --sizes 4000,32000,62500,256000,1000188 --precision mixed,single --csv "$OUT/vs_openmm_openmm.csv" \
          2>&1 | tee "$OUT/vs_openmm_openmm.log"
        summary+=("openmm: exit ${PIPESTATUS[0]}")
        python3 bench/openmm_ratio.py "$OUT/vs_openmm_pairmd.csv" "$OUT/vs_openmm_openmm.csv" | tee "$OUT/vs_openmm.txt"
      else
        summary+=("openmm: the wheels in .whl/ did not install")
      fi
      ;;
    semiflexible)
      # Issue 32: angles on the GPU against OpenMM, the same melt in one job.
      "$B/pairmd" compare configs/semiflexible_melt.yaml --sizes 64000 --steps 200 --repeats 5 --warmup 500 \
        --no-reference --out "$OUT/semiflexible_pairmd" > "$OUT/semiflexible_pairmd.log" 2>&1
      summary+=("semiflexible, pairmd compare: exit $?")
      cat "$OUT/semiflexible_pairmd.log"
      if python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl; then
        PYTHONPATH=/tmp/site:${PYTHONPATH:-} PYTHONUNBUFFERED=1 python3 bench/openmm_semiflexible.py \
          --sizes 64000 --precision mixed,single --csv "$OUT/semiflexible_openmm.csv" \
          2>&1 | tee "$OUT/semiflexible_openmm.log"
        summary+=("semiflexible, openmm: exit ${PIPESTATUS[0]}")
        python3 bench/openmm_ratio.py "$OUT/semiflexible_pairmd.csv" "$OUT/semiflexible_openmm.csv" |
          tee "$OUT/semiflexible.txt"
        summary+=("semiflexible: $(tail -n 1 "$OUT/semiflexible.txt")")
      else
        summary+=("semiflexible: the wheels in .whl/ did not install")
      fi
      ;;
    pme)
      # Issue 35: particle-mesh Ewald. The PME GPU tests (every strategy against the CPU reference
      # and the Ewald sum), then the periodic polyelectrolyte (configs/polyelectrolyte_pme.yaml,
      # accuracy 1e-5) at 64k and 256k particles: pairmd (every strategy) and OpenMM's PME
      # (bench/openmm_pme.py; wheels in .whl/) in the same job, from pairmd's relaxed starts
      # (frame 0 of a short run), and their ratio. OpenMM as its users run it (its own grid from
      # ewaldErrorTolerance, single and mixed precision) and, mixed, at the grid that meets the
      # accuracy at its order 5 (pairmd's rule, potentials/pme.h).
      if [[ -x "$B/pairmd_gpu_tests" ]]; then
        "$B/pairmd_gpu_tests" --gtest_filter='*Pme*' > "$OUT/pme_tests.log" 2>&1
        summary+=("pme tests: exit $? ($(grep -E '^\[  (PASSED|FAILED)' "$OUT/pme_tests.log" | tr '\n' ' '))")
        grep -E '^\[pme\]|FAILED|Failure' "$OUT/pme_tests.log" | head -80
      fi
      "$B/pairmd" compare configs/polyelectrolyte_pme.yaml --sizes 64000,256000 --steps 200 --repeats 5 \
        --warmup 500 --no-reference --out "$OUT/pme_pairmd" > "$OUT/pme_pairmd.log" 2>&1
      summary+=("pme, pairmd compare: exit $?")
      cat "$OUT/pme_pairmd.log"
      if python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl; then
        pme_openmm_starts
        echo "OpenMM starts: ${states[*]}"
        PYTHONPATH=/tmp/site:${PYTHONPATH:-} PYTHONUNBUFFERED=1 python3 bench/openmm_pme.py "${states[@]}" --openmm-grid \
          --precision single,mixed --warmup 500 --csv "$OUT/pme_openmm.csv" 2>&1 | tee "$OUT/pme_openmm.log"
        summary+=("pme, openmm (its grid): exit ${PIPESTATUS[0]}")
        python3 bench/openmm_ratio.py "$OUT/pme_pairmd.csv" "$OUT/pme_openmm.csv" | tee "$OUT/pme.txt"
        if [[ "${PAIRMD_PME_MATCHED:-1}" == 1 ]]; then  # 0: skip (the 256k order-5 grid is 686^3)
          PYTHONPATH=/tmp/site:${PYTHONPATH:-} PYTHONUNBUFFERED=1 python3 bench/openmm_pme.py "${states[@]}" \
            --precision mixed --warmup 500 --csv "$OUT/pme_openmm_matched.csv" 2>&1 | tee "$OUT/pme_openmm_matched.log"
          summary+=("pme, openmm (grid meeting the accuracy): exit ${PIPESTATUS[0]}")
          python3 bench/openmm_ratio.py "$OUT/pme_pairmd.csv" "$OUT/pme_openmm_matched.csv" | tee -a "$OUT/pme.txt"
        fi
        summary+=("pme: $(tail -n 1 "$OUT/pme.txt")")
      else
        summary+=("pme: the wheels in .whl/ did not install")
      fi
      ;;
    pme_openmm_matched)
      # OpenMM (mixed) at the grid that meets the accuracy at its order 5, from pairmd's starts.
      python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
      pme_openmm_starts
      PYTHONPATH=/tmp/site:${PYTHONPATH:-} PYTHONUNBUFFERED=1 python3 bench/openmm_pme.py "${states[@]}" \
        --precision mixed --warmup 500 --csv "$OUT/pme_openmm_matched.csv" 2>&1 | tee "$OUT/pme_openmm_matched.log"
      summary+=("pme, openmm (grid meeting the accuracy): exit ${PIPESTATUS[0]}")
      ;;
    pme_equal)
      # pairmd and OpenMM at equal measured force error (bench/openmm_pme_accuracy.py on the
      # 900-particle example: OpenMM's own grid at tolerance 1e-5 gives 3.86e-6, pairmd's order 6
      # at grid spacing 0.416 3.83e-6): pairmd with grids 216^3 (63,990 particles, spacing 0.399)
      # and 343^3 (255,960, 0.399), its default grids (300^3 and 512^3, error 3.68e-6), and OpenMM
      # with its own grid (single and mixed) from pairmd's starts, in one job.
      python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
      for spec in 64000:216 256000:343; do
        "$B/pairmd" compare configs/polyelectrolyte_pme.yaml --sizes ${spec%:*} --strategies pair_slots_fused,pair_warp \
          --set "electrostatics.grid=[${spec#*:},${spec#*:},${spec#*:}]" --steps 200 --repeats 5 --warmup 500 \
          --no-reference --out "$OUT/pme_equal_${spec%:*}" 2>&1 | grep -E "^(N =|pair_)|strategy pair_slots_fused"
      done
      "$B/pairmd" compare configs/polyelectrolyte_pme.yaml --sizes 64000,256000 --strategies pair_slots_fused,pair_warp \
        --steps 200 --repeats 5 --warmup 500 --no-reference --out "$OUT/pme_default" 2>&1 | grep -E "^(N =|pair_)"
      pme_openmm_starts
      PYTHONPATH=/tmp/site:${PYTHONPATH:-} PYTHONUNBUFFERED=1 python3 bench/openmm_pme.py "${states[@]}" --openmm-grid \
        --precision single,mixed --warmup 500 --csv "$OUT/pme_openmm.csv" 2>&1 | tee "$OUT/pme_openmm.log"
      summary+=("pme_equal, openmm: exit ${PIPESTATUS[0]}")
      ;;
    polyel)
      # The screened polyelectrolyte (configs/polyelectrolyte.yaml, Debye-Hueckel cut at 9 beside
      # WCA, density 0.05) at 135,000 particles, every strategy: the list-bound system of issue 33.
      "$B/pairmd" compare configs/polyelectrolyte.yaml --sizes 135000 --steps 200 --repeats 5 --warmup 500 \
        --no-reference --out "$OUT/polyel" 2>&1 | grep -E "^(N =|strategy|pair_|atom_)"
      summary+=("polyel: exit ${PIPESTATUS[0]}")
      ;;
    pme_fft)
      # cuFFT's real-to-complex plus complex-to-real time for every n^3 grid, n in 160..512 with
      # no prime factor above 7 (bench/pme_fft_sizes.cu, built into the bundle): pme_fft.csv.
      "$B/pme_fft_sizes" 160 512 9 | tee "$OUT/pme_fft.csv"
      summary+=("pme_fft: exit ${PIPESTATUS[0]}")
      ;;
    pme_profile)
      # Kernel durations (Nsight Compute) of the periodic polyelectrolyte with PME at 63,990
      # particles (1,422 chains), default strategy, after the relaxation (500 steps of ~50 launches): the mesh's
      # kernels and cuFFT's beside the pair list and pair kernels; kernel_times_pme.txt.
      ncu --metrics gpu__time_duration.sum --cache-control none --clock-control none --launch-skip 30000 \
        --launch-count 3000 --csv --page raw "$B/pairmd" run configs/polyelectrolyte_pme.yaml \
        --set system.chains.count=1422 --steps 1600 --backend cuda --set output.progress=off \
        --set output.trajectory.every=0 --output "$OUT/profile_pme" --overwrite > "$OUT/ncu_raw_pme.csv" 2> "$OUT/ncu_pme.log"
      summary+=("profile pme: exit $?")
      python3 scripts/kernel_times.py "$OUT/ncu_raw_pme.csv" | tee "$OUT/kernel_times_pme.txt"
      tail -5 "$OUT/ncu_pme.log"
      ;;
    bench)
      # 4k, 32k, 64k, 256k, 1M, 4M particles (fcc cells 10, 20, 25, 40, 63, 100).
      "$B/pairmd" compare configs/lj_liquid.yaml --strategies pair_slots_fused \
        --sizes 4000,32000,62500,256000,1000188,4000000 --steps 200 --repeats 5 --warmup 500 \
        --out "$OUT/bench_lj" > "$OUT/bench_lj.log" 2>&1
      summary+=("bench: exit $?")
      cat "$OUT/bench_lj.log"
      ;;
    compare)
      "$B/pairmd" compare configs/lj_liquid.yaml --sizes 62500,1000188 --steps 200 --repeats 5 --warmup 500 \
        --out "$OUT/compare_lj" > "$OUT/compare_lj.log" 2>&1
      summary+=("compare lj: exit $?")
      cat "$OUT/compare_lj.log"
      if [[ -f configs/kremer_grest.yaml ]]; then
        "$B/pairmd" compare configs/kremer_grest.yaml --sizes 2000,64000 --steps 200 --repeats 5 --warmup 500 \
          --out "$OUT/compare_kg" > "$OUT/compare_kg.log" 2>&1
        summary+=("compare kg: exit $?")
        cat "$OUT/compare_kg.log"
      fi
      ;;
    profile)
      # Kernel durations (Nsight Compute, caches and clocks left as in a normal run) of the
      # default path on the 62,500-particle liquid, after the first 3,000 launches (~850 steps,
      # once the lattice has melted), list builds included; kernels inside CUDA graphs are
      # profiled one by one; grouped by kernel by scripts/kernel_times.py.
      ncu --metrics gpu__time_duration.sum --cache-control none --clock-control none --launch-skip 3000 --csv \
        --page raw "$B/pairmd" run configs/lj_liquid.yaml --set system.lattice.cells=25 --steps 2000 --backend cuda \
        --set output.progress=off --set output.trajectory.every=0 --output "$OUT/profile" --overwrite > "$OUT/ncu_raw.csv" 2> "$OUT/ncu.log"
      summary+=("profile: exit $?")
      python3 scripts/kernel_times.py "$OUT/ncu_raw.csv" | tee "$OUT/kernel_times.txt"
      ;;
    profile_1m)
      ncu --metrics gpu__time_duration.sum --cache-control none --clock-control none --launch-skip 1500 --csv \
        --page raw "$B/pairmd" run configs/lj_liquid.yaml --set system.lattice.cells=63 --steps 900 --backend cuda \
        --set output.progress=off --set output.trajectory.every=0 --output "$OUT/profile_1m" --overwrite > "$OUT/ncu_raw_1m.csv" 2> "$OUT/ncu_1m.log"
      summary+=("profile 1M: exit $?")
      python3 scripts/kernel_times.py "$OUT/ncu_raw_1m.csv" | tee "$OUT/kernel_times_1m.txt"
      ;;
    ab)
      if [[ ! -x device-bundle-a/pairmd ]]; then summary+=("ab: no device-bundle-a/pairmd"); continue; fi
      echo "round,build,system,N,strategy,ms_per_step,steps_per_s,repeat_spread,gpu_bytes_per_particle" > "$OUT/ab.csv"
      for round in $(seq 1 "${PAIRMD_AB_ROUNDS:-2}"); do
        for build in a b ${PAIRMD_AB_C_ENV:+c}; do
          bin=$B/pairmd
          [[ $build == a ]] && bin=$PWD/device-bundle-a/pairmd
          [[ $build == c ]] && bin="env $PAIRMD_AB_C_ENV $B/pairmd"
          for sys in lj kg; do
            if [[ $sys == lj ]]; then
              args=(configs/lj_liquid.yaml --strategies pair_slots_fused,pair_slots,atom_gather
                    --sizes 4000,62500,256000,1000188)
            else
              args=(configs/kremer_grest.yaml --strategies pair_slots_fused,atom_gather --sizes 64000)
            fi
            $bin compare "${args[@]}" --steps 200 --repeats 5 --warmup 500 --no-reference \
              --out "/tmp/ab_${round}_${build}_$sys" >> "$OUT/ab.log" 2>&1
            summary+=("ab round $round build $build $sys: exit $?")
            awk -F, -v r="$round" -v b="$build" -v s="$sys" \
              'NR == 1 {for (i = 1; i <= NF; i++) c[$i] = i; next}
               {print r "," b "," s "," $c["n"] "," $c["strategy"] "," $c["ms_per_step"] "," $c["timesteps_per_s"] "," \
                      $c["repeat_spread"] "," $c["gpu_bytes_per_particle"]}' \
              "/tmp/ab_${round}_${build}_$sys.csv" >> "$OUT/ab.csv"
          done
        done
      done
      cat "$OUT/ab.csv"
      ;;
    skin)
      # The list skin against speed: the default, pair_slots and atom_gather at 4,000 to 1M for
      # skins 0.25 .. 0.45 (configs/lj_liquid.yaml takes the default's fastest); skin.log, skin.csv
      echo "skin,N,strategy,ms_per_step,steps_per_s,steps_per_graph_launch" > "$OUT/skin.csv"
      for skin in ${PAIRMD_SKINS:-0.25 0.3 0.35 0.4 0.45}; do
        "$B/pairmd" compare configs/lj_liquid.yaml --strategies pair_slots_fused,pair_slots,atom_gather \
          --sizes 4000,62500,256000,1000188 --steps 200 --repeats 3 --warmup 500 --no-reference \
          --set neighbor.skin=$skin --out "$OUT/skin_$skin" > "$OUT/skin_$skin.log" 2>&1
        summary+=("skin $skin: exit $?")
        awk -v skin=$skin '/^N = /{n=$3} /^(pair|atom)/{s=$1; ms=$2; sps=$3} /steps per graph launch/{for(i=1;i<=NF;i++) if($i=="steps" && $(i+1)=="per" && $(i+2)=="graph") spb=$(i-1); print skin "," n "," s "," ms "," sps "," spb}' \
          "$OUT/skin_$skin.log" >> "$OUT/skin.csv"
      done
      python3 - "$OUT/skin.csv" <<'PY' | tee "$OUT/skin.log"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
sizes = sorted({int(r["N"]) for r in rows}); strategies = ["pair_slots_fused", "pair_slots", "atom_gather"]
for n in sizes:
    print(f"N = {n}: timesteps/s (steps per graph launch, about the steps per list build)")
    print("skin  " + "".join(f"{s:>24}" for s in strategies))
    for skin in sorted({r["skin"] for r in rows}):
        cells = []
        for s in strategies:
            m = [r for r in rows if int(r["N"]) == n and r["skin"] == skin and r["strategy"] == s]
            cells.append(f'{m[0]["steps_per_s"]:>15} ({float(m[0]["steps_per_graph_launch"]):4.1f})' if m else f"{'-':>24}")
        print(f"{skin:5} " + "".join(f"{c:>24}" for c in cells))
PY
      ;;
    cpu)
      # The CPU reference backend on the GPU machine's idle cores (issue 2's benchmark).
      for t in 1 $(nproc); do
        for r in 1 2 3; do
          OMP_NUM_THREADS=$t "$B/pairmd" run configs/lj_liquid.yaml --set system.lattice.cells=20 --set neighbor.skin=0.3 --steps 500 \
            --backend cpu --set output.progress=off --set output.trajectory.every=0 --output "$OUT/cpu_bench" --overwrite 2>&1 |
            grep -E "^performance" | sed "s/^/threads $t: /"
        done
      done | tee "$OUT/cpu_bench.log"
      ;;
    dcs)
      if [[ -x "$B/dcs_bench" ]]; then
        "$B/dcs_bench" --csv "$OUT/dcs_bench.csv" > "$OUT/dcs_bench.log" 2>&1
        summary+=("dcs bench: exit $?")
        cat "$OUT/dcs_bench.log"
      fi
      ;;
    msm)
      if [[ -x "$B/pairmd_dcs_gpu_tests" ]]; then
        "$B/pairmd_dcs_gpu_tests" --gtest_filter='MsmGpu.*:DcsGpu.*' > "$OUT/msm_tests.log" 2>&1
        summary+=("msm/dcs gpu tests: exit $? ($(grep -E '^\[  (PASSED|FAILED)' "$OUT/msm_tests.log" | tr '\n' ' '))")
        grep -E '^  |FAILED|Failure' "$OUT/msm_tests.log" | head -80
      fi
      if [[ -x "$B/msm_bench" ]]; then
        "$B/msm_bench" --csv "$OUT/msm_bench.csv" > "$OUT/msm_bench.log" 2>&1
        summary+=("msm bench: exit $?")
        cat "$OUT/msm_bench.log"
      fi
      ;;
    msm_sanitize)
      export PAIRMD_SYNC_LAUNCHES=1
      for tool in memcheck racecheck; do
        compute-sanitizer --tool $tool --error-exitcode 99 "$B/pairmd_dcs_gpu_tests" \
          --gtest_filter='MsmGpu.OpenBoundary*:MsmGpu.Periodic*:MsmGpu.NoAtoms*' > "$OUT/sanitize_msm_$tool.log" 2>&1
        rc=$?
        summary+=("compute-sanitizer $tool (msm): exit $rc, $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitize_msm_$tool.log" | tail -1)")
      done
      unset PAIRMD_SYNC_LAUNCHES
      ;;
    rsqrt)
      if [[ -x "$B/dcs_bench" ]]; then
        "$B/dcs_bench" --cases large --kernels gather_coalesced,gather_mixed_rsqrt --cpu-planes 1 --csv "$OUT/rsqrt.csv" \
          > "$OUT/rsqrt.log" 2>&1
        summary+=("rsqrt bench: exit $?")
        cat "$OUT/rsqrt.log"
      fi
      ;;
    replicas)
      # Aggregate throughput of K replicas on one GPU: each rank is one replica with its own
      # CUDA context; the GPU time-slices between them (no MPS). 20,000 steps each.
      # REPLICAS_BACKEND / REPLICAS_STEPS / REPLICAS_CELLS: for trying the stage on a machine without a GPU.
      root=$PWD rb=${REPLICAS_BACKEND:-cuda} rs=${REPLICAS_STEPS:-20000}
      echo "N,K,mode,aggregate_steps_per_s,per_replica_steps_per_s,speedup_vs_K1,launcher" > "$OUT/replicas.csv"
      mpi_ok=0
      if [[ -f "$B/mpi/env.sh" ]]; then
        ( source "$B/mpi/env.sh"; mpirun --allow-run-as-root -np 1 true ) > "$OUT/replicas_mpi_probe.log" 2>&1 && mpi_ok=1
      fi
      [[ $mpi_ok == 1 ]] || echo "replicas: FALLBACK: the bundle's mpirun does not start ($(tail -3 "$OUT/replicas_mpi_probe.log" 2>/dev/null | tr '\n' ' ')); K plain processes instead" | tee -a "$OUT/replicas.log"
      for cells in ${REPLICAS_CELLS:-10 20}; do
        n=$((4 * cells * cells * cells))
        base=""
        for mode in independent exchange; do
          for k in 1 2 4 8; do
            [[ $mode == exchange && $k == 1 ]] && continue
            dir="$OUT/replicas_n${n}_${mode}_k${k}" && mkdir -p "$dir"
            sets=(--set "system.lattice.cells=$cells" --set steps=$rs --set 'output={thermo_every: 5000, progress: off}')
            if [[ $mode == independent ]]; then
              sets+=(--set "replicas={mode: independent, count: $k, exchange_every: 1000}")
            else
              sets+=(--set "replicas={count: $k, min_temperature: 1.2, max_temperature: 1.5, exchange_every: 100}")
            fi
            if [[ $mpi_ok == 1 ]]; then
              ( source "$B/mpi/env.sh"; cd "$dir" && OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE mpirun --allow-run-as-root --oversubscribe -np $k \
                  "$B/pairmd" run "$root/configs/lj_liquid.yaml" --backend $rb --output rep "${sets[@]}" ) > "$dir/run.log" 2>&1
              agg=$(sed -n 's/^ensemble: aggregate \([0-9.e+]*\) timesteps.*/\1/p' "$dir/run.log")
              launcher=mpirun
            else
              [[ $mode == exchange ]] && continue
              pids=()
              export OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE
              for ((r = 0; r < k; r++)); do
                "$B/pairmd" run configs/lj_liquid.yaml --backend $rb --output "$dir/plain$r" --set "system.lattice.cells=$cells" \
                  --set steps=$rs --set 'output={thermo_every: 5000, progress: off}' > "$dir/plain$r.log" 2>&1 &
                pids+=($!)
              done
              wait "${pids[@]}"
              agg=$(cat "$dir"/plain*.log | sed -n 's/^performance: .* = \([0-9.e+]*\) steps\/s.*/\1/p' | awk '{s+=$1} END {print s}')
              launcher=FALLBACK-processes
            fi
            [[ $k == 1 && $mode == independent ]] && base=$agg
            line="$n,$k,$mode,$agg,$(awk -v a="$agg" -v k=$k 'BEGIN{printf "%.1f", a/k}'),$(awk -v a="$agg" -v b="$base" 'BEGIN{if (b>0) printf "%.2f", a/b}'),$launcher"
            echo "$line" | tee -a "$OUT/replicas.csv"
            grep -E "^ensemble|^replica exchange|^  T |error" "$dir/run.log" 2>/dev/null | head -12 >> "$OUT/replicas.log"
          done
        done
      done
      summary+=("replicas: $(tail -n +2 "$OUT/replicas.csv" | tr '\n' ' ')")
      ;;
    ensembles)
      # Issue 31 (docs/ensembles.md; docs/benchmarks.md, "Ensembles on one GPU"): K copies of a
      # system in one set of kernels (bench/ensemble_bench.cpp), then replica exchange on one GPU
      # through `pairmd run` without mpirun (the replicas as threads sharing one ensemble).
      w=$(mktemp -d /tmp/pairmd_ens.XXXXXX)
      root=$PWD
      log=$OUT/ensembles.log
      : > "$log"
      (
        cd "$w" || exit 1
        "$B/pairmd" sop-build "$B/1tii.pdb" --chains D -o sop.yaml >> "$log" 2>&1
        "$B/pairmd" sop-build "$B/1tii.pdb" --chains D -o sop_langevin.yaml --integrator langevin >> "$log" 2>&1
        for sys in sop sop_langevin; do
          echo "== $sys: 98 beads x K" >> "$log"
          "$B/ensemble_bench" $sys.yaml --copies 1,64,256,1024,4096 --steps 2000 --warmup 1000 --repeats 3 \
            --csv "$OUT/ensemble_$sys.csv" >> "$log" 2>&1
          echo "ensemble_bench $sys: exit $?" >> "$log"
        done
      )
      for sys in "lj4000:configs/lj_liquid.yaml:10" "lj500:configs/lj_tempering.yaml:5"; do
        IFS=: read -r name cfg cells <<< "$sys"
        echo "== $name" >> "$log"
        "$B/ensemble_bench" "$cfg" --set system.lattice.cells=$cells --copies 1,4,16,64,256 --steps 2000 \
          --warmup 1000 --repeats 3 --set neighbor.skin=auto --set force.strategy=auto \
          --csv "$OUT/ensemble_$name.csv" >> "$log" 2>&1
        echo "ensemble_bench $name: exit $?" >> "$log"
      done
      # Replica exchange on one GPU: K replicas as threads, exchanges every 1000 steps; "bare"
      # writes only the exchange log, thermo every 5000 and the final checkpoints, "as
      # configured" keeps the config's trajectory, observables and checkpoints.
      for sys in "16:configs/lj_liquid.yaml:10" "64:configs/lj_tempering.yaml:5"; do
        IFS=: read -r k cfg cells <<< "$sys"
        for outputs in bare configured; do
          extra=()
          [[ $outputs == bare ]] && extra=(--set output.trajectory.every=0 --set output.trajectory.observables_every=0
                                           --set output.trajectory.velocities_every=0 --set output.checkpoint_every=0
                                           --set output.thermo_every=5000)
          echo "== replica exchange, $k replicas of $cfg (cells $cells), one GPU, outputs $outputs" >> "$log"
          (cd "$w" && rm -f rx$k.* && "$B/pairmd" run "$root/$cfg" --output "rx$k" --steps 20000 \
            --set system.lattice.cells=$cells \
            --set "replicas={count: $k, min_temperature: 1.2, max_temperature: 1.5, exchange_every: 1000}" \
            --set neighbor.skin=auto --set force.strategy=auto \
            "${extra[@]}" --set output.progress=off) >> "$log" 2>&1
          echo "replica exchange $k $outputs: exit $?" >> "$log"
        done
      done
      summary+=("ensembles: $(grep -c 'exit 0' "$log") runs exit 0, $(grep -c 'exit [1-9]' "$log") failed")
      grep -E '^[0-9]+ +[0-9]+ |^== |^tuning: chose [a-z_]+, skin [0-9.]+|ensemble: aggregate|ensemble: [0-9]+ meetings|exit [1-9]' "$log" | sed 's/ (ms\/step.*//'
      ;;
    ensemble_outputs)
      w=$(mktemp -d /tmp/pairmd_enso.XXXXXX)
      root=$PWD
      log=$OUT/ensemble_outputs.log
      : > "$log"
      none=(--set output.trajectory.every=0 --set output.trajectory.observables_every=0
            --set output.trajectory.velocities_every=0 --set output.checkpoint_every=0)
      for spec in "none:" "exchange1000:replicas.exchange_every=1000" "thermo200:output.thermo_every=200" \
                  "checkpoints:output.checkpoint_every=5000" \
                  "h5md_observables:output.trajectory.observables_every=200" \
                  "h5md_velocities:output.trajectory.velocities_every=200" \
                  "h5md_velocities_flush1000:output.trajectory.velocities_every=200;output.trajectory.flush_seconds=1000" \
                  "h5md_positions:output.trajectory.every=200" \
                  "gsd_positions:output.gsd={every: 200}" "gsd_velocities:output.gsd={every: 200, velocities: true}" \
                  "configured:"; do
        name=${spec%%:*}
        extra=()
        [[ $name != configured ]] && extra=("${none[@]}")
        IFS=';' read -ra sets <<< "${spec#*:}"
        for x in "${sets[@]}"; do extra+=(--set "$x"); done
        echo "== $name: ${extra[*]}" >> "$log"
        (cd "$w" && rm -f o.* && /usr/bin/time -f "%e s wall" "$B/pairmd" run "$root/configs/lj_tempering.yaml" \
          --output o --steps 20000 --set "replicas={count: 64, min_temperature: 1.2, max_temperature: 1.5, exchange_every: 200}" \
          --set output.progress=off "${extra[@]}") >> "$log" 2>&1
        echo "$name: exit $?" >> "$log"
      done
      summary+=("ensemble_outputs: $(grep -c ': exit 0' "$log") runs exit 0, $(grep -c ': exit [1-9]' "$log") failed")
      grep -E '^== |^performance|ensemble: aggregate|s wall$|exit [1-9]' "$log" | cut -c1-120
      ;;
    ensemble_profile)
      # Issue 31: where an ensemble's step goes. Kernel durations (Nsight Compute, as `profile`)
      # of 64 copies of the 500-particle tempering liquid and 1,024 copies of the 98-bead SOP
      # model, 2,000 launches after the first 4,000 (past the warm-up's melt), grouped by kernel.
      w=$(mktemp -d /tmp/pairmd_ensp.XXXXXX)
      "$B/pairmd" sop-build "$B/1tii.pdb" --chains D -o "$w/sop.yaml" > "$OUT/ensemble_profile.log" 2>&1
      for sys in "lj500x64:$PWD/configs/lj_tempering.yaml:64" "sopx1024:$w/sop.yaml:1024"; do
        IFS=: read -r name cfg k <<< "$sys"
        (cd "$w" && "$B/ensemble_bench" "$cfg" --copies "$k" --steps 2000 --warmup 1000 --repeats 3) \
          >> "$OUT/ensemble_profile.log" 2>&1
        (cd "$w" && ncu --metrics gpu__time_duration.sum --cache-control none --clock-control none \
          --launch-skip 4000 --launch-count 2000 --csv --page raw \
          "$B/ensemble_bench" "$cfg" --copies "$k" --steps 600 --warmup 1000 --repeats 1) \
          > "$OUT/ncu_raw_$name.csv" 2>> "$OUT/ensemble_profile.log"
        summary+=("ensemble_profile $name: exit $?")
        echo "== $name" | tee -a "$OUT/kernel_times_ensembles.txt"
        python3 scripts/kernel_times.py "$OUT/ncu_raw_$name.csv" | tee -a "$OUT/kernel_times_ensembles.txt"
      done
      grep -E '^[0-9]+ +[0-9]+ ' "$OUT/ensemble_profile.log"
      # The fused sum-and-integrate kernel of the SOP ensemble in detail (throughput, stalls).
      (cd "$w" && ncu --set full -k regex:integrate_slots --launch-skip 300 --launch-count 1 \
        "$B/ensemble_bench" sop.yaml --copies 1024 --steps 300 --warmup 300 --repeats 1) \
        > "$OUT/ncu_detail_sopx1024.txt" 2>&1
      grep -E 'Duration|Throughput|Registers|Achieved Occupancy|Stall|L1/TEX Hit|L2 Hit|Warp Cycles|Issued' \
        "$OUT/ncu_detail_sopx1024.txt" | head -40
      ;;
    tuned)
      # Issue 33: what start-up tuning (docs/gpu.md) gives on the shipped workloads: each strategy
      # at its best skin (neighbor.skin auto) and force.strategy auto, `pairmd compare`.
      for spec in "lj_liquid:4000,62500,1000188" "kremer_grest:64000" "polyelectrolyte:135000"; do
        cfg=${spec%%:*}
        "$B/pairmd" compare configs/$cfg.yaml --sizes ${spec#*:} --strategies pair_slots_fused,pair_warp,auto \
          --set neighbor.skin=auto --steps 200 --repeats 3 --warmup 500 --no-reference --out "$OUT/tuned_$cfg" \
          > "$OUT/tuned_$cfg.log" 2>&1
        summary+=("tuned $cfg: exit $?")
        grep -E "^N =|^(pair_|atom_|auto)|^tuning: chose" "$OUT/tuned_$cfg.log" | sed 's/ (ms\/step.*//'
      done
      ;;
    ensemble_sweep)
      # Issues 31 and 33: the ensembles' speed against the skin and the strategy (ensemble_bench,
      # median of 3 repeats of 2,000 steps after 1,000), to see what the defaults leave.
      w=$(mktemp -d /tmp/pairmd_enss.XXXXXX)
      "$B/pairmd" sop-build "$B/1tii.pdb" --chains D -o "$w/sop.yaml" > /dev/null 2>&1
      csv=$OUT/ensemble_sweep.csv
      echo "system,copies,skin,strategy,steps_per_s" > "$csv"
      sweep() {  # name config copies skin strategy [more --set]
        local name=$1 cfg=$2 k=$3 skin=$4 strat=$5; shift 5
        local line
        line=$(cd "$w" && "$B/ensemble_bench" "$cfg" --copies "$k" --steps 2000 --warmup 1000 --repeats 3 \
          --set neighbor.skin=$skin --set force.strategy=$strat "$@" 2>&1 | grep -E "^$k +[0-9]+ " | tail -1)
        echo "$name,$k,$skin,$strat,$(echo "$line" | awk '{print $3}')" | tee -a "$csv"
      }
      for skin in 0.3 0.4 0.5 0.6 0.8; do sweep lj500 "$PWD/configs/lj_tempering.yaml" 64 $skin pair_slots_fused; done
      for strat in atom_gather pair_warp pair_slots; do sweep lj500 "$PWD/configs/lj_tempering.yaml" 64 0.3 $strat; done
      for skin in 0.3 0.4 0.5; do
        sweep lj4000 "$PWD/configs/lj_liquid.yaml" 16 $skin pair_slots_fused --set system.lattice.cells=10
      done
      for skin in 1 2 4 6; do sweep sop "$w/sop.yaml" 1024 $skin pair_slots_fused; done
      for strat in atom_gather pair_warp pair_atomic pair_slots; do sweep sop "$w/sop.yaml" 1024 4 $strat; done
      summary+=("ensemble_sweep: $(grep -c ',[0-9.]*$' "$csv") rows")
      ;;
    sop)
      # Issue 20 (docs/benchmarks.md, "Coarse-grained proteins"). sop-build writes relative
      # paths: build and run inside the scratch directory.
      w=$(mktemp -d /tmp/pairmd_sop.XXXXXX)
      (
        cd "$w" || exit 1
        pdb=$B/1tii.pdb
        log=$OUT/sop.log
        : > "$log"
        "$B/pairmd" sop-build "$pdb" --chains D -o one.yaml >> "$log" 2>&1
        "$B/pairmd" sop-build "$pdb" --chains D -o one_langevin.yaml --integrator langevin >> "$log" 2>&1
        "$B/pairmd" sop-build "$pdb" --chains D --copies 1024 -o k1.yaml >> "$log" 2>&1
        "$B/pairmd" sop-build "$pdb" --chains D --copies 1024 -o k1_langevin.yaml --integrator langevin >> "$log" 2>&1
        "$B/pairmd" sop-build "$pdb" --chains D --copies 10240 -o k10.yaml >> "$log" 2>&1
        quiet=(--set output.progress=off --set output.trajectory.every=0)
        # GPU, every strategy; then the CPU backend on every core (fewer steps: it is slow).
        for sys in one:5000 one_langevin:5000 k1:1000 k1_langevin:1000 k10:300; do
          name=${sys%%:*} steps=${sys##*:}
          echo "== $name: every strategy, $steps steps" >> "$log"
          "$B/pairmd" compare $name.yaml --steps $steps --repeats 3 --warmup 1000 --no-reference "${quiet[@]}" \
            --out "$OUT/sop_$name" >> "$log" 2>&1
          echo "compare $name: exit $?" >> "$log"
        done
        for sys in one:2000 k1:50 k10:5; do
          name=${sys%%:*} steps=${sys##*:}
          echo "== $name: cpu, $(nproc) threads, $steps steps" >> "$log"
          "$B/pairmd" compare $name.yaml --strategies cpu --steps $steps --repeats 1 --warmup 2 --no-reference \
            "${quiet[@]}" --out "$OUT/sop_${name}_cpu" >> "$log" 2>&1
          echo "compare $name cpu: exit $?" >> "$log"
        done
        # Overdamped dynamics moves beads far per step (noise sqrt(2 D dt) ~ 0.1 A): list builds
        # per step against the skin, and what they cost, at 100k beads.
        for skin in 1 2 3 4; do
          echo "== k1 brownian skin $skin" >> "$log"
          "$B/pairmd" compare k1.yaml --strategies pair_slots_fused,atom_gather --steps 1000 --repeats 3 --warmup 1000 \
            --no-reference "${quiet[@]}" --set neighbor.skin=$skin --out "$OUT/sop_skin_$skin" >> "$log" 2>&1
          echo "compare skin $skin: exit $?" >> "$log"
        done
      )
      summary+=("sop: $(grep -c 'exit 0' "$OUT/sop.log") of 13 compares exit 0; $(ls "$OUT"/sop_*.csv 2>/dev/null | wc -l) CSVs")
      rm -rf "$w"
      ;;
    sop_skin)
      # sop-build's default skin: the default strategy on 1,024 copies of 1TII chain D (100,352
      # beads), overdamped (brownian) and underdamped (langevin), skins 1-5 A; sop_skin.log
      w=$(mktemp -d /tmp/pairmd_sop.XXXXXX)
      (
        cd "$w" || exit 1
        "$B/pairmd" sop-build "$B/1tii.pdb" --chains D --copies 1024 -o k1.yaml > /dev/null 2>&1
        "$B/pairmd" sop-build "$B/1tii.pdb" --chains D --copies 1024 -o k1_langevin.yaml --integrator langevin > /dev/null 2>&1
        for sys in k1 k1_langevin; do
          for skin in 1 2 3 4 5; do
            "$B/pairmd" compare $sys.yaml --strategies pair_slots_fused --steps 1000 --repeats 3 --warmup 1000 \
              --no-reference --set output.progress=off --set output.trajectory.every=0 --set neighbor.skin=$skin \
              --out "$w/skin_${sys}_$skin" 2>&1 | grep -E "^pair_slots_fused|lj list|steps per graph" | sed "s/^/$sys skin $skin: /"
          done
        done
      ) | tee "$OUT/sop_skin.log"
      summary+=("sop_skin: $(grep -c '^k1.*skin.*pair_slots_fused ' "$OUT/sop_skin.log") of 10 runs")
      rm -rf "$w"
      ;;
    multi_gpu)
      # Issue 17, on a machine with several GPUs: temperature replica exchange with one rank per
      # GPU, then 2 and 4 ranks per GPU, on the LJ liquid (N = 62,500) and the Kremer-Grest melt
      # (64,000 beads): aggregate timesteps/s against one replica on one GPU, the cost of a
      # meeting of the ranks, the mean acceptance (multi_gpu.csv, mg_*/run.log). Then, on every
      # GPU, the ensemble's files read back (pairmd demux) and a restart checked bit for bit
      # (thermo rows, exchange log and walk of a stopped-and-restarted run = the straight run's).
      if [[ ! -f "$B/mpi/env.sh" ]]; then summary+=("multi_gpu: no Open MPI in the bundle"); continue; fi
      ngpu=$(nvidia-smi -L | wc -l)
      echo "system,N,gpus,K,ranks_per_gpu,aggregate_steps_per_s,speedup_vs_one_replica,meeting_ms,mean_acceptance" > "$OUT/multi_gpu.csv"
      for sys in lj kg; do
        if [[ $sys == lj ]]; then
          cfg=$PWD/configs/lj_liquid.yaml n=62500 size=(--set system.lattice.cells=25) lo=1.2 hi=1.5
        else
          cfg=$PWD/configs/kremer_grest.yaml n=64000 size=(--set system.chains.count=1280) lo=1.0 hi=1.2
        fi
        base=""
        for k in 1 "$ngpu" $((2 * ngpu)) $((4 * ngpu)); do
          dir=$OUT/mg_${sys}_k$k && mkdir -p "$dir"
          if [[ $k == 1 ]]; then rep="replicas={mode: independent, count: 1, exchange_every: 1000}"
          else rep="replicas={count: $k, min_temperature: $lo, max_temperature: $hi, exchange_every: 100}"; fi
          ( source "$B/mpi/env.sh"; cd "$dir" && OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE \
              mpirun --allow-run-as-root --oversubscribe -np "$k" "$B/pairmd" run "$cfg" --backend cuda --output mg \
              "${size[@]}" --set steps=10000 --set 'output={thermo_every: 5000, progress: off}' --set "$rep" ) \
            > "$dir/run.log" 2>&1
          rc=$?
          agg=$(sed -n 's/^ensemble: aggregate \([0-9.e+]*\) timesteps.*/\1/p' "$dir/run.log")
          meet=$(sed -n 's/^ensemble: [0-9]* meetings of the ranks, \([0-9.e+]*\) ms each.*/\1/p' "$dir/run.log")
          acc=$(awk '/^  T .*<->/ {s += $5; c++} END {if (c) printf "%.3f", s / c}' "$dir/run.log")
          [[ $k == 1 ]] && base=$agg
          echo "$sys,$n,$ngpu,$k,$(awk -v k=$k -v g=$ngpu 'BEGIN{printf "%g", (k < g ? k : k / g)}'),$agg,$(awk -v a="$agg" -v b="$base" 'BEGIN{if (b > 0) printf "%.2f", a / b}'),$meet,$acc" |
            tee -a "$OUT/multi_gpu.csv"
          [[ $rc == 0 ]] || { echo "multi_gpu: $sys K=$k exit $rc"; tail -5 "$dir/run.log"; }
        done
      done
      # Files readable and restart bitwise, one rank per GPU (a small liquid, 2,000 steps).
      d=$OUT/mg_restart && mkdir -p "$d"
      lj=$PWD/configs/lj_liquid.yaml
      (
        source "$B/mpi/env.sh"; cd "$d" || exit 1
        run=(mpirun --allow-run-as-root --oversubscribe -np "$ngpu" "$B/pairmd" run "$lj")
        common=(--backend cuda --set system.lattice.cells=10 --set steps=2000
                --set "replicas={count: $ngpu, min_temperature: 1.2, max_temperature: 1.4, exchange_every: 50}"
                --set 'output={thermo_every: 100, checkpoint_every: 1000, progress: off, trajectory: {every: 100}}')
        "${run[@]}" "${common[@]}" --output straight > straight.log 2>&1 || echo "straight run failed"
        "${run[@]}" "${common[@]}" --output part --steps 1000 > part1.log 2>&1 || echo "first half failed"
        "${run[@]}" "${common[@]}" --restart 'part.r{replica}.checkpoint.h5' --steps 2000 > part2.log 2>&1 || echo "restart failed"
        same=1
        for f in straight.r*.thermo.csv; do
          g=part${f#straight}
          cmp -s <(cut -d, -f1-7 "$f") <(cut -d, -f1-7 "$g") || { echo "differs: $f $g"; same=0; }
        done
        for f in exchange.csv walk.csv; do cmp -s straight.$f part.$f || { echo "differs: $f"; same=0; }; done
        echo "restart bitwise: $same"
        "$B/pairmd" demux straight > demux.log 2>&1 && echo "demux: files read back, $(ls straight.T*.h5 2>/dev/null | wc -l) per-temperature trajectories" || echo "demux failed: $(tail -2 demux.log)"
      ) 2>&1 | tee "$OUT/multi_gpu_restart.log"
      summary+=("multi_gpu: $(tail -n +2 "$OUT/multi_gpu.csv" | tr '\n' ' '); $(tr '\n' ' ' < "$OUT/multi_gpu_restart.log")")
      ;;
    perrank)
      if [[ ! -f "$B/mpi/env.sh" ]]; then summary+=("perrank: no Open MPI in the bundle"); continue; fi
      d=$OUT/perrank && mkdir -p "$d"
      lj=$PWD/configs/lj_liquid.yaml
      (
        source "$B/mpi/env.sh"; cd "$d" || exit 1
        export OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE
        mpi=(mpirun --allow-run-as-root --oversubscribe)
        common=(--backend cuda --set system.lattice.cells=10 --set steps=2000
                --set "replicas={count: 8, min_temperature: 1.2, max_temperature: 1.5, exchange_every: 50}"
                --set 'output={thermo_every: 100, checkpoint_every: 1000, progress: off, trajectory: {every: 100}}')
        "$B/pairmd" run "$lj" "${common[@]}" --output th > th.log 2>&1 || echo "8 threads: failed: $(tail -3 th.log)"
        "${mpi[@]}" -np 2 "$B/pairmd" run "$lj" "${common[@]}" --output hy > hy.log 2>&1 || echo "2 x 4: failed: $(tail -3 hy.log)"
        "${mpi[@]}" -np 8 "$B/pairmd" run "$lj" "${common[@]}" --output fr > fr.log 2>&1 || echo "8 x 1: failed: $(tail -3 fr.log)"
        "${mpi[@]}" -np 2 "$B/pairmd" run "$lj" "${common[@]}" --output part --steps 1000 > part1.log 2>&1 || echo "2 x 4 first half failed"
        "${mpi[@]}" -np 2 "$B/pairmd" run "$lj" "${common[@]}" --restart 'part.r{replica}.checkpoint.h5' --steps 2000 \
          > part2.log 2>&1 || echo "2 x 4 restart failed"
        grep -m1 '^replicas:' hy.log
        for other in th fr part; do
          same=1
          for f in hy.r*.thermo.csv; do
            cmp -s <(cut -d, -f1-7 "$f") <(cut -d, -f1-7 "$other${f#hy}") || { echo "differs: $f $other${f#hy}"; same=0; }
          done
          for f in exchange.csv walk.csv; do cmp -s hy.$f $other.$f || { echo "differs: $other.$f"; same=0; }; done
          echo "2 x 4 against $other: same $same"
        done
        for r in th hy fr; do echo "$r: $(grep -m1 '^ensemble: aggregate' $r.log)"; done
        "$B/pairmd" demux hy > demux.log 2>&1 && echo "demux: $(ls hy.T*.h5 2>/dev/null | wc -l) per-temperature trajectories" || echo "demux failed: $(tail -2 demux.log)"
      ) 2>&1 | tee "$OUT/perrank.log"
      summary+=("perrank: $(tr '\n' ' ' < "$OUT/perrank.log")")
      ;;
    *) echo "unknown stage $stage" ;;
  esac
done
echo "=== summary"
printf '%s\n' "${summary[@]}" | tee "$OUT/summary.txt"
# The device tool brings back at most 8 files: more go back as one archive (out.tgz).
if (( $(find "$OUT" -type f | wc -l) > 8 )); then
  tar -czf /tmp/pairmd_out.tgz -C "$OUT" . && rm -rf "${OUT:?}"/* && mv /tmp/pairmd_out.tgz "$OUT/out.tgz"
fi
