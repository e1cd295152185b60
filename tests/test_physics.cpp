// The physics every backend must get right, written once and run on every target: the CPU
// reference (pairmd_tests, in CI) and the CUDA backend with each registered strategy
// (pairmd_gpu_tests, which skip with the reason where there is no GPU and run on the H100
// through scripts/device_run.sh). A failure names its target: Cpu/Physics.NveEnergyDrift/cpu,
// Cuda/Physics.NveEnergyDrift/cuda_pair_warp.
//
// Each bound is derived in its comment for the CPU backend (fp64) and, where it differs, for
// the GPU (fp32 per pair, forces summed in 64-bit fixed point by the deterministic strategies or
// by float atomics by the others, velocities and positions in float, energies and momenta summed
// in fp64 or fixed point). Rounding to float is relative 2^-24 = 6e-8 (half an ulp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "base/bond_images.h"
#include "base/host_threads.h"
#include "base/observables.h"
#include "engine/simulation.h"
#include "integrators/noise.h"
#include "tests/test_support.h"

namespace pairmd {
namespace {

using test::Target;

class Physics : public ::testing::TestWithParam<Target> {
 protected:
  void SetUp() override {
    if (GetParam().backend == "cuda") PAIRMD_REQUIRE_GPU();
  }
  const Target& target() const { return GetParam(); }
  std::unique_ptr<Backend> backend(const Model& m, const SystemState& s) const {
    return test::make_target_backend(target(), m, s);
  }
  std::unique_ptr<Backend> backend(const test::TestSystem& s) const { return backend(s.model(), s.built.state); }
  SystemState run(const test::TestSystem& s, int steps) const {
    auto b = backend(s);
    b->advance(steps);
    SystemState st;
    b->get_state(st);
    return st;
  }
};

bool bitwise_equal(const std::vector<Vec3d>& a, const std::vector<Vec3d>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(Vec3d)) == 0;
}

double max_distance(const SystemState& a, const SystemState& b) {
  double m = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    const Vec3d d = a.unwrapped(i) - b.unwrapped(i);
    m = std::max(m, std::sqrt(dot(d, d)));
  }
  return m;
}

// Two runs that must be the same run: bit for bit where the target sums deterministically; where
// it sums with float atomics, the order of the additions differs from run to run, so the runs
// part by rounding and the LJ liquid's chaos amplifies that. A force differs by ~1e-7 of |F| ~ 5
// per step, which moves a particle by dt^2 |dF| / 2 ~ 1e-11 per step; over 300 steps (1.5 tau)
// the largest Lyapunov exponent of the liquid (< 5 / tau) grows that by at most e^7.5 ~ 2e3:
// ~1e-5. kSameRun = 1e-3 leaves a factor 100; two seeds part by ~0.1 or more within a tau.
constexpr double kSameRun = 1e-3;

void expect_same_run(const Target& t, const SystemState& a, const SystemState& b, const std::string& what) {
  if (t.deterministic) {
    EXPECT_TRUE(bitwise_equal(a.position, b.position)) << what;
    EXPECT_TRUE(bitwise_equal(a.velocity, b.velocity)) << what;
  } else {
    const double d = max_distance(a, b);
    std::printf("[same run] %s: %s: max |dx| = %.3g\n", t.label().c_str(), what.c_str(), d);
    EXPECT_LT(d, kSameRun) << what;
  }
}

