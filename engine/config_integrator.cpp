// The sections of the equations of motion and their GPU settings: `integrator`, `force`
// (the force-summation strategy) and `neighbor` (the lists' skin).
#include "backends/tuning.h"
#include "engine/config_schema.h"

namespace pairmd::config {

void read_integrator(const Map& root, RunConfig& cfg) {
  if (!root.has("integrator")) root.missing("integrator", "kind, dt, temperature, friction, seed");
  Map m(root.ctx(), root.node("integrator"), "integrator",
        {"kind", "dt", "temperature", "friction", "seed", "max_step_displacement"});
  IntegratorSettings& s = cfg.model.integrator;
  const IntegratorInfo& info = *find_integrator(m.choice("kind", kIntegrators[0].name, names_of(kIntegrators)));
  s.kind = info.kind;
  s.dt = m.number_required("dt", 0.0, kInf, true, "a time step > 0");
  if (info.thermostat) {
    s.temperature = m.number_required("temperature", 0.0, kInf, false, "a temperature >= 0");
  } else {
    s.temperature = m.number("temperature", 0.0, 0.0, kInf);
  }
  s.friction = m.number("friction", 1.0, 0.0, kInf, true);
  s.seed = static_cast<uint64_t>(m.integer("seed", 1, 0, kMaxInt));
  cfg.model.max_step_displacement = m.number("max_step_displacement", 0.5, 0.0, kInf, true);
  if (m.has("max_step_displacement"))
    cfg.locations["integrator.max_step_displacement"] = m.where("max_step_displacement");
}

void read_force(const Map& root, RunConfig& cfg) {
  if (!root.has("force")) return;
  Map f(root.ctx(), root.node("force"), "force", {"strategy"});
  cfg.model.strategy = f.choice("strategy", strategy_name(kDefaultStrategy), strategy_names(true));
}

void read_neighbor(const Map& root, RunConfig& cfg) {
  if (!root.has("neighbor")) {
    cfg.locations["neighbor.skin"] = root.ctx().file;
    return;
  }
  Map n(root.ctx(), root.node("neighbor"), "neighbor", {"skin", "initial_capacity_per_particle"});
  if (n.has("skin") && n.node("skin").IsScalar() && n.node("skin").Scalar() == "auto") {
    // Tuned by the CUDA backend at start (backends/tuning.h); this value is the CPU backend's.
    cfg.model.neighbor.skin_auto = true;
    cfg.model.neighbor.skin = kAutoSkinDefaultFraction * largest_pair_cutoff(cfg.model);
  } else {
    cfg.model.neighbor.skin = n.number("skin", 0.3, 0.0, kInf, false, "a number >= 0 or auto");
  }
  cfg.model.neighbor.initial_capacity_per_particle =
      static_cast<int>(n.integer("initial_capacity_per_particle", 0, 0, 100000));
  cfg.locations["neighbor.skin"] = n.where("skin");
}

}  // namespace pairmd::config
