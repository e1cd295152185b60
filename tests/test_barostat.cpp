// The barostat (integrators/barostat.h; the CPU backend's box update): the C-rescale factors and
// their noise, the isobaric volume distribution of an ideal gas (exact: Gamma), the Verlet list
// under a scaled box, bitwise restarts through checkpoints, the box of every trajectory frame,
// and the stop when the box would become too small for minimum image.
#include <gtest/gtest.h>

#include <gsd/gsd.h>

#include <cmath>
#include <cstring>

#include "backends/backend.h"
#include "backends/ensemble.h"
#include "integrators/barostat.h"
#include "io/checkpoint_run.h"
#include "io/gsd_util.h"
#include "io/h5md.h"
#include "neighbor/verlet_list.h"
#include "tests/test_support.h"

namespace pairmd {
namespace {

using test::ScratchDir;

BarostatSettings c_rescale(BarostatCoupling couple, double p0 = 1.0, double tau_p = 2.0, double beta = 0.1,
                           int64_t every = 5) {
  BarostatSettings s;
  s.kind = BarostatKind::CRescale;
  s.pressure = p0;
  s.tau_p = tau_p;
  s.compressibility = beta;
  s.couple = couple;
  s.every = every;
  return s;
}

// Without noise (k_B T = 0) an update is Berendsen's: each edge scales by exp(rate (P_k - P0) / 3)
// with rate = beta_T every dt / tau_p and P_k the pressure its coupling reads.
TEST(Barostat, FactorsFollowThePressureTheirCouplingReads) {
  const double dt = 0.01, rate = 0.1 * 5 * dt / 2.0;
  const PressureDiagonal p{{3.0, 1.0, 2.0}};  // mean 2, xy mean 2
  double mu[3];
  c_rescale_factors(c_rescale(BarostatCoupling::Isotropic), 0.0, dt, p, 100.0, 1, 0, mu);
  for (int a = 0; a < 3; ++a) EXPECT_DOUBLE_EQ(mu[a], std::exp(rate * (2.0 - 1.0) / 3.0)) << a;
  c_rescale_factors(c_rescale(BarostatCoupling::Anisotropic), 0.0, dt, p, 100.0, 1, 0, mu);
  EXPECT_DOUBLE_EQ(mu[0], std::exp(rate * 2.0 / 3.0));
  EXPECT_DOUBLE_EQ(mu[1], 1.0);
  EXPECT_DOUBLE_EQ(mu[2], std::exp(rate / 3.0));
  const PressureDiagonal q{{2.0, 0.0, 0.5}};  // xy mean 1 = P0: x and y stay, z shrinks
  c_rescale_factors(c_rescale(BarostatCoupling::SemiIsotropic), 0.0, dt, q, 100.0, 1, 0, mu);
  EXPECT_DOUBLE_EQ(mu[0], 1.0);
  EXPECT_DOUBLE_EQ(mu[1], 1.0);
  EXPECT_DOUBLE_EQ(mu[2], std::exp(-rate * 0.5 / 3.0));
}

// At P = P0 only the noise moves the box. Over n independent updates the variance of d ln V is
// 2 k_B T rate / V in every coupling, shared out as the header says: ln Lx of iso carries var / 9,
// of semi_iso var / 6, of aniso var / 3. n = 40000 draws: a sample variance is within
// sqrt(2 / n) = 0.7 % of the true one (one sigma), so 5 % is 7 sigma, while a factor missed in
// any share is 33 % or more.
TEST(Barostat, NoiseHasTheVarianceOfEachCoupling) {
  const double kT = 1.5, dt = 0.01, V = 50.0, rate = 0.1 * 5 * dt / 2.0, var = 2.0 * kT * rate / V;
  const PressureDiagonal p{{1.0, 1.0, 1.0}};
  struct Case {
    BarostatCoupling couple;
    double share_x;  // of var, in ln Lx
  };
  for (const Case c : {Case{BarostatCoupling::Isotropic, 1.0 / 9}, Case{BarostatCoupling::SemiIsotropic, 1.0 / 6},
                       Case{BarostatCoupling::Anisotropic, 1.0 / 3}}) {
    const int n = 40000;
    double sx = 0, sxx = 0, sv = 0, svv = 0;
    for (int k = 0; k < n; ++k) {
      double mu[3];
      c_rescale_factors(c_rescale(c.couple), kT, dt, p, V, 42, static_cast<uint64_t>(k), mu);
      const double lx = std::log(mu[0]), lv = std::log(mu[0]) + std::log(mu[1]) + std::log(mu[2]);
      sx += lx, sxx += lx * lx, sv += lv, svv += lv * lv;
    }
    const double vx = (sxx - sx * sx / n) / (n - 1), vv = (svv - sv * sv / n) / (n - 1);
    const char* name = barostat_coupling_name(c.couple);
    EXPECT_NEAR(vv / var, 1.0, 0.05) << name;
    EXPECT_NEAR(vx / (c.share_x * var), 1.0, 0.05) << name;
  }
  // The draws are a function of (seed, step): a restart repeats them, the next step does not.
  double a[3], b[3], c[3];
  c_rescale_factors(c_rescale(BarostatCoupling::Anisotropic), kT, dt, p, V, 42, 7, a);
  c_rescale_factors(c_rescale(BarostatCoupling::Anisotropic), kT, dt, p, V, 42, 7, b);
  c_rescale_factors(c_rescale(BarostatCoupling::Anisotropic), kT, dt, p, V, 42, 8, c);
  EXPECT_EQ(std::memcmp(a, b, sizeof a), 0);
  EXPECT_NE(a[0], c[0]);
}

// 8 particles of an ideal gas (LJ with epsilon 0) at k_B T = 1 under P0 = 0.5: the isobaric
// ensemble's volume is Gamma distributed, p(V) ~ V^N exp(-P0 V / k_B T), so <V> = (N + 1) k_B T / P0
// = 18 and var V = (N + 1) (k_B T / P0)^2 = 36 (a k_B T / V drift too many would give <V> = 20).
// With compressibility 1 / P0 the volume relaxes in tau_p = 1 (200 steps); 400,000 steps sampled
// every 100 give ~1000 independent volumes: sigma(<V>) = 6 / sqrt(1000) ~ 0.2 (0.22 to 0.26 by
// blocking, in runs with three seeds), sigma(var) = 36 sqrt((2 + 6/9) / 1000) ~ 1.9 (1.5 to 2.4).
// Tolerances: 1.0 on <V> (4 sigma; 20 is 8 sigma away) and 8 on the variance (4 sigma).
void expect_ideal_gas_volumes(const std::string& integrator, uint64_t seed) {
  const std::string yaml = std::string(R"(
system:
  types: [{name: A, mass: 1.0}]
  lattice: {kind: sc, cells: 2, density: 0.5}
force_field:
  pair:
    - {potential: lj, cutoff: 0.3, coeffs: [{types: [A, A], epsilon: 0.0, sigma: 1.0}]}
integrator: {kind: )") + integrator +
                           ", dt: 0.005, temperature: 1.0, friction: 1.0, seed: " + std::to_string(seed) + R"(}
neighbor: {skin: 0.3}
barostat: {kind: c_rescale, pressure: 0.5, tau_p: 1.0, compressibility: 2.0}
)";
  const test::TestSystem sys = test::make_system(yaml);
  auto b = sys.backend();
  b->advance(2000);  // from V = 16 to the stationary distribution (10 tau_p)
  SystemState s;
  double sum = 0, sumsq = 0;
  const int n = 4000;
  for (int k = 0; k < n; ++k) {
    b->advance(100);
    b->get_state(s);
    const double v = s.box.volume();
    sum += v, sumsq += v * v;
  }
  const double mean = sum / n, var = (sumsq - sum * sum / n) / (n - 1);
  EXPECT_NEAR(mean, 18.0, 1.0) << integrator;
  EXPECT_NEAR(var, 36.0, 8.0) << integrator;
}

TEST(Barostat, IdealGasSamplesTheIsobaricVolumeDistribution) { expect_ideal_gas_volumes("langevin", 3); }

// A pair just outside the list radius at the build comes within the cutoff when the box is
// compressed, though neither particle moved relative to the box: the rebuild test must see it.
TEST(Barostat, VerletListRebuildsWhenCompressionBringsPairsIn) {
  const double rc = 2.5, skin = 0.3;
  Box box{{0, 0, 0}, {10, 10, 10}, true};
  std::vector<Vec3d> x{{1, 1, 1}, {1 + rc + skin + 0.01, 1, 1}};
  VerletList list(rc, skin);
  list.build(x, box, {});
  EXPECT_EQ(list.neighbors().size(), 0u);
  const double mu[3] = {0.9, 0.9, 0.9};  // the pair ends 0.9 * 2.81 = 2.529 apart: still out
  Box smaller = scaled_box(box, mu);
  for (Vec3d& p : x) p = {mu[0] * p.x, mu[1] * p.y, mu[2] * p.z};
  list.rescale(box, smaller);
  EXPECT_FALSE(list.needs_rebuild(x, smaller));  // nobody moved against the box; 0.9 (rc + skin) - rc = 0.02 left
  // Each moves 0.011 toward the other: the 0.02 is used up (though the pair, 2.507 apart, is
  // still out of range, the list cannot know that): rebuild.
  x[0].x += 0.011;
  x[1].x -= 0.011;
  EXPECT_TRUE(list.needs_rebuild(x, smaller));
  // Compressed beyond rc / (rc + skin): pairs may be in range without any move.
  const double mu2[3] = {0.88, 0.88, 0.88};
  std::vector<Vec3d> y{{1, 1, 1}, {1 + rc + skin + 0.01, 1, 1}};
  list.build(y, box, {});
  const Box smallest = scaled_box(box, mu2);
  for (Vec3d& p : y) p = {mu2[0] * p.x, mu2[1] * p.y, mu2[2] * p.z};
  list.rescale(box, smallest);
  EXPECT_TRUE(list.needs_rebuild(y, smallest));
}

// A liquid compressed hard (P0 far above its pressure) and then expanded: the list's forces stay
// the all-pairs forces at every step (the list as the barostat leaves it, rebuilt or not).
TEST(Barostat, ListForcesStayExactWhileTheBoxScales) {
  for (const char* p0 : {"30.0", "-2.0"}) {
    const test::TestSystem sys =
        test::make_system(test::lj_yaml(4, 0.7, "langevin", 1.2) + "barostat: {kind: c_rescale, pressure: " + p0 +
                          ", tau_p: 0.05, compressibility: 0.05, couple: aniso}\n");
    auto b = sys.backend();
    SystemState s0, s;
    b->get_state(s0);
    for (int step = 0; step < 60; ++step) {
      b->advance(1);
      const std::vector<Vec3d> list = b->forces(), all = b->forces_all_pairs();
      double fmax = 0, worst = 0;
      for (size_t i = 0; i < all.size(); ++i) {
        fmax = std::max(fmax, std::sqrt(dot(all[i], all[i])));
        const Vec3d d = list[i] - all[i];
        worst = std::max(worst, std::sqrt(dot(d, d)));
      }
      ASSERT_LE(worst, 1e-10 * fmax) << "P0 " << p0 << ", step " << step + 1;
    }
    b->get_state(s);
    const double ratio = s.box.volume() / s0.box.volume();
    if (std::string(p0) == "30.0")
      EXPECT_LT(ratio, 0.9) << "the box was to be compressed";
    else
      EXPECT_GT(ratio, 1.05) << "the box was to expand";
  }
}

// The anisotropic couplings read the virial per direction, whose sum must be the virial every
// force term adds to (bonds here, FENE, as well as pairs): the box update checks that and stops
// otherwise, so a term left out of the diagonal cannot go unnoticed.
TEST(Barostat, AnisotropicCouplingsReadEveryForceTermsVirial) {
  for (const char* couple : {"semi_iso", "aniso"}) {
    const test::TestSystem sys = test::make_system(
        std::string(test::kKremerGrest) +
        "barostat: {kind: c_rescale, pressure: 5.0, tau_p: 1.0, compressibility: 0.05, couple: " + couple + "}\n");
    auto b = sys.backend();
    SystemState s0, s;
    b->get_state(s0);
    ASSERT_NO_THROW(b->advance(200)) << couple;
    b->get_state(s);
    EXPECT_NE(s.box.L.z, s0.box.L.z) << couple;
  }
}

// Angles, dihedrals, impropers and scaled 1-3/1-4 pairs add their virial per direction too:
// without it the diagonal would not sum to W, and the anisotropic couplings refuse to run on a
// wrong pressure (CpuBackend::barostat_virial). The bonded test system has every kind.
TEST(Barostat, AnisotropicCouplingsReadTheBondedTermsVirial) {
  for (const char* couple : {"semi_iso", "aniso"}) {
    const test::TestSystem sys = test::bonded_system(
        {"barostat={kind: c_rescale, pressure: 0.2, tau_p: 1.0, compressibility: 0.5, couple: " + std::string(couple) +
         "}"});
    auto b = sys.backend();
    SystemState s0, s;
    b->get_state(s0);
    ASSERT_NO_THROW(b->advance(100)) << couple;
    b->get_state(s);
    EXPECT_NE(s.box.L.x, s0.box.L.x) << couple;
    EXPECT_NE(s.box.L.z, s0.box.L.z) << couple;
  }
}

bool same_bits(const void* a, const void* b, size_t bytes) { return std::memcmp(a, b, bytes) == 0; }

template <typename T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && same_bits(a.data(), b.data(), a.size() * sizeof(T));
}

std::string npt_yaml(const std::string& couple) {
  return test::lj_yaml(4, 0.8442, "langevin", 1.2) +
         "barostat: {kind: c_rescale, pressure: 1.0, tau_p: 0.5, compressibility: 0.05, couple: " + couple +
         ", every: 3}\n";
}

// One backend for 200 steps, in chunks of every length, against 99 steps, a checkpoint and a
// new backend from it for 101 more: the box, positions, velocities and images agree bit for bit.
// (The virial the box update reads is recomputed where a chunk or a restart begins.)
TEST(Barostat, RestartAndChunksAreBitwise) {
  for (const char* couple : {"iso", "aniso"}) {
    ScratchDir dir;
    const test::TestSystem sys = test::make_system(npt_yaml(couple));
    auto a = sys.backend();
    a->advance(200);
    SystemState sa;
    a->get_state(sa);

    auto chunks = sys.backend();
    for (int64_t n : {1, 2, 3, 7, 11, 76, 100}) chunks->advance(n);
    SystemState sb;
    chunks->get_state(sb);
    EXPECT_TRUE(same_bits(&sa.box.L, &sb.box.L, sizeof(Vec3d))) << couple;
    EXPECT_TRUE(same_bits(sa.position, sb.position)) << couple;

    auto c = sys.backend();
    c->advance(99);  // a step with a box update (every: 3): it needs the virial of its positions
    SystemState mid;
    c->get_state(mid);
    write_checkpoint(dir / "mid.h5", mid, sys.built.topology, sys.cfg, 0, c->name());
    const Checkpoint ck = read_checkpoint(dir / "mid.h5");
    auto d = make_backend("cpu", sys.model(), ck.state);
    d->advance(101);
    SystemState sd;
    d->get_state(sd);
    EXPECT_NE(sa.box.L.x, sys.built.state.box.L.x) << "the box did not change";
    EXPECT_TRUE(same_bits(&sa.box.L, &sd.box.L, sizeof(Vec3d))) << couple;
    EXPECT_TRUE(same_bits(sa.position, sd.position)) << couple;
    EXPECT_TRUE(same_bits(sa.velocity, sd.velocity)) << couple;
    EXPECT_TRUE(same_bits(sa.image, sd.image)) << couple;
  }
}

// The box edges of every GSD frame (configuration/box, float).
std::vector<std::array<float, 3>> gsd_boxes(const std::string& path) {
  gsd_handle h{};
  EXPECT_EQ(gsd_open(&h, path.c_str(), GSD_OPEN_READONLY), GSD_SUCCESS) << path;
  std::vector<std::array<float, 3>> out;
  for (uint64_t f = 0; f < gsd_get_nframes(&h); ++f) {
    const gsd_index_entry* e = gsdio::find_chunk(h, f, "configuration/box");
    const std::vector<float> b = gsdio::read_chunk<float>(h, e, GSD_TYPE_FLOAT, 6, 1, "configuration/box");
    out.push_back({b[0], b[1], b[2]});
  }
  gsd_close(&h);
  return out;
}

// Through the program: a run stopped at step 200 and restarted from its checkpoint ends where
// one run of 400 steps ends, bit for bit, with the same frames; every H5MD and GSD frame holds
// the box of its step (which changes), and the thermo CSV the volume and density.
TEST(Barostat, CommandLineRunRecordsTheBoxAndRestartsBitwise) {
  ScratchDir dir;
  test::write_text(dir / "npt.yaml", "steps: 400\nbackend: cpu\n" + npt_yaml("iso") +
                                         "output: {thermo_every: 100, progress: off, trajectory: {every: 100}, "
                                         "gsd: {every: 100}}\n");
  auto full = test::run_pairmd({"run", "npt.yaml", "--output", "full"}, dir.path);
  ASSERT_EQ(full.exit_code, 0) << full.err;
  EXPECT_NE(full.out.find("backend: cpu"), std::string::npos) << full.out;
  auto part = test::run_pairmd({"run", "npt.yaml", "--output", "part", "--steps", "200"}, dir.path);
  ASSERT_EQ(part.exit_code, 0) << part.err;
  auto rest = test::run_pairmd({"run", "npt.yaml", "--restart", "part.checkpoint.h5", "--steps", "400"}, dir.path);
  ASSERT_EQ(rest.exit_code, 0) << rest.err;

  const Checkpoint a = read_checkpoint(dir / "full.checkpoint.h5"), b = read_checkpoint(dir / "part.checkpoint.h5");
  EXPECT_EQ(b.state.step, 400);
  EXPECT_TRUE(same_bits(&a.state.box.L, &b.state.box.L, sizeof(Vec3d)));
  EXPECT_TRUE(same_bits(a.state.position, b.state.position));
  const std::vector<std::array<float, 3>> boxes = gsd_boxes(dir / "full.gsd");
  ASSERT_EQ(boxes.size(), 5u);
  EXPECT_EQ(gsd_boxes(dir / "part.gsd"), boxes);
  for (int64_t f = 0; f < 5; ++f) {
    const H5mdFrame fa = read_h5md_frame(dir / "full.h5", f), fb = read_h5md_frame(dir / "part.h5", f);
    EXPECT_EQ(fb.state.step, 100 * f);
    EXPECT_TRUE(same_bits(&fa.state.box.L, &fb.state.box.L, sizeof(Vec3d))) << "frame " << f;
    EXPECT_TRUE(same_bits(fa.state.position, fb.state.position)) << "frame " << f;
    EXPECT_EQ(boxes[f][0], static_cast<float>(fa.state.box.L.x)) << "frame " << f;
    if (f > 0) EXPECT_NE(boxes[f][0], boxes[f - 1][0]) << "frame " << f << ": the box did not change";
  }
  // The CSV: volume and density of each row's box.
  const std::string csv = test::read_text(dir / "full.thermo.csv");
  EXPECT_NE(csv.find(",volume[sigma^3],density[1/sigma^3],"), std::string::npos) << csv.substr(0, 300);
  const std::string last = csv.substr(csv.rfind("\n400,") + 1);
  std::vector<std::string> cells;
  std::istringstream row(last);
  for (std::string cell; std::getline(row, cell, ',');) cells.push_back(cell);
  ASSERT_GE(cells.size(), 9u);
  EXPECT_NEAR(std::stod(cells[7]), a.state.box.volume(), 1e-9 * a.state.box.volume());
  EXPECT_NEAR(std::stod(cells[8]), 256 / a.state.box.volume(), 1e-9);
}

// A pressure the small box cannot hold: the box would shrink below twice the cutoff plus skin.
// The run stops (exit 1) with the reason, and the checkpoint holds the last good state.
TEST(Barostat, ABoxTooSmallForTheCutoffStopsTheRun) {
  ScratchDir dir;
  // 256 particles at 0.8442: edge 6.72, half 3.36 against 3.0 + 0.3: 2 % of compression is too much
  // (with this seed, at step 93).
  test::write_text(dir / "squeeze.yaml", "steps: 2000\nbackend: cpu\n" +
                                             test::lj_yaml(4, 0.8442, "langevin", 1.2, 0.005, 3.0) +
                                             "barostat: {kind: c_rescale, pressure: 5.0, tau_p: 2.0, "
                                             "compressibility: 0.05}\noutput: {thermo_every: 10, progress: off}\n");
  auto r = test::run_pairmd({"run", "squeeze.yaml"}, dir.path);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("the barostat would shrink the box to"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("is below the largest cutoff plus the skin (3.3"), std::string::npos) << r.err;
  const Checkpoint ck = read_checkpoint(dir / "squeeze.checkpoint.h5");
  EXPECT_GT(ck.state.step, 0);
  EXPECT_EQ(ck.state.step % 10, 0);
  EXPECT_GE(0.5 * std::min({ck.state.box.L.x, ck.state.box.L.y, ck.state.box.L.z}), 3.3);
  for (const Vec3d& x : ck.state.position) ASSERT_TRUE(std::isfinite(x.x + x.y + x.z));
}

// An ensemble's systems share one box, and a barostat would give each its own: refused, with the
// reason (the CUDA ensemble too: tests/test_gpu_barostat.cpp).
TEST(Barostat, EnsemblesAreRefused) {
  const test::TestSystem sys = test::make_system(npt_yaml("iso"));
  const std::vector<SystemState> states(2, sys.built.state);
  const std::vector<EnsembleSystem> systems = {{1.2, 1}, {1.2, 2}};
  try {
    make_ensemble("cpu", sys.model(), states, systems);
    ADD_FAILURE() << "no refusal";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("share one box"), std::string::npos) << e.what();
  }
}