// ---- NVE: energy conservation -------------------------------------------------------------

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
// within a few hundred steps. (Measured on the development machine, CPU: drift 1.6e-4,
// deviation 4.9e-4; halving dt halves the wandering, as crossing errors predict, not a quarter
// as an O(dt^2) integrator error would.)
//
// fp32 (GPU). Rounding adds a random walk, not a drift (round to nearest is unbiased): a float
// position step rounds by ~ulp(8.4)/2 = 5e-7, an energy error F dx ~ 5 * 5e-7 = 2.5e-6 per
// particle and step; its mean over N = 500 is 1.1e-7 per step, over 10^4 steps sqrt(10^4) *
// 1.1e-7 ~ 1e-5 per particle. Float pair forces (relative ~1e-6) are not exactly a gradient:
// F-error . v dt ~ 5e-6 * 1.1 * 0.005 ~ 3e-8 per particle and step, ~1e-5 over the run likewise.
// Both stay two orders below the cut-off crossings, so the same bounds hold.
//
// The drift is the slope of a least-squares line through E(t)/N times the run length; the
// difference of the end points would include the oscillation as well.
TEST_P(Physics, NveEnergyDrift) {
  const test::TestSystem s = test::make_system(test::lj_yaml(5, 0.8442, "nve", 1.2, 0.005, 2.5, true));
  ASSERT_GE(s.built.state.size(), 500u);
  // Melt the lattice under a thermostat first, so the NVE run starts from a liquid.
  SystemState liquid;
  {
    Model m = s.model();
    m.integrator.kind = IntegratorKind::Langevin;
    auto melt = backend(m, s.built.state);
    melt->advance(1000);
    melt->get_state(liquid);
  }
  auto b = backend(s.model(), liquid);
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
  std::printf("NVE LJ N=%d on %s: drift %.3g eps/particle over %d steps, largest deviation from the line %.3g\n",
              static_cast<int>(n), target().label().c_str(), drift, kSteps, worst);
  EXPECT_LT(std::fabs(drift), 1e-3);
  EXPECT_LT(worst, 2e-3);
  if (find_strategy(target().strategy) == nullptr || find_strategy(target().strategy)->list)  // all_pairs has none
    EXPECT_GT(b->stats().list_builds, 50) << "the liquid should have rebuilt its list many times";
}

// ---- Langevin: temperature and Maxwellian velocities ------------------------------------------

