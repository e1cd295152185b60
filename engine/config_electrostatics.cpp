// The `electrostatics` section: particle-mesh Ewald for the coulomb_long pair term (potentials/
// pme.h). Its accuracy and the term's cutoff give alpha, which the term's coefficients carry; the
// grid follows from the box once the system exists (validate_electrostatics).
#include <sstream>
#include <stdexcept>

#include "engine/config_schema.h"

namespace pairmd::config {

namespace {

constexpr double kMinAccuracy = 1e-10;  // below this the double sums themselves are the error
constexpr double kMaxAccuracy = 1e-2;

// The index of the coulomb_long term, or -1; a second one is an error.
int coulomb_long_term(const Map& root, const ForceField& ff) {
  int term = -1;
  for (size_t t = 0; t < ff.pair_terms.size(); ++t) {
    if (ff.pair_terms[t].kind != PairKind::CoulombLong) continue;
    if (term >= 0)
      root.ctx().fail(root.node("force_field"), "force_field.pair[" + std::to_string(t) + "]",
                      "a second coulomb_long term; the Ewald sum has one splitting, so one such term");
    term = static_cast<int>(t);
  }
  return term;
}

std::array<int, 3> read_grid(const Map& m, int order) {
  std::array<int, 3> grid{};
  if (!m.has("grid")) return grid;
  const YAML::Node g = m.node("grid");
  if (g.IsScalar() && g.Scalar() == "auto") return grid;
  if (!g.IsSequence() || g.size() != 3)
    m.ctx().fail(g, m.sub("grid"), "expected auto or [nx, ny, nz] (grid points per box edge), got " + describe(g));
  for (int d = 0; d < 3; ++d) grid[d] = static_cast<int>(m.to_integer(g[d], m.sub("grid"), 2 * order, kPmeMaxGrid));
  return grid;
}

}  // namespace

// `electrostatics`: {method: pme, accuracy, order, grid, grid_spacing}. Defaults apply when a coulomb_long term
// is there and the section is not.
void read_electrostatics(const Map& root, RunConfig& cfg) {
  ForceField& ff = cfg.model.force_field;
  const int term = coulomb_long_term(root, ff);
  PmeSettings& s = cfg.model.electrostatics;
  if (root.has("electrostatics")) {
    Map m(root.ctx(), root.node("electrostatics"), "electrostatics",
          {"method", "accuracy", "order", "grid", "grid_spacing"});
    if (term < 0)
      root.ctx().fail(m.self(), "electrostatics",
                      "needs a coulomb_long term in force_field.pair (the real-space part of the Ewald sum)");
    m.choice("method", "pme", {"pme"});
    s.accuracy = m.number("accuracy", 1e-5, kMinAccuracy, kMaxAccuracy, false,
                          "a relative force accuracy in [1e-10, 0.01] (e.g. 1e-5)");
    s.order = static_cast<int>(m.integer("order", 6, kPmeMinOrder, kPmeMaxOrder));
    s.grid = read_grid(m, s.order);
    s.spacing = m.number("grid_spacing", 0.0, 0.0, 1e6, true, "a grid spacing > 0 (a length, e.g. 0.4)");
    if (s.spacing > 0 && s.grid[0] > 0)
      m.ctx().fail(m.node("grid_spacing"), m.sub("grid_spacing"),
                   "grid_spacing and an explicit grid both set the grid; give one of them");
    cfg.locations["electrostatics"] = m.where("accuracy");
  } else if (term >= 0) {
    cfg.locations["electrostatics"] = root.where("force_field");
  }
  if (term < 0) return;
  PairTerm& t = ff.pair_terms[term];
  s.enabled = true;
  s.term = term;
  s.cutoff = t.coeffs.at(0).rcut;
  for (const PairCoeffs& c : t.coeffs)
    if (c.rcut != s.cutoff)
      root.ctx().fail(root.node("force_field"), "force_field.pair[" + std::to_string(term) + "]",
                      "coulomb_long needs one cutoff for every type pair (the Ewald splitting is one alpha)");
  s.alpha = ewald_alpha(s.cutoff, s.accuracy);
  s.prefactor = t.coeffs.at(0).prefactor;
  for (PairCoeffs& c : t.coeffs) c.ewald_alpha = s.alpha;
}

}  // namespace pairmd::config

namespace pairmd {

void validate_electrostatics(const RunConfig& cfg, const Box& box) {
  const PmeSettings& s = cfg.model.electrostatics;
  if (!s.enabled) return;
  try {
    resolve_pme(s, box);
  } catch (const std::invalid_argument& e) {
    auto it = cfg.locations.find("electrostatics");
    throw ConfigError((it != cfg.locations.end() ? it->second : cfg.path) + ": electrostatics: " + e.what());
  }
}

std::vector<std::string> electrostatics_notes(const RunConfig& cfg, const SystemState& state,
                                              std::vector<std::string>* warnings) {
  const PmeSettings& s = cfg.model.electrostatics;
  if (!s.enabled) return {};
  double total = 0.0, sum_abs = 0.0;
  for (double q : state.charge) {
    total += q;
    sum_abs += std::fabs(q);
  }
  if (warnings && std::fabs(total) > 1e-8 * std::max(1.0, sum_abs)) {
    std::ostringstream w;
    w << "the system's net charge is " << total << " " << cfg.model.units.charge_unit()
      << ", not zero: the Ewald sum adds a uniform neutralising background (its energy "
      << "-pi C Q^2 / (2 V alpha^2)); the energy of a charged periodic system depends on that convention";
    warnings->push_back(w.str());
  }
  return {describe_pme(resolve_pme(s, state.box), cfg.model.units.length_unit())};
}

}  // namespace pairmd
