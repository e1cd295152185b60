// The `barostat` section: constant pressure by stochastic cell rescaling (integrators/barostat.h).
// Read after the integrator, system, replicas and pulling, whose settings it is checked against.
#include "engine/config_schema.h"

namespace pairmd::config {

namespace {

// What a barostat cannot run with: no box to scale, no temperature for its noise, external
// forces fixed in space, exchanges whose criterion has no P V term.
void check_barostat_fits(const Map& m, const RunConfig& cfg) {
  const YAML::Node where = m.self();
  if (!cfg.system.periodic)
    m.ctx().fail(where, "barostat", "a barostat needs a periodic box; this system has system.boundary: open");
  if (cfg.model.integrator.kind == IntegratorKind::VelocityVerlet)
    m.ctx().fail(where, "barostat",
                 "a barostat needs a thermostat (integrator.kind langevin or brownian): its noise is set by the "
                 "temperature, and nve has none");
  if (cfg.pulling.mode != PullMode::None)
    m.ctx().fail(where, "barostat",
                 "pulling and a barostat together are not supported: the anchor and tether points stay fixed in "
                 "space while the box scales");
  if (cfg.replicas.count > 0 && cfg.replicas.exchange)
    m.ctx().fail(where, "barostat",
                 "temperature replica exchange with a barostat is not supported (its acceptance has no P V term); "
                 "replicas.mode: independent runs NPT replicas");
}

}  // namespace

void read_barostat(const Map& root, RunConfig& cfg) {
  if (!root.has("barostat")) return;
  Map m(root.ctx(), root.node("barostat"), "barostat",
        {"kind", "pressure", "tau_p", "compressibility", "couple", "every"});
  BarostatSettings& b = cfg.model.barostat;
  const std::string kind = m.choice("kind", "", {"c_rescale"});
  if (kind.empty()) m.missing("kind", "c_rescale: stochastic cell rescaling");
  b.kind = BarostatKind::CRescale;
  const Units& u = cfg.model.units;
  const double p =
      m.number_required("pressure", -kInf, kInf, false,
                        u.reduced() ? "the target pressure (epsilon/sigma^3)" : "the target pressure (atm)");
  b.pressure = p / u.pressure_out;
  b.tau_p = m.number_required("tau_p", 0.0, kInf, true, "the volume's relaxation time > 0 (time units)");
  b.compressibility = m.number_required("compressibility", 0.0, kInf, true,
                                        u.reduced() ? "the isothermal compressibility > 0 (sigma^3/epsilon)"
                                                    : "the isothermal compressibility > 0 (1/atm)") *
                      u.pressure_out;
  const std::string couple = m.choice("couple", "iso", {"iso", "semi_iso", "aniso"});
  b.couple = couple == "iso"        ? BarostatCoupling::Isotropic
             : couple == "semi_iso" ? BarostatCoupling::SemiIsotropic
                                    : BarostatCoupling::Anisotropic;
  b.every = m.integer("every", 1, 1, kMaxInt);
  // The volume equation is integrated with Euler steps of every * dt: they must be short against
  // the relaxation time (GROMACS asks for 5 of them at least too).
  const double dt_b = b.every * cfg.model.integrator.dt;
  if (!(b.tau_p >= 5 * dt_b)) {
    std::ostringstream s;
    s << "expected a relaxation time of at least 5 x every x integrator.dt = " << 5 * dt_b << ", got "
      << m.node("tau_p").Scalar() << " (typically 100 to 1000 time steps)";
    m.ctx().fail(m.node("tau_p"), m.sub("tau_p"), s.str());
  }
  check_barostat_fits(m, cfg);
}

}  // namespace pairmd::config