// LJ liquid, N = 500, kT = 1.2, gamma = 1, dt = 0.005; 2000 steps to melt and equilibrate,
// then T sampled every 10 steps over 20000 steps (100 tau).
//
// Expected error of the average. The instantaneous kinetic temperature of N particles in the
// canonical ensemble fluctuates with relative standard deviation sqrt(2 / (3N)) = 3.7 %. Its
// autocorrelation decays with the friction (the O-step relaxes kinetic energy at rate 2 gamma)
// and faster through collisions: integrated correlation time <= 1 / (2 gamma) = 0.5 tau. Over
// 100 tau that gives >= 100 independent samples, so the mean has a standard error ~0.37 %.
// (Measured on the CPU: over 8 runs with different seeds or thread counts the means scatter by
// 0.4 % around 1.1976; this run, 2 threads, seed 99, gives 1.2105.)
// BAOAB's own bias of the kinetic temperature measured after the final half kick is O(dt^2)
// ~ 1e-4 here (Leimkuhler & Matthews 2013). The 2 % bound is > 5 standard errors: a false
// failure has probability < 1e-6, while a wrong noise amplitude (e.g. c2 = sqrt(1 - c1) instead
// of sqrt(1 - c1^2): T off by 50 %) or a mass missing from the noise fails at once.
// fp32 (GPU): velocities rounded to float (relative 6e-8) and Gaussians made in float change T
// by far less than 1e-5 and the distribution's shape not measurably (Box-Muller from 32-bit
// uniforms truncates the tails only beyond 6.6 standard deviations): the same bounds hold.
TEST_P(Physics, LangevinTemperatureAndMaxwellianVelocities) {
  const double kT = 1.2;
  const test::TestSystem s = test::make_system(test::lj_yaml(5, 0.8442, "langevin", kT, 0.005, 2.5, false, 99));
  auto b = backend(s);
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
  std::printf("Langevin LJ N=%d on %s: <T> = %.5f (target %.3f)\n", static_cast<int>(n), target().label().c_str(),
              tmean, kT);
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

// Free particles under Langevin: the velocity autocorrelation is exp(-gamma t) and
// <v^2> = kT / m per component in the stationary state. BAOAB's O-step is the exact
// Ornstein-Uhlenbeck update, and the B and A steps do nothing to velocities of free particles,
// so <v_x(0) v_x(t)> / <v_x^2> = exp(-gamma t) holds exactly for t a multiple of dt. With 4096
// particles x 3 components the estimate at gamma t = 1 has standard error
// sqrt((1 + c^2) / n) ~ 0.011 (c = e^-1); we allow 0.05. (fp32: float c1, c2 and velocities are
// exact to 1e-7; forces are exactly zero for every strategy, epsilon being 0.)
TEST_P(Physics, LangevinFreeParticleVelocityMemory) {
  const std::string yaml = R"(
system:
  types: [{name: A, mass: 2.0}]
  lattice: {kind: sc, cells: 16, density: 0.1}
force_field:
  pair: [{potential: lj, cutoff: 2.5, coeffs: [{types: [A, A], epsilon: 0.0, sigma: 1.0}]}]
integrator: {kind: langevin, dt: 0.01, temperature: 0.8, friction: 0.5, seed: 8}
)";
  const test::TestSystem s = test::make_system(yaml);
  auto b = backend(s);
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

// ---- Brownian: diffusion ---------------------------------------------------------------------

// Free particles (the LJ pair switched off with epsilon 0) under Brownian dynamics: the
// displacement over time t is exactly Gaussian with variance 2 D t per direction,
// D = kT / (m gamma), for any dt (the free Brownian step is exact). For one particle
// r^2 = |dr|^2 has mean 6 D t and standard deviation sqrt(24) D t = 0.816 * mean; the mean over
// N = 4096 particles has relative standard error 0.816 / sqrt(4096) = 1.3 %. We allow 5 % (3.9
// standard errors); a mobility off by m or by 2 (common slips) fails by far.
// fp32 (GPU): a step of sqrt(2 D dt) = 0.05 in a box of 34.5 rounds by ulp(34.5)/2 = 1.9e-6, an
// unbiased error of 4e-5 of the step; over 500 steps it adds ~1e-9 to the mean square
// displacement of 2.5: nothing against the 5 %.
TEST_P(Physics, BrownianMeanSquareDisplacement) {
  const double kT = 1.5, gamma = 2.0, mass = 3.0, dt = 0.01;
  const std::string yaml = R"(
system:
  types: [{name: A, mass: 3.0}]
  lattice: {kind: sc, cells: 16, density: 0.1}
force_field:
  pair: [{potential: lj, cutoff: 2.5, coeffs: [{types: [A, A], epsilon: 0.0, sigma: 1.0}]}]
integrator: {kind: brownian, dt: 0.01, temperature: 1.5, friction: 2.0, seed: 5}
)";
  const test::TestSystem s = test::make_system(yaml);
  ASSERT_EQ(s.built.state.size(), 4096u);
  auto b = backend(s);
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
  std::printf("Brownian on %s: MSD %.4f, 6 D t = %.4f\n", target().label().c_str(), msd, expected);
  EXPECT_NEAR(msd, expected, 0.05 * expected);
}

// ---- momentum ------------------------------------------------------------------------------

