// The `minimize` section: the energy minimisation before the dynamics (engine/minimize.h), and
// system.relax, its older spelling (read by config_system.cpp into the same MinimizeSpec).
#include "engine/config_schema.h"

namespace pairmd::config {

namespace {

// What FIRE alone reads: refused with steepest_descent, whose step is max_move along the force.
constexpr const char* kFireKeys[] = {"dt", "dtmax", "dtmin", "delay", "dt_grow", "dt_shrink", "alpha0", "alpha_shrink"};

void read_fire(const Map& m, MinimizeSpec& s, double integrator_dt) {
  s.dt = m.number("dt", integrator_dt, 0.0, kInf, true);
  s.dtmax = m.number("dtmax", 10.0 * s.dt, 0.0, kInf, true);
  s.dtmin = m.number("dtmin", s.dt / 50.0, 0.0, kInf, true);
  if (s.dtmax < s.dt)
    m.ctx().fail(m.node("dtmax"), m.sub("dtmax"),
                 "expected a number >= minimize.dt (" + std::to_string(s.dt) + "), got " + m.node("dtmax").Scalar());
  if (s.dtmin > s.dt)
    m.ctx().fail(m.node("dtmin"), m.sub("dtmin"),
                 "expected a number <= minimize.dt (" + std::to_string(s.dt) + "), got " + m.node("dtmin").Scalar());
  s.delay = m.integer("delay", s.delay, 0, 1000000);
  s.dt_grow = m.number("dt_grow", s.dt_grow, 1.0, kInf, true, "a number > 1");
  s.dt_shrink = m.number("dt_shrink", s.dt_shrink, 0.0, 1.0, true, "a number in (0, 1)");
  if (s.dt_shrink == 1.0) m.ctx().fail(m.node("dt_shrink"), m.sub("dt_shrink"), "expected a number in (0, 1), got 1");
  s.alpha0 = m.number("alpha0", s.alpha0, 0.0, 1.0, true, "a number in (0, 1)");
  if (s.alpha0 == 1.0) m.ctx().fail(m.node("alpha0"), m.sub("alpha0"), "expected a number in (0, 1), got 1");
  s.alpha_shrink = m.number("alpha_shrink", s.alpha_shrink, 0.0, 1.0, true, "a number in (0, 1]");
}

// The defaults of a minimisation no key describes (chains, which start overlapping).
void set_defaults(MinimizeSpec& s, double integrator_dt) {
  const MinimizeAlgorithm algorithm = s.algorithm;
  s = MinimizeSpec{};
  s.algorithm = algorithm;
  s.dt = integrator_dt;
  s.dtmax = 10.0 * s.dt;
  s.dtmin = s.dt / 50.0;
}

}  // namespace

void read_minimize(const Map& root, RunConfig& cfg) {
  MinimizeSpec& s = cfg.minimize;
  const double integrator_dt = cfg.model.integrator.dt;
  if (!root.has("minimize")) {
    if (s.from_relax) return;
    // Random walks overlap: chains are minimised unless the config says otherwise.
    s.algorithm = cfg.system.source == SystemSource::Chains ? MinimizeAlgorithm::Fire : MinimizeAlgorithm::None;
    set_defaults(s, integrator_dt);
    return;
  }
  YAML::Node node = root.node("minimize");
  if (s.from_relax)
    root.ctx().fail(node, "minimize",
                    "system.relax is an older spelling of minimize (steepest descent); give one of them, not both");
  if (node.IsNull()) node = YAML::Node(YAML::NodeType::Map);  // `minimize:` alone: the defaults
  Map m(root.ctx(), node, "minimize",
        {"algorithm", "ftol", "etol", "max_iterations", "max_evaluations", "max_move", "dt", "dtmax", "dtmin", "delay",
         "dt_grow", "dt_shrink", "alpha0", "alpha_shrink"});
  const std::string algorithm = m.choice("algorithm", "fire", {"fire", "steepest_descent", "none"});
  s.algorithm = algorithm == "fire"               ? MinimizeAlgorithm::Fire
                : algorithm == "steepest_descent" ? MinimizeAlgorithm::SteepestDescent
                                                  : MinimizeAlgorithm::None;
  set_defaults(s, integrator_dt);
  s.ftol = m.number("ftol", s.ftol, 0.0, kInf, false, "a force >= 0 (0: off)");
  s.etol = m.number("etol", s.etol, 0.0, 1.0, false, "a relative energy change in [0, 1) (0: off)");
  if (s.etol == 1.0) m.ctx().fail(m.node("etol"), m.sub("etol"), "expected a relative energy change in [0, 1), got 1");
  s.max_iterations = m.integer("max_iterations", s.max_iterations, 0, kMaxInt);
  s.max_evaluations = m.integer("max_evaluations", s.max_evaluations, 1, kMaxInt);
  s.max_move = m.number("max_move", s.max_move, 0.0, kInf, true);
  cfg.locations["minimize.max_move"] = m.where("max_move");
  if (s.algorithm == MinimizeAlgorithm::Fire) {
    read_fire(m, s, integrator_dt);
  } else {
    for (const char* k : kFireKeys)
      if (m.has(k))
        m.ctx().fail(m.node(k), m.sub(k),
                     std::string(k) + " is a setting of algorithm fire (this minimize has algorithm " + algorithm +
                         "; steepest_descent takes ftol, etol, max_iterations, max_evaluations and max_move)");
  }
}

}  // namespace pairmd::config
