// pairmd: the command-line entry point. Dispatches to the subcommands in this folder.
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <string>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "base/host_threads.h"
#include "base/version.h"
#include "cli/commands.h"
#include "replicas/communicator.h"

namespace {

const char* kUsage = R"(pairmd )" PAIRMD_VERSION R"( - Langevin molecular dynamics on a GPU (and a CPU reference)

usage:
  pairmd run CONFIG [--backend cpu|cuda|auto] [--steps N] [--strategy S]
                    [--set key.path=value]... [--output PREFIX] [--overwrite]
  pairmd run [CONFIG] --restart CHECKPOINT [--steps N] [--set key.path=value]... [--output PREFIX]
  pairmd check CONFIG [--set key.path=value]...
  pairmd minimize CONFIG [--backend cpu|cuda|auto] [--set key.path=value]... [--output PREFIX] [--overwrite]
  pairmd compare CONFIG [--strategies a,b,..] [--steps N] [--sizes n1,n2,..] [--out PREFIX]
  pairmd potential-map TRAJECTORY.h5|--config CONFIG [--frames a:b:s] [--spacing h] [--out map.dx] ...
  pairmd place-ions --config CONFIG --count K --type NAME --min-distance d [--out OUT.yaml] ...
  pairmd sop-build STRUCTURE.pdb|.cif -o OUT.yaml [--chains A,B] [--pull [T,P]] [--copies K] ...
  pairmd demux PREFIX [--out OUT]   per-temperature trajectories of a replica-exchange run
  mpirun -np K pairmd run CONFIG    K replicas (the config's replicas section; docs/replicas.md)
  pairmd --version | --help

  run            run the simulation described by CONFIG (YAML; see docs/config.md); it refuses an
                 output prefix in use or holding an earlier run's files (--overwrite replaces
                 them; --restart continues the run of a checkpoint; docs/output.md)
  check          validate CONFIG (and the system it builds) without running; exit 2 on error
  minimize       minimise the energy of CONFIG's system (FIRE) and write it as a run of 0 steps
                 that `run --restart` continues (docs/minimize.md)
  compare        time the GPU force-summation strategies on CONFIG's system (docs/strategies.md)
  potential-map  electrostatic potential map of trajectory frames (docs/potential_maps.md)
  place-ions     place ions at the extrema of the potential map (docs/potential_maps.md)
  sop-build      the Self-Organized Polymer model of the proteins of a PDB or mmCIF file, as a
                 config that `run` runs as it is (docs/proteins.md)
  demux          one trajectory per temperature from a replica-exchange ensemble (docs/replicas.md)

  pairmd COMMAND --help   the options of a command

exit codes: 0 success, 1 the run failed, 2 bad input (nothing written), 130 interrupted
)";

}  // namespace

namespace {

int run_command(int argc, char** argv);

// OpenMP threads that spin while they wait (libgomp's default: ~300,000 turns at every
// meeting) take the cores from the thread they wait for when other processes keep the cores
// busy: runs many times slower than with one thread (docs/benchmarks.md, "CPU backend
// threads"). libgomp reads OMP_WAIT_POLICY once, when it is loaded, before main: so pairmd
// starts itself again with it set, unless the user set it (or GOMP_SPINCOUNT) or one thread
// runs. Where that fails (no /proc), it goes on with the runtime's default.
void restart_with_passive_openmp_wait(char** argv) {
#ifdef _OPENMP
  const int max_threads = omp_get_max_threads();
#else
  const int max_threads = 1;
#endif
  if (!pairmd::wants_passive_wait_restart(std::getenv("OMP_WAIT_POLICY"), std::getenv("GOMP_SPINCOUNT"), max_threads))
    return;
  setenv("OMP_WAIT_POLICY", "passive", 1);
  execv("/proc/self/exe", argv);
  unsetenv("OMP_WAIT_POLICY");
}

// How idle OpenMP threads wait, for --version.
std::string openmp_wait_policy() {
  for (const char* name : {"OMP_WAIT_POLICY", "GOMP_SPINCOUNT"}) {
    const char* v = std::getenv(name);
    if (v && *v) return std::string(name) + "=" + v;
  }
#ifdef _OPENMP
  if (omp_get_max_threads() > 1) return "the OpenMP runtime's default";
#endif
  return "no thread waits (one thread)";
}

}  // namespace

// MPI (where pairmd was built with it and mpirun started it) lives as long as the command.
int main(int argc, char** argv) {
  restart_with_passive_openmp_wait(argv);
  pairmd::configure_host_threads();
  pairmd::init_world(&argc, &argv);
  const int rc = run_command(argc, argv);
  pairmd::finalize_world();
  return rc;
}

namespace {

int run_command(int argc, char** argv) {
  using namespace pairmd::cli;
  if (argc < 2) {
    std::cerr << kUsage;
    return kExitUsage;
  }
  const std::string cmd = argv[1];
  const Args args(argv + 2, argv + argc);
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    std::cout << kUsage;
    return kExitOk;
  }
  if (cmd == "--version" || cmd == "version") {
    std::cout << "pairmd " << PAIRMD_VERSION << "\n"
              << "mpi: " << (pairmd::mpi_built() ? "yes" : "no")
              << " (replica ensembles over mpirun; docs/replicas.md)\n"
              << "cpu threads: " << pairmd::configure_host_threads() << "\n"
              << "idle threads wait: " << openmp_wait_policy() << "\n";
    return kExitOk;
  }
  // The subcommands, one file each in cli/; each parses its own options (with --help).
  struct Command {
    const char* name;
    int (*run)(const Args&);
  };
  static const Command kCommands[] = {{"run", cmd_run},
                                      {"check", cmd_check},
                                      {"minimize", cmd_minimize},
                                      {"compare", cmd_compare},
                                      {"potential-map", cmd_potential_map},
                                      {"place-ions", cmd_place_ions},
                                      {"sop-build", cmd_sop_build},
                                      {"demux", cmd_demux}};
  for (const Command& c : kCommands) {
    if (cmd != c.name) continue;
    try {
      return c.run(args);
    } catch (const std::exception& e) {
      std::cerr << "pairmd " << cmd << ": error: " << e.what() << "\n";
      // The other ranks of an ensemble may be waiting for this one: end them all.
      if (pairmd::world().size() > 1) pairmd::world().abort(kExitFailure);
      return kExitFailure;
    }
  }
  std::cerr << "pairmd: unknown command '" << cmd << "'\n\n" << kUsage;
  return kExitUsage;
}

}  // namespace