// Under velocity Verlet each step changes the total momentum by dt * sum F plus the rounding of
// the velocity updates.
// fp64 (CPU): every pair adds +f and -f, so sum F is zero up to the rounding of the per-particle
// sums, ~1e-12 * sum|F| ~ 1e-9 here, and the velocity updates round by ~N eps |p_i| ~ 1e-13.
// Over 2000 steps this adds to < 2000 * 0.005 * 1e-9 ~ 1e-8 at worst and is in practice a random
// walk far below: we assert 1e-8 on |P(t) - P(0)|.
// fp32 (GPU): the velocity of each particle rounds by ~ulp(|v| ~ 1.1)/2 = 6.6e-8 per component
// and half kick, unbiased: over N = 500 particles, 2 half kicks and 2000 steps a random walk of
// sqrt(500 * 2 * 2000) * 6.6e-8 ~ 1e-4. Forces summed in fixed point add exactly to zero and
// round to float per particle (sum of those errors ~sqrt(N) * 3e-7 |F| per step, 1e-6 over the
// run); float atomics round each pair's contribution, ~6e-8 * 40 pairs * |f| ~ 2e-5 per
// particle, dt * sqrt(N) * 2e-5 = 2.7e-6 per step, ~1.2e-4 over the run. So ~2e-4 at most; we
// assert 2e-3. One lost pair force (|f| ~ 1..100) changes P by ~0.005 or more in every step.
TEST_P(Physics, MomentumConservedUnderNve) {
  const double tol = target().fp32 ? 2e-3 : 1e-8;
  for (const std::string& yaml : {test::lj_yaml(5, 0.8442, "nve", 1.2), std::string(test::kMixedSystem)}) {
    const test::TestSystem s = test::make_system(yaml, {"integrator.kind=nve"});
    auto b = backend(s);
    const Observables o0 = b->observables();
    b->advance(2000);
    const Observables o1 = b->observables();
    for (int d = 0; d < 3; ++d) {
      std::printf("[momentum] %s: |dP_%d| = %.3g\n", target().label().c_str(), d,
                  std::fabs(o1.momentum[d] - o0.momentum[d]));
      EXPECT_NEAR(o1.momentum[d], o0.momentum[d], tol) << "component " << d;
    }
  }
}

// ---- seeds, noise and restarts ---------------------------------------------------------------

// The same seed gives the same trajectory (bit for bit where the target sums deterministically;
// within kSameRun where it uses float atomics), another seed another one (they part by far more
// than kSameRun: the noise alone moves particles by ~sqrt(2 kT dt / m) per step).
TEST_P(Physics, SameSeedSameTrajectoryOtherSeedAnother) {
  for (const char* kind : {"langevin", "brownian"}) {
    const std::string yaml = test::lj_yaml(4, 0.8442, kind, 1.0, kind[0] == 'b' ? 0.0005 : 0.005);
    const SystemState a = run(test::make_system(yaml, {"integrator.seed=42"}), 300);
    const SystemState b = run(test::make_system(yaml, {"integrator.seed=42"}), 300);
    const SystemState c = run(test::make_system(yaml, {"integrator.seed=43", "system.velocities.seed=42"}), 300);
    expect_same_run(target(), a, b, std::string(kind) + ", same seed");
    EXPECT_FALSE(bitwise_equal(a.position, c.position)) << kind;
    EXPECT_GT(max_distance(a, c), 100 * kSameRun) << kind << ": another seed must give another trajectory";
  }
}

// Free particles (LJ switched off): a particle's trajectory depends only on its own start, the
// seed and its tag. It is the same whether or not other particles exist, and whatever the
// number of host threads. Every target: the forces are exactly zero, so no order of sums enters.
TEST_P(Physics, NoiseIndependentOfOtherParticlesAndThreads) {
  const std::string yaml = R"(
system:
  types: [{name: A}]
  lattice: {kind: sc, cells: 8, density: 0.2}
force_field:
  pair: [{potential: lj, cutoff: 2.5, coeffs: [{types: [A, A], epsilon: 0.0, sigma: 1.0}]}]
integrator: {kind: langevin, dt: 0.01, temperature: 1.0, friction: 1.0, seed: 3}
)";
  const test::TestSystem full = test::make_system(yaml);
  test::TestSystem half = full;
  const size_t keep = full.built.state.size() / 2;
  SystemState& h = half.built.state;
  h.position.resize(keep);
  h.velocity.resize(keep);
  h.image.resize(keep);
  h.type.resize(keep);
  h.mass.resize(keep);
  h.charge.resize(keep);
  pin_host_threads(1);
  const SystemState a = run(full, 100);
  pin_host_threads(2);
  const SystemState b = run(half, 100);
  pin_host_threads(0);
  ASSERT_EQ(b.size(), keep);
  for (size_t i = 0; i < keep; ++i) {
    EXPECT_EQ(std::memcmp(&a.position[i], &b.position[i], sizeof(Vec3d)), 0) << "particle " << i;
    EXPECT_EQ(std::memcmp(&a.velocity[i], &b.velocity[i], sizeof(Vec3d)), 0) << "particle " << i;
  }
}

