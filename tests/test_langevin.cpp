// Stochastic dynamics sample the right ensemble: Langevin (BAOAB) kinetic temperature and
// Maxwellian velocities on the LJ liquid; Brownian diffusion D = kT / (m gamma) of free
// particles.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "base/observables.h"
#include "test_util.h"

namespace pairmd {
namespace {

// LJ liquid, N = 500, kT = 1.2, gamma = 1, dt = 0.005; 2000 steps to melt and equilibrate,
// then T sampled every 10 steps over 20000 steps (100 tau).
//
// Expected error of the average. The instantaneous kinetic temperature of N particles in the
// canonical ensemble fluctuates with relative standard deviation sqrt(2 / (3N)) = 3.7 %. Its
// autocorrelation decays with the friction (the O-step relaxes kinetic energy at rate 2 gamma)
// and faster through collisions: integrated correlation time <= 1 / (2 gamma) = 0.5 tau. Over
// 100 tau that gives >= 100 independent samples, so the mean has a standard error ~0.37 %.
// (Measured: over 8 runs with different seeds or thread counts the means scatter by 0.4 %
// around 1.1976; this run, 2 threads, seed 99, gives 1.2105.)
// BAOAB's own bias of the kinetic temperature measured after the final half kick is O(dt^2)
// ~ 1e-4 here (Leimkuhler & Matthews 2013). The 2 % bound is > 5 standard errors: a false
// failure has probability < 1e-6, while a wrong noise amplitude (e.g. c2 = sqrt(1 - c1) instead
// of sqrt(1 - c1^2): T off by 50 %) or a mass missing from the noise fails at once.
TEST(Langevin, KineticTemperatureAndMaxwellianVelocities) {
  const double kT = 1.2;
  test::TestSystem s = test::make_system(test::lj_yaml(5, 0.8442, "langevin", kT, 0.005, 2.5, false, 99));
  auto b = s.backend();
  b->advance(2000);
  const double n = static_cast<double>(s.built.state.size());
  const double dof = 3.0 * n;  // a thermostat couples all 3N degrees of freedom
  double tsum = 0;
  int samples = 0;

  std::vector<double> v;  // velocity components from snapshots 2 tau apart
  for (int k = 1; k <= 2000; ++k) {
    b->advance(10);
    tsum += temperature(b->observables(), dof, 1.0);
    ++samples;
    if (k % 40 == 0) {
      SystemState st;
      b->get_state(st);
      for (const Vec3d& u : st.velocity) {
        v.push_back(u.x);
        v.push_back(u.y);
        v.push_back(u.z);
      }
    }
  }
  const double tmean = tsum / samples;
  std::printf("Langevin LJ N=%d: <T> = %.5f (target %.3f)\n", static_cast<int>(n), tmean, kT);
  EXPECT_NEAR(tmean, kT, 0.02 * kT);

  // Maxwellian velocities. 50 snapshots x 1500 components = 75000 values; snapshots 2 tau
  // apart have velocity correlation <= exp(-2 gamma tau) = 0.14, so the sample behaves like
  // >= ~50000 independent normal values of variance kT/m (m = 1).
  // (1) Kolmogorov-Smirnov distance to N(0, kT): for n independent values its 99.9 % quantile
  //     is 1.95 / sqrt(n) = 0.0087 at n = 50000; we allow 0.01. A temperature off by 4 % (sd
  //     off by 2 %) moves D by ~0.008 on top of the noise, a non-Gaussian shape (e.g. uniform
  //     noise of the right variance in the O-step, after many steps still slightly
  //     platykurtic) by more.
  // (2) Kurtosis <v^4> / <v^2>^2 = 3 for a Gaussian; its standard error is sqrt(24 / n) = 0.022;
  //     we allow 0.1 (> 4.5 standard errors).
  std::sort(v.begin(), v.end());
  const double sd = std::sqrt(kT);
  double dmax = 0, m2 = 0, m4 = 0;
  const double nv = static_cast<double>(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    const double cdf = 0.5 * std::erfc(-v[i] / (sd * std::sqrt(2.0)));
    dmax = std::max({dmax, std::fabs(cdf - i / nv), std::fabs(cdf - (i + 1) / nv)});
    m2 += v[i] * v[i];
    m4 += v[i] * v[i] * v[i] * v[i];
  }
  m2 /= nv;
  m4 /= nv;
  const double kurtosis = m4 / (m2 * m2);
  std::printf("velocities: KS distance %.4f, kurtosis %.4f, <v^2> %.4f (n = %zu)\n", dmax, kurtosis, m2, v.size());
  EXPECT_LT(dmax, 0.01);
  EXPECT_NEAR(kurtosis, 3.0, 0.1);
}

// Free particles (the LJ pair switched off with epsilon 0) under Brownian dynamics: the
// displacement over time t is exactly Gaussian with variance 2 D t per direction,
// D = kT / (m gamma), for any dt (the free Brownian step is exact). For one particle
// r^2 = |dr|^2 has mean 6 D t and standard deviation sqrt(24) D t = 0.816 * mean; the mean over
// N = 4000 particles has relative standard error 0.816 / sqrt(4000) = 1.3 %. We allow 5 % (3.9
// standard errors); a mobility off by m or by 2 (common slips) fails by far.
TEST(Brownian, MeanSquareDisplacementOfFreeParticles) {
  const double kT = 1.5, gamma = 2.0, mass = 3.0, dt = 0.01;
  const std::string yaml = R"(
system:
  types: [{name: A, mass: 3.0}]
  lattice: {kind: sc, cells: 16, density: 0.1}
force_field:
  pair: [{potential: lj, cutoff: 2.5, coeffs: [{types: [A, A], epsilon: 0.0, sigma: 1.0}]}]
integrator: {kind: brownian, dt: 0.01, temperature: 1.5, friction: 2.0, seed: 5}
)";
  test::TestSystem s = test::make_system(yaml);
  ASSERT_EQ(s.built.state.size(), 4096u);
  auto b = s.backend();
  SystemState start;
  b->get_state(start);
  const int steps = 500;
  b->advance(steps);
  SystemState end;
  b->get_state(end);
  double msd = 0;
  for (size_t i = 0; i < end.size(); ++i) {
    const Vec3d d = end.unwrapped(i) - start.unwrapped(i);
    msd += dot(d, d);
  }
  msd /= static_cast<double>(end.size());
  const double D = kT / (mass * gamma);
  const double expected = 6 * D * steps * dt;
  std::printf("Brownian: MSD %.4f, 6 D t = %.4f\n", msd, expected);
  EXPECT_NEAR(msd, expected, 0.05 * expected);
}

// Free particles under Langevin: the velocity autocorrelation is exp(-gamma t) and
// <v^2> = kT / m per component in the stationary state. BAOAB's O-step is the exact
// Ornstein-Uhlenbeck update, and the B and A steps do nothing to velocities of free particles,
// so <v_x(0) v_x(t)> / <v_x^2> = exp(-gamma t) holds exactly for t a multiple of dt. With 4096
// particles x 3 components the estimate at gamma t = 1 has standard error
// sqrt((1 + c^2) / n) ~ 0.011 (c = e^-1); we allow 0.05.
TEST(Langevin, FreeParticleVelocityMemory) {
  const std::string yaml = R"(
system:
  types: [{name: A, mass: 2.0}]
  lattice: {kind: sc, cells: 16, density: 0.1}
force_field:
  pair: [{potential: lj, cutoff: 2.5, coeffs: [{types: [A, A], epsilon: 0.0, sigma: 1.0}]}]
integrator: {kind: langevin, dt: 0.01, temperature: 0.8, friction: 0.5, seed: 8}
)";
  test::TestSystem s = test::make_system(yaml);
  auto b = s.backend();
  SystemState a, c;
  b->get_state(a);
  b->advance(200);  // gamma t = 1
  b->get_state(c);
  double v0v0 = 0, v0vt = 0, vtvt = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    v0v0 += dot(a.velocity[i], a.velocity[i]);
    v0vt += dot(a.velocity[i], c.velocity[i]);
    vtvt += dot(c.velocity[i], c.velocity[i]);
  }
  const double n3 = 3.0 * a.size();
  EXPECT_NEAR(v0vt / v0v0, std::exp(-1.0), 0.05);
  EXPECT_NEAR(vtvt / n3 * 2.0, 0.8, 0.05 * 0.8);  // <m v^2> per component = kT (m = 2)
}

}  // namespace
}  // namespace pairmd
