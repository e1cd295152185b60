// pairmd check CONFIG: everything `run` validates, and the system it would build, without
// running or writing anything.
#include <iostream>
#include <sstream>

#include "backends/cpu_backend.h"
#include "backends/strategies.h"
#include "cli/run_setup.h"
#include "engine/map_registry.h"
#include "engine/time_step_check.h"
#include "integrators/registry.h"
#include "potentials/registry.h"

namespace pairmd::cli {

namespace {

// Iterations x particles x partners of the minimisation check is willing to do: about 5 s on two
// cores (2000 steepest-descent steps of configs/kremer_grest.yaml's 2000 beads are 0.9e8).
constexpr double kMinimizeWork = 1e8;

// What the config language offers, from the registries: the footer of `pairmd check --help`.
std::string config_choices() {
  std::ostringstream s;
  s << "The config's choices (docs/config.md):\n  pair potentials (force_field.pair[k].potential):\n";
  for (const PairPotentialInfo& p : kPairPotentials) s << "    " << p.name << ": " << p.formula << "\n";
  s << "  bond potentials (force_field.bonds[k].potential):\n";
  for (const BondPotentialInfo& b : kBondPotentials) s << "    " << b.name << ": " << b.formula << "\n";
  auto bonded = [&](const char* what, const auto& registry) {
    s << "  " << what << ":\n";
    for (const auto& b : registry) s << "    " << b.name << ": " << b.formula << " (LAMMPS " << b.lammps_style << ")\n";
  };
  bonded("angle potentials (force_field.angles[k].potential)", kAnglePotentials);
  bonded("dihedral potentials (force_field.dihedrals[k].potential)", kDihedralPotentials);
  bonded("improper potentials (force_field.impropers[k].potential)", kImproperPotentials);
  s << "  integrators (integrator.kind):\n";
  for (const IntegratorInfo& i : kIntegrators) s << "    " << i.name << ": " << i.doc << "\n";
  s << "  GPU force strategies (force.strategy): " << choice_list(strategy_names(true)) << "\n";
  s << "  potential-map kernels (analysis.potential_map.kernel): " << choice_list(map_kernel_names()) << "\n";
  s << "  potential-map methods (analysis.potential_map.method): " << choice_list(map_method_names()) << "\n";
  return s.str();
}

// The check: everything `run` validates, the system built (and minimised where that is quick),
// its start forces, and the memory the run needs.
int check(const ConfigOptions& o) {
  try {
    const RunConfig cfg = load_with_options(o);
    check_storable_names(cfg);
    // What check itself does (build the system, forces on it with the CPU reference) must fit
    // here; what the run needs is reported, and only noted when this machine could not hold it.
    check_build_memory(cfg, "cpu");
    // The minimisation is the one part of building that grows with a setting as well as with the
    // size (iterations x particles x partners): past a few seconds of work check builds without it.
    BuildOptions build;
    build.minimize = false;
    BuiltSystem sys = build_system(cfg, build);
    std::string skipped;
    const MinimizeSpec& min = cfg.minimize;
    if (min.algorithm != MinimizeAlgorithm::None) {
      const SystemSize built = built_size(sys.state, static_cast<int64_t>(sys.topology.bonds.size()));
      double partners = 1;
      for (const PairTerm& t : cfg.model.force_field.pair_terms)
        partners += 2 * pairs_per_particle(t, cfg.model.neighbor.skin, built);
      const double iterations = static_cast<double>(std::min(min.max_iterations, min.max_evaluations));
      if (iterations * static_cast<double>(built.particles) * partners > kMinimizeWork) {
        skipped = "note: the minimisation (up to " + std::to_string(static_cast<int64_t>(iterations)) +
                  " iterations of " + std::to_string(built.particles) +
                  " particles) is left to the run; the system was checked unminimised";
      } else {
        build.minimize = true;
        build.minimize_backend = "cpu";
        sys = build_system(cfg, build);
      }
    }
    const SystemSize size = built_size(sys.state, static_cast<int64_t>(sys.topology.bonds.size()));
    const double held = 80.0 * static_cast<double>(size.particles);
    require_memory(cfg, estimate_run_memory(cfg, "cpu", size, 0), size, available_host_memory(), held);
    {
      const Model model = make_model(cfg, sys);
      try {
        CpuBackend reference(model, sys.state);
        check_start_forces(cfg, sys.state, reference.forces());
      } catch (const SimulationBlowup& e) {
        // A bond already beyond its maximum extension in the start state: the input's doing.
        throw ConfigError(cfg.path + ": system: the start configuration cannot be used: " + e.what());
      }
    }
    const MemoryEstimate need =
        estimate_run_memory(cfg, planned_backend(cfg), size, potential_map_points(cfg, sys.state));
    if (!need.impossible.empty()) throw ConfigError(size_key(cfg) + ": " + need.impossible);
    std::cout << o.config_path << ": ok\n"
              << describe_system(cfg, sys) << "steps: " << cfg.steps << "\n"
              << describe_memory(need, size) << "\n";
    if (!skipped.empty()) std::cout << skipped << "\n";
    for (const std::string& w : time_step_warnings(cfg, sys.state, sys.topology))
      std::cerr << "pairmd check: warning: " << w << "\n";
    try {
      require_memory(cfg, need, size, available_host_memory(), held);
    } catch (const ConfigError& e) {
      std::cout << "note: a run would be refused on this machine: " << e.what() << "\n";
    }
    return kExitOk;
  } catch (const ConfigError& e) {
    std::cerr << e.what() << "\n";
    return kExitUsage;
  }
}

}  // namespace

Command add_check(CLI::App& app) {
  CLI::App* sub = add_command(
      app, "check", "validate CONFIG (and the system it builds) without running; exit 2 on error",
      std::string("Validate CONFIG and the system it builds, without running or writing anything; exit 2 on error.") +
          "\n" + config_choices());
  auto o = std::make_shared<ConfigOptions>();
  add_config_options(*sub, *o, true);
  return [o](const Args&) { return check(*o); };
}

}  // namespace pairmd::cli