// Replicas in one process on the CPU each run a CPU backend of their own: a barostat gives each
// replica its own box (mode independent: the seeds differ, so the boxes go their own ways).
TEST(Barostat, EachReplicaHasItsOwnBox) {
  ScratchDir dir;
  test::write_text(dir / "npt.yaml", "steps: 300\nbackend: cpu\n" + npt_yaml("iso") +
                                         "replicas: {mode: independent, count: 2, exchange_every: 100}\n"
                                         "output: {thermo_every: 100, progress: off}\n");
  auto r = test::run_pairmd({"run", "npt.yaml"}, dir.path);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::vector<Checkpoint> ck;
  for (int k = 0; k < 2; ++k) {
    const std::string one = dir / ("npt.r" + std::to_string(k) + ".checkpoint.h5");
    const std::string two = dir / ("npt.r0" + std::to_string(k) + ".checkpoint.h5");
    ck.push_back(read_checkpoint(test::file_exists(one) ? one : two));
    EXPECT_EQ(ck.back().state.step, 300);
  }
  const test::TestSystem sys = test::make_system(npt_yaml("iso"));
  for (int k = 0; k < 2; ++k) EXPECT_NE(ck[k].state.box.L.x, sys.built.state.box.L.x) << "replica " << k;
  EXPECT_NE(ck[0].state.box.L.x, ck[1].state.box.L.x);
}

}  // namespace
}  // namespace pairmd