// Stopping, handing the state to a fresh backend (which builds its neighbour lists at another
// step than the first one did, and on a GPU numbers the particles in another cell order) and
// going on gives the same trajectory: pair sums run in particle-index order on the CPU and in
// order-independent fixed point on the deterministic GPU strategies. This is what restarts from
// checkpoints rely on. Checked for one and for two host threads.
TEST_P(Physics, ContinuationIsTheSameRunWhateverTheListBuildStep) {
  const test::TestSystem s = test::make_system(test::lj_yaml(5, 0.8442, "langevin", 1.2));
  for (int nt : {1, 2}) {
    pin_host_threads(nt);
    const SystemState straight = run(s, 250);
    auto first = backend(s);
    first->advance(117);
    SystemState mid;
    first->get_state(mid);
    auto second = backend(s.model(), mid);
    second->advance(133);
    SystemState resumed;
    second->get_state(resumed);
    EXPECT_EQ(resumed.step, 250);
    expect_same_run(target(), straight, resumed, std::to_string(nt) + " thread(s), resumed at step 117");
    // And the same thread count twice gives the same result.
    expect_same_run(target(), straight, run(s, 250), std::to_string(nt) + " thread(s), run twice");
  }
  pin_host_threads(0);
}

// The thermo table counts 3N - 3 degrees of freedom under NVE in a periodic box (the total
// momentum is conserved, and zero) and 3N under a thermostat; the initial velocities are scaled
// to the same count, so step 0 reads the requested temperature exactly (it read T (1 - 1/N)
// under Langevin when they were scaled to 3N - 3 for every integrator). fp32 (GPU): the kinetic
// energy of float velocities, relative ~1e-7.
TEST_P(Physics, StepZeroReadsTheRequestedTemperature) {
  for (const char* kind : {"langevin", "nve", "brownian"}) {
    const test::TestSystem s = test::make_system(test::lj_yaml(4, 0.8442, kind, 1.5));
    const double dof = degrees_of_freedom(s.cfg, s.built.state.size());
    EXPECT_EQ(dof, std::string(kind) == "nve" ? 3.0 * 256 - 3 : 3.0 * 256) << kind;
    const double T = temperature(backend(s)->observables(), dof, 1.0);
    EXPECT_NEAR(T, 1.5, target().fp32 ? 1e-6 : 1e-12) << kind;
  }
}

// ---- image flags follow the bonds ---------------------------------------------------------

// The chains of the example systems stay whole in unwrapped coordinates (position + image x L,
// what every chain analysis reads) over a run in which many beads cross the box's faces: a
// target that lost a crossing, or counted one twice, would leave a bond about a box length long.
// A FENE bond is at most 1.5 long; half the box is ~4.2 (Kremer-Grest) and ~7.4
// (polyelectrolyte).
TEST_P(Physics, BondsStayWholeInUnwrappedCoordinates) {
  for (const char* yaml : {test::kKremerGrest, test::kPolyelectrolyte}) {
    const test::TestSystem s = test::make_system(yaml);
    const double half = 0.5 * s.built.state.box.L.x;
    EXPECT_LT(longest_unwrapped_bond(s.built.state, s.built.topology), half) << "as built";
    const SystemState end = run(s, 2000);
    int crossed = 0;
    for (size_t i = 0; i < end.size(); ++i) {
      const Int3 a = s.built.state.image[i], b = end.image[i];
      crossed += a.x != b.x || a.y != b.y || a.z != b.z;
    }
    EXPECT_GT(crossed, 10) << "the run must cross the box's faces to test anything";
    EXPECT_LT(longest_unwrapped_bond(end, s.built.topology), half) << "after 2000 steps";
  }
}

