// pairmd: the command-line entry point. Dispatches to the subcommands in this folder.
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "base/host_threads.h"
#include "base/version.h"
#include "cli/commands.h"
#include "replicas/communicator.h"

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

// The words of the command line after the command's name (the log records them).
pairmd::cli::Args words_after(int argc, char** argv, const std::string& command) {
  int k = 1;
  while (k < argc && command != argv[k]) ++k;
  return pairmd::cli::Args(argv + std::min(k + 1, argc), argv + argc);
}

std::string version_text() {
  std::ostringstream v;
  v << "pairmd " << PAIRMD_VERSION << "\n"
    << "mpi: " << (pairmd::mpi_built() ? "yes" : "no") << " (replica ensembles over mpirun; docs/replicas.md)\n"
    << "cpu threads: " << pairmd::configure_host_threads() << "\n"
    << "idle threads wait: " << openmp_wait_policy() << "\n";
  return v.str();
}

// A bad command line: the command's message and usage (usage_error), or the program's.
int bad_command_line(const CLI::App& app, const CLI::ParseError& e, int argc, char** argv) {
  using namespace pairmd::cli;
  const std::vector<CLI::App*> commands = app.get_subcommands();
  std::string what = e.what();
  // An option without its value: CLI11 says "--name: 1 required TEXT missing".
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&e) && what.find(':') != std::string::npos)
    what = what.substr(0, what.find(':')) + " needs a value";
  if (!commands.empty()) return usage_error(*commands[0], what);
  if (argc > 1 && argv[1][0] != '-')
    std::cerr << "pairmd: unknown command '" << argv[1] << "'\n\n";
  else
    std::cerr << "pairmd: " << what << "\n\n";
  std::cerr << app.help();
  return kExitUsage;
}

int run_command(int argc, char** argv) {
  using namespace pairmd::cli;
  CLI::App app{"pairmd " PAIRMD_VERSION " - Langevin molecular dynamics on a GPU (and a CPU reference)", "pairmd"};
  app.get_formatter()->column_width(34);
  bool version = false;
  app.add_flag("--version", version, "the version, whether MPI is built in, the CPU threads");
  app.footer(
      "mpirun -np K pairmd run CONFIG runs the K replicas of the config's replicas section (docs/replicas.md).\n"
      "pairmd COMMAND --help lists the options of a command.\n"
      "exit codes: 0 success, 1 the run failed, 2 bad input (nothing written), 130 interrupted");
  // The commands, one file each in cli/; `help` and `version` as words do what the options do.
  const std::pair<const char*, Command> commands[] = {{"run", add_run(app)},
                                                      {"check", add_check(app)},
                                                      {"minimize", add_minimize(app)},
                                                      {"compare", add_compare(app)},
                                                      {"potential-map", add_potential_map(app)},
                                                      {"place-ions", add_place_ions(app)},
                                                      {"sop-build", add_sop_build(app)},
                                                      {"demux", add_demux(app)}};
  const CLI::App* help_word = app.add_subcommand("help", "")->group("");
  const CLI::App* version_word = app.add_subcommand("version", "")->group("");
  app.require_subcommand(0, 1);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    return kExitOk;
  } catch (const CLI::ParseError& e) {
    return bad_command_line(app, e, argc, argv);
  }
  if (version || version_word->parsed()) {
    std::cout << version_text();
    return kExitOk;
  }
  if (help_word->parsed()) {
    std::cout << app.get_formatter()->make_help(&app, app.get_name(), CLI::AppFormatMode::Normal);
    return kExitOk;
  }
  for (const auto& [name, run] : commands) {
    if (!app.got_subcommand(name)) continue;
    try {
      return run(words_after(argc, argv, name));
    } catch (const std::exception& e) {
      std::cerr << "pairmd " << name << ": error: " << e.what() << "\n";
      // The other ranks of an ensemble may be waiting for this one: end them all.
      if (pairmd::world().size() > 1) pairmd::world().abort(kExitFailure);
      return kExitFailure;
    }
  }
  std::cerr << app.help();
  return kExitUsage;
}

}  // namespace
