// Energy conservation of velocity Verlet on the LJ liquid.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "test_util.h"

namespace pairmd {
namespace {

// N = 500 LJ particles (fcc 5^3 melted at rho 0.8442, kT 1.2), rc = 2.5 with the energy
// shifted to zero at the cutoff, dt = 0.005, 10^4 steps (50 tau).
//
// The bound on the drift. Velocity Verlet is symplectic: for a smooth potential the energy
// oscillates around a shadow Hamiltonian with amplitude O(dt^2) and has no secular drift.
// What makes it wander here is the truncation: the shifted potential is continuous at rc but
// its derivative is not (|V'(rc)| = 0.039 eps/sigma), and every pair that crosses the cutoff
// within a step gets an energy error of order |V'(rc)| * |dr_ij per step| / 2 ~ 0.039 * 0.008
// / 2 ~ 1.5e-4 eps, of either sign. The crossing rate is the flux through the cutoff sphere,
// rho * 4 pi rc^2 * <|v_r,ij|> / 2 ~ 0.84 * 78.5 * 1.24 / 2 ~ 41 per particle per tau, i.e.
// ~2000 per particle over the 50 tau of the run. As a random walk over all N * 2000
// crossings this is sqrt(N * 2000) * 1.5e-4 / N ~ 3e-4 eps per particle (rounding, ~1e-16
// relative per step, is negligible). We allow 1e-3 eps per particle for the drift (~3 times
// the expected size, 0.1 % of kT) and 2e-3 for the largest deviation from the fitted line.
// The errors the test is for are far larger: a half kick with the wrong force, a missing pair
// near the list edge or a wrong dt in one half of the step drift by O(0.01..1) per particle
// within a few hundred steps. (Measured on the development machine: drift 1.6e-4, deviation
// 4.9e-4; halving dt halves the wandering, as crossing errors predict, not a quarter as an
// O(dt^2) integrator error would.)
//
// The drift is the slope of a least-squares line through E(t)/N times the run length; the
// difference of the end points would include the oscillation as well.
TEST(NVE, EnergyDriftOfLJLiquid) {
  test::TestSystem s = test::make_system(test::lj_yaml(5, 0.8442, "nve", 1.2, 0.005, 2.5, true));
  ASSERT_GE(s.built.state.size(), 500u);
  auto b = s.backend();
  // Melt the lattice under a thermostat first, so the NVE run starts from a liquid.
  {
    Model m = s.model();
    m.integrator.kind = IntegratorKind::Langevin;
    CpuBackend melt(m, s.built.state);
    melt.advance(1000);
    SystemState st;
    melt.get_state(st);
    b->set_state(st);
  }
  const double n = static_cast<double>(s.built.state.size());
  const int kSteps = 10000, kEvery = 50;
  std::vector<double> t, e;
  for (int k = 0; k <= kSteps; k += kEvery) {
    if (k > 0) b->advance(kEvery);
    const Observables o = b->observables();
    t.push_back(k);
    e.push_back(o.total() / n);
  }
  // Least-squares line e = a + c t.
  double st = 0, se = 0, stt = 0, ste = 0;
  const double m = static_cast<double>(t.size());
  for (size_t i = 0; i < t.size(); ++i) {
    st += t[i];
    se += e[i];
    stt += t[i] * t[i];
    ste += t[i] * e[i];
  }
  const double slope = (m * ste - st * se) / (m * stt - st * st);
  const double intercept = (se - slope * st) / m;
  double worst = 0;
  for (size_t i = 0; i < t.size(); ++i) worst = std::max(worst, std::fabs(e[i] - intercept - slope * t[i]));
  const double drift = slope * kSteps;
  RecordProperty("drift_per_particle", std::to_string(drift));
  std::printf("NVE LJ N=%d: drift %.3g eps/particle over %d steps, largest deviation from the line %.3g\n",
              static_cast<int>(n), drift, kSteps, worst);
  EXPECT_LT(std::fabs(drift), 1e-3);
  EXPECT_LT(worst, 2e-3);
  EXPECT_GT(b->stats().list_builds, 50) << "the liquid should have rebuilt its list many times";
}

}  // namespace
}  // namespace pairmd