// A run whose time step is ten times too large explodes. With the runaway limit raised as far as
// it goes (just under half the box: larger is a config error), the explosion must still stop
// the run as a blow-up: no position outside the box, none non-finite, and never a run that
// "completes" with garbage. (Before the limit was bounded, a limit above the box length let
// particles jump more than a box per step, which the wrap does not undo: a run ended with exit
// 0 and positions of 1e14.)
TEST_P(Physics, AnExplosionStopsTheRunEvenWithTheLargestRunawayLimit) {
  EXPECT_THROW(
      test::make_system(test::lj_yaml(4, 0.8442, "langevin", 1.2, 0.05), {"integrator.max_step_displacement=1e10"}),
      ConfigError);
  const test::TestSystem s =
      test::make_system(test::lj_yaml(4, 0.8442, "langevin", 1.2, 0.05), {"integrator.max_step_displacement=3.3"});
  ASSERT_LT(3.3, 0.5 * s.built.state.box.L.x);
  auto b = backend(s);
  bool blew_up = false;
  SystemState st;
  try {
    b->advance(20000);
    b->get_state(st);
  } catch (const SimulationBlowup& e) {
    blew_up = true;
    std::printf("[explosion] %s: %s\n", target().label().c_str(), e.what());
  }
  ASSERT_TRUE(blew_up) << "20,000 steps at dt 0.05 ended at step " << st.step << " without a blow-up";
}

// ---- forces against the energy ---------------------------------------------------------------

// F_i = -dU/dx_i of the total potential energy, by central differences of the fp64 reference's
// Backend::observables().potential, on a system with every kind of term (LJ, Debye-Hueckel,
// FENE and harmonic bonds, bonded exclusions): the target's forces must be the gradient of the
// energy the model defines. One missing or double-counted term (an exclusion not applied, a bond
// of the wrong kind) shows up as an error of order |F| or more.
//
// The differences. With h = 1e-5 the truncation error is ~h^2 |U'''| ~ 1e-8 (|U'''| <= ~1e2 at
// the separations of a relaxed system) and the rounding error is eps |U| / h ~ 2e-16 * 1e3 /
// 1e-5 = 2e-8. (Differences of the GPU's own fp32 energy cannot be this fine: each pair energy
// rounds by ~6e-8 |e|, so h must be ~1e-2, and across a step that wide the terms cut without a
// shift jump at their cutoffs. The GPU's energies are checked against the reference's instead,
// GpuBackend.EnergyAndVirialMatchCpu.)
//
// fp64 (CPU): a tolerance of 1e-6 * max(1, |F|) covers both errors above.
// fp32 (GPU): positions round to float (relative 6e-8, ~5e-7 absolute here), which moves a steep
// pair force by ~13 dr / r ~ 7e-6 of itself; each pair force is computed in float (relative
// ~1e-6) and summed exactly in fixed point (or by float atomics, adding ~6e-8 of the sum of
// magnitudes). Per particle that stays below ~1e-4 of max(F_rms, |F_i|) (measured on the H100 on
// the example systems: at most 1.5e-4 of F_rms); we allow 2e-3 of it. A missing term is still an
// error of order |F|.
TEST_P(Physics, ForceIsMinusGradientOfTotalEnergy) {
  const test::TestSystem s = test::mixed_system();
  const std::vector<Vec3d> f = backend(s)->forces();
  CpuBackend reference(s.model(), s.built.state);
  const SystemState state = s.built.state;
  const Observables o = reference.observables();
  ASSERT_EQ(o.potential_by_term.size(), 4u);  // lj, debye_huckel, fene, harmonic
  for (double e : o.potential_by_term) EXPECT_NE(e, 0.0) << "every term contributes";
  double f_rms = 0;
  for (const Vec3d& v : f) f_rms += dot(v, v);
  f_rms = std::sqrt(f_rms / f.size());
  const double h = 1e-5;
  int checked = 0;
  double worst = 0;
  for (size_t i = 0; i < state.size(); i += 3) {
    for (int d = 0; d < 3; ++d) {
      SystemState p = state, m = state;
      double* xp = d == 0 ? &p.position[i].x : d == 1 ? &p.position[i].y : &p.position[i].z;
      double* xm = d == 0 ? &m.position[i].x : d == 1 ? &m.position[i].y : &m.position[i].z;
      *xp += h;
      *xm -= h;
      reference.set_state(p);
      const double up = reference.observables().potential;
      reference.set_state(m);
      const double um = reference.observables().potential;
      const double fd = -(up - um) / (2 * h);
      const double fi = d == 0 ? f[i].x : d == 1 ? f[i].y : f[i].z;
      const double tol = target().fp32 ? 2e-3 * std::max(f_rms, std::fabs(fi)) : 1e-6 * std::max(1.0, std::fabs(fi));
      worst = std::max(worst, std::fabs(fi - fd) / tol);
      EXPECT_NEAR(fi, fd, tol) << "particle " << i << " component " << d;
      ++checked;
    }
  }
  std::printf("[forces] %s: the largest |F - F_fd| is %.3g of the tolerance, over %d components\n",
              target().label().c_str(), worst, checked);
  EXPECT_GT(checked, 100);
}

// ---- angles, dihedrals, impropers, scaled pairs (issue #32) ------------------------------------

// The same gradient check on the bonded system (test::bonded_system: every angle, dihedral and
// improper potential, 1-3 and 1-4 pairs scaled), with the same tolerances and reasons: the angle
// terms' forces are float in the GPU's kernels and summed exactly in fixed point, as pair forces.
TEST_P(Physics, BondedForceIsMinusGradientOfTotalEnergy) {
  const test::TestSystem s = test::bonded_system();
  const std::vector<Vec3d> f = backend(s)->forces();
  CpuBackend reference(s.model(), s.built.state);
  const SystemState state = s.built.state;
  const Observables o = reference.observables();
  // lj, debye_huckel, harmonic bonds, 3 angle kinds, 5 dihedral kinds, 1 improper kind
  ASSERT_EQ(o.potential_by_term.size(), 12u);
  for (double e : o.potential_by_term) EXPECT_NE(e, 0.0) << "every term contributes";
  double f_rms = 0;
  for (const Vec3d& v : f) f_rms += dot(v, v);
  f_rms = std::sqrt(f_rms / f.size());
  // h = 1e-6: the dihedrals' forces change fast where an angle is far bent (~1 / sin theta), so
  // the truncation error h^2 |U'''| needs the smaller step; rounding, eps |U| / h ~ 2e-16 * 3e2 /
  // 1e-6 ~ 6e-8, stays below the tolerance.
  const double h = 1e-6;
  int checked = 0;
  double worst = 0;
  for (size_t i = 0; i < state.size(); i += 2) {
    for (int d = 0; d < 3; ++d) {
      SystemState p = state, m = state;
      double* xp = d == 0 ? &p.position[i].x : d == 1 ? &p.position[i].y : &p.position[i].z;
      double* xm = d == 0 ? &m.position[i].x : d == 1 ? &m.position[i].y : &m.position[i].z;
      *xp += h;
      *xm -= h;
      reference.set_state(p);
      const double up = reference.observables().potential;
      reference.set_state(m);
      const double um = reference.observables().potential;
      const double fd = -(up - um) / (2 * h);
      const double fi = d == 0 ? f[i].x : d == 1 ? f[i].y : f[i].z;
      const double tol = target().fp32 ? 2e-3 * std::max(f_rms, std::fabs(fi)) : 1e-6 * std::max(1.0, std::fabs(fi));
      worst = std::max(worst, std::fabs(fi - fd) / tol);
      EXPECT_NEAR(fi, fd, tol) << "particle " << i << " component " << d;
      ++checked;
    }
  }
  std::printf("[bonded forces] %s: the largest |F - F_fd| is %.3g of the tolerance, over %d components\n",
              target().label().c_str(), worst, checked);
  EXPECT_GT(checked, 100);
}

// NVE with angles and dihedrals: 256 beads of charged semiflexible chains (the bonded system),
// thermalised, then 10^4 steps of velocity Verlet at dt = 0.002. Every term is smooth (harmonic
// bonds; the angle and dihedral potentials; LJ and Debye-Hueckel shifted to zero at their cutoffs,
// whose force jumps there by |V'(rc)| ~ 0.04 and ~ 0.01), so what wanders is, as in NveEnergyDrift,
// the cutoff crossings: at rho = 0.25 about a quarter of that test's rate, with steps of |v| dt ~
// 0.003 (dt 0.002): per crossing ~ 0.04 * 0.003 / 2 = 6e-5, ~11 crossings per particle and tau
// over 20 tau: sqrt(256 * 220) * 6e-5 / 256 ~ 6e-5 per particle. The stiff springs (k = 200,
// period 2 pi sqrt(mu / k) ~ 0.36: 180 steps) oscillate by O(dt^2 k) ~ 1e-3 per bond in the
// shadow energy without drifting. We allow 1e-3 per particle for the drift and 3e-3 for the
// deviation from the line. A wrong angle or dihedral force (a sign, a factor, a missing term on
// one of the particles) drifts by O(0.1..1) per particle within a few hundred steps (on the CPU,
// the force on l of every dihedral with the wrong sign drifts by 94 per particle over the run;
// measured with the right one: drift -4e-5, deviation 7e-5). fp32: as NveEnergyDrift.
//
// The quadratic dihedral is left out here (its dihedrals become fourier ones): V = k (phi -
// phi0)^2 with phi - phi0 taken in [-180, 180) has a cusp where phi is opposite phi0, at which the
// force jumps (as in LAMMPS), and crossing it costs energy in NVE like a cut-off without a shift.
TEST_P(Physics, NveEnergyDriftWithAnglesAndDihedrals) {
  test::TestSystem s = test::bonded_system();
  for (Dihedral& d : s.built.topology.dihedrals)
    if (d.type == 4) d.type = 0;
  SystemState start;
  {
    auto melt = backend(s.model(), s.built.state);
    melt->advance(2000);
    melt->get_state(start);
  }
  Model nve = s.model();
  nve.integrator.kind = IntegratorKind::VelocityVerlet;
  auto b = backend(nve, start);
  const double n = static_cast<double>(start.size());
  const int kSteps = 10000, kEvery = 50;
  std::vector<double> t, e;
  for (int k = 0; k <= kSteps; k += kEvery) {
    if (k > 0) b->advance(kEvery);
    const Observables o = b->observables();
    t.push_back(k);
    e.push_back(o.total() / n);
  }
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
  std::printf("NVE bonded N=%d on %s: drift %.3g per particle over %d steps, largest deviation %.3g\n",
              static_cast<int>(n), target().label().c_str(), drift, kSteps, worst);
  EXPECT_LT(std::fabs(drift), 1e-3);
  EXPECT_LT(worst, 3e-3);
}

// The CPU reference runs here in every build (CI); the CUDA backend, once per registered
// strategy, in pairmd_gpu_tests (built with PAIRMD_PHYSICS_ON_GPU).
#ifdef PAIRMD_PHYSICS_ON_GPU
INSTANTIATE_TEST_SUITE_P(Cuda, Physics, ::testing::ValuesIn(test::gpu_targets()), test::target_name);
#else
INSTANTIATE_TEST_SUITE_P(Cpu, Physics, ::testing::Values(test::cpu_target()), test::target_name);
#endif

}  // namespace
}  // namespace pairmd
