// Potential maps (Direct Coulomb Summation) on the CPU: the double-precision reference against a
// naive sum, the lattice set-up, .dx files, time averaging, frame selection, ion placement, the
// run-time observer and the place-ions command. The GPU kernels are checked in test_dcs_gpu.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>

#include "analysis/ion_placement.h"
#include "analysis/potential_map.h"
#include "analysis/potential_map_observer.h"
#include "engine/config.h"
#include "engine/simulation.h"
#include "engine/system_builder.h"
#include "io/dx_writer.h"
#include "kernels/dcs/dcs_launch.h"
#include "tests/test_support.h"

namespace pairmd {
namespace {

std::string temp_path(const std::string& name) { return ::testing::TempDir() + "pairmd_pm_" + name; }

using test::lattice;

ChargeList random_charges(size_t n, double lo, double hi, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> pos(lo, hi), q(-1.0, 1.0);
  ChargeList c;
  for (size_t i = 0; i < n; ++i) c.add(pos(rng), pos(rng), pos(rng), q(rng));
  return c;
}

// The definition, point by point, atom by atom.
double naive(const ChargeList& c, double k_e, double floor, double x, double y, double z, double* abs_sum) {
  double v = 0, a = 0;
  for (size_t i = 0; i < c.size(); ++i) {
    const double r = std::sqrt((x - c.x[i]) * (x - c.x[i]) + (y - c.y[i]) * (y - c.y[i]) + (z - c.z[i]) * (z - c.z[i]));
    const double t = k_e * c.q[i] / std::max(r, floor);
    v += t;
    a += std::fabs(t);
  }
  if (abs_sum) *abs_sum = a;
  return v;
}

TEST(PotentialMap, CpuReferenceMatchesNaiveSum) {
  // Anisotropic spacing, odd sizes, atoms inside and outside the lattice, more atoms than one
  // block of the reference's atom loop (1024), and one atom exactly on a lattice point.
  Grid3 g = lattice({7, 5, 9}, {-1.3, 0.4, 2.0}, {0.7, 0.9, 0.55});
  ChargeList c = random_charges(2500, -3.0, 8.0, 11);
  c.add(-1.3 + 3 * 0.7, 0.4 + 2 * 0.9, 2.0 + 4 * 0.55, 0.8);
  const double k_e = 332.0637, floor = 0.4;
  potential_cpu(c, k_e, floor, g);
  for (int k = 0; k < 9; ++k)
    for (int j = 0; j < 5; ++j)
      for (int i = 0; i < 7; ++i) {
        double abs_sum;
        const double want = naive(c, k_e, floor, -1.3 + i * 0.7, 0.4 + j * 0.9, 2.0 + k * 0.55, &abs_sum);
        // Only the summation order differs: rounding ~ 2500 * 1e-16 of the sum of |terms|.
        EXPECT_NEAR(g.values[(k * 5 + j) * 7 + i], want, 1e-12 * abs_sum) << "point " << i << " " << j << " " << k;
      }
}

TEST(PotentialMap, DistanceFloorCapsThePotentialAtAParticle) {
  Grid3 g = lattice({3, 3, 3}, {0, 0, 0}, {1, 1, 1});
  ChargeList c;
  c.add(1, 1, 1, -2.0);
  potential_cpu(c, 1.0, 0.5, g);
  EXPECT_DOUBLE_EQ(g.values[13], -2.0 / 0.5);            // on the particle: q / floor
  EXPECT_DOUBLE_EQ(g.values[12], -2.0 / 1.0);            // one spacing away
  EXPECT_DOUBLE_EQ(g.values[0], -2.0 / std::sqrt(3.0));  // corner
}

TEST(PotentialMap, LatticeCoversTheBoxOrTheParticlesWithPadding) {
  SystemState s;
  s.box.lo = {-1, 0, 2};
  s.box.L = {10, 7.5, 3};
  s.position = {{1, 2, 3}, {4, 0.5, 4.5}};
  s.charge = {1, -1};
  MapSettings m;
  m.spacing = 1.0;
  Grid3 g = map_lattice(s, m, Units::real());
  EXPECT_EQ(g.dims, (std::array<int, 3>{11, 9, 4}));  // 10/1 + 1, ceil(7.5) + 1, 3/1 + 1
  EXPECT_EQ(g.origin, (std::array<double, 3>{-1, 0, 2}));
  EXPECT_EQ(g.unit, "kcal/mol/e");
  EXPECT_EQ(g.values.size(), g.size());
  m.region = "particles";
  m.padding = 2.0;
  m.spacing = 0.5;
  g = map_lattice(s, m, Units::lj());
  EXPECT_EQ(g.origin, (std::array<double, 3>{-1, -1.5, 1}));
  EXPECT_EQ(g.dims, (std::array<int, 3>{15, 12, 12}));  // padded extents 7, 5.5, 5.5: 7/0.5 + 1, 5.5/0.5 + 1, ...
  for (int d = 0; d < 3; ++d) EXPECT_EQ(g.spacing[d], 0.5);
  EXPECT_EQ(g.unit, "epsilon/q*");
  m.spacing = 1e-4;
  EXPECT_THROW(map_lattice(s, m, Units::lj()), std::invalid_argument);
  m.spacing = 1;
  m.region = "sphere";
  EXPECT_THROW(map_lattice(s, m, Units::lj()), std::invalid_argument);
}

TEST(PotentialMap, KernelNamesAndSelection) {
  for (const std::string& n : map_kernel_names()) EXPECT_EQ(map_kernel_name(parse_map_kernel(n)), n);
  for (const std::string& n : map_method_names()) EXPECT_EQ(map_method_name(parse_map_method(n)), n);
  EXPECT_THROW(parse_map_kernel("fast"), std::invalid_argument);
  std::string why;
  EXPECT_EQ(resolve_map_kernel(MapKernel::Cpu, &why), MapKernel::Cpu);
  if (dcs::gpu_available(&why)) {
    EXPECT_EQ(resolve_map_kernel(MapKernel::Auto, &why), MapKernel::GatherCoalesced);
  } else {
    // No GPU: auto falls back to the CPU, naming a GPU kernel is a clear error.
    EXPECT_EQ(resolve_map_kernel(MapKernel::Auto, &why), MapKernel::Cpu);
    EXPECT_NE(why.find("auto"), std::string::npos);
    try {
      resolve_map_kernel(MapKernel::Gather, &why);
      FAIL() << "a GPU kernel without a GPU must throw";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("'gather' runs on a GPU"), std::string::npos) << e.what();
    }
  }
}

TEST(PotentialMap, DxFileRoundTripsAndListsZFastest) {
  Grid3 g = lattice({4, 3, 5}, {-2.5, 1.25, 100.0}, {0.5, 0.75, 1.5});
  g.unit = "kcal/mol/e";
  std::mt19937_64 rng(3);
  std::normal_distribution<double> v(0, 100);
  for (double& x : g.values) x = v(rng);
  const std::string path = temp_path("roundtrip.dx");
  write_dx(path, g, "test map");
  const Grid3 r = read_dx(path);
  EXPECT_EQ(r.dims, g.dims);
  EXPECT_EQ(r.origin, g.origin);
  EXPECT_EQ(r.spacing, g.spacing);
  EXPECT_EQ(r.unit, g.unit);
  ASSERT_EQ(r.values.size(), g.values.size());
  for (size_t p = 0; p < g.size(); ++p) EXPECT_NEAR(r.values[p], g.values[p], 1e-9 * std::fabs(g.values[p]));

  // DX order: the first values in the file are points (0,0,0), (0,0,1), (0,0,2): z fastest.
  Grid3 order = lattice({2, 2, 3}, {0, 0, 0}, {1, 1, 1});
  for (int k = 0; k < 3; ++k)
    for (int j = 0; j < 2; ++j)
      for (int i = 0; i < 2; ++i) order.values[(k * 2 + j) * 2 + i] = 100 * i + 10 * j + k;
  write_dx(path, order);
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line) && line.find("data follows") == std::string::npos) {
  }
  std::getline(in, line);
  EXPECT_EQ(line, "0 1 2");
  std::getline(in, line);
  EXPECT_EQ(line, "10 11 12");
}

TEST(PotentialMap, DxReaderRejectsBrokenFiles) {
  const std::string path = temp_path("broken.dx");
  {
    std::ofstream f(path);
    f << "object 1 class gridpositions counts 2 2 2\norigin 0 0 0\ndelta 1 0 0\ndelta 0 1 0\ndelta 0 0 1\n"
         "object 3 class array type double rank 0 items 8 data follows\n1 2 3\n4 5\n";
  }
  try {
    read_dx(path);
    FAIL() << "a truncated array must throw";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("ends early"), std::string::npos) << e.what();
  }
  EXPECT_THROW(read_dx(temp_path("does_not_exist.dx")), std::runtime_error);
}

SystemState charged_state(const ChargeList& c, double L) {
  return test::charged_state(c, test::make_box({0, 0, 0}, {L, L, L}, false));
}

TEST(PotentialMap, SeriesAveragesFramesOnTheFirstFramesLattice) {
  MapSettings m;
  m.spacing = 1.0;
  m.kernel = "cpu";
  PotentialMapSeries series(m, Units::lj());
  const SystemState a = charged_state(random_charges(50, 0, 6, 1), 6),
                    b = charged_state(random_charges(50, 0, 6, 2), 6);
  const Grid3 ma = series.add(a);
  const Grid3 mb = series.add(b);
  EXPECT_EQ(series.frames(), 2);
  const Grid3 avg = series.average();
  ASSERT_EQ(avg.dims, ma.dims);
  for (size_t p = 0; p < avg.size(); ++p) EXPECT_NEAR(avg.values[p], 0.5 * (ma.values[p] + mb.values[p]), 1e-12);
  // The lattice is fixed by the first frame even if a later box differs.
  SystemState c = b;
  c.box.L = {9, 9, 9};
  EXPECT_EQ(series.add(c).dims, ma.dims);
  // Particles without charge do not enter the sum.
  SystemState d = a;
  d.charge.assign(d.size(), 0.0);
  for (double v : series.add(d).values) EXPECT_EQ(v, 0.0);
}

TEST(PotentialMap, FrameRangesSelectLikePythonSlices) {
  std::vector<SystemState> frames;
  for (int f = 0; f < 5; ++f) frames.push_back(charged_state(random_charges(5, 0, 4, 100 + f), 4));
  std::vector<int64_t> seen;
  const auto read = [&](int64_t f) {
    if (f == -1) f = 4;
    if (f < 0 || f >= 5) throw std::out_of_range("frame " + std::to_string(f) + " is past the end");
    seen.push_back(f);
    return frames[f];
  };
  MapSettings m;
  m.kernel = "cpu";
  {
    PotentialMapSeries s(m, Units::lj());
    EXPECT_EQ(map_frames(read, parse_frame_range("1:4:2"), s), 2);
    EXPECT_EQ(seen, (std::vector<int64_t>{1, 3}));
  }
  {
    seen.clear();
    PotentialMapSeries s(m, Units::lj());
    std::string note;
    EXPECT_EQ(map_frames(read, parse_frame_range("2:"), s, &note), 3);
    EXPECT_EQ(seen, (std::vector<int64_t>{2, 3, 4}));
    EXPECT_NE(note.find("frames end at 5"), std::string::npos) << note;
  }
  {
    seen.clear();
    PotentialMapSeries s(m, Units::lj());
    EXPECT_EQ(map_frames(read, parse_frame_range("-1"), s), 1);
    EXPECT_EQ(seen, (std::vector<int64_t>{4}));
  }
  {
    PotentialMapSeries s(m, Units::lj());
    EXPECT_THROW(map_frames(read, parse_frame_range("7:"), s), std::out_of_range);   // nothing readable
    EXPECT_THROW(map_frames(read, parse_frame_range("3:9"), s), std::out_of_range);  // closed range past the end
  }
  for (const char* bad : {"", "a:b", "3:1", "0:5:0", "-2", "1:2:3:4", "-1:"})
    EXPECT_THROW(parse_frame_range(bad), std::invalid_argument) << bad;
}

// Ion placement around one fixed charge: where the lowest energy q V lies is known exactly.
struct PlacementFixture {
  Grid3 map;
  std::vector<Vec3d> particles{{5, 5, 5}};
  Box box;
  PlacementFixture(double q_center) {
    map = lattice({41, 41, 41}, {0, 0, 0}, {0.25, 0.25, 0.25});
    ChargeList c;
    c.add(5, 5, 5, q_center);
    potential_cpu(c, 1.0, 0.125, map);
    box.lo = {0, 0, 0};
    box.L = {10, 10, 10};
    box.periodic = false;
  }
};

double dist(Vec3d a, Vec3d b) { return std::sqrt(dot(a - b, a - b)); }

TEST(IonPlacement, CationGoesNextToAnAnionAtTheMinimumDistance) {
  PlacementFixture f(-1.0);
  IonPlacementSettings s;
  s.count = 2;
  s.charge = +1.0;
  s.min_distance = 2.0;
  s.k_e = 1.0;
  s.floor = 0.125;
  const std::vector<PlacedIon> ions = place_ions(f.map, f.particles, f.box, s);
  ASSERT_EQ(ions.size(), 2u);
  // Lattice points at distance >= 2 from (5,5,5): the nearest ones are at exactly 2 (8 spacings).
  EXPECT_NEAR(dist(ions[0].position, {5, 5, 5}), 2.0, 1e-12);
  EXPECT_NEAR(ions[0].potential, -1.0 / 2.0, 1e-12);
  EXPECT_NEAR(ions[0].energy, -0.5, 1e-12);
  // The second cation also sits at 2 from the anion but as far from the first as it can: opposite.
  EXPECT_NEAR(dist(ions[1].position, {5, 5, 5}), 2.0, 1e-12);
  EXPECT_NEAR(dist(ions[1].position, ions[0].position), 4.0, 1e-12);
  EXPECT_NEAR(ions[1].potential, -0.5 + 1.0 / 4.0, 1e-12);  // the anion and the first cation
  // The map now holds both cations' potentials.
  EXPECT_NEAR(f.map.values[(20 * 41 + 20) * 41 + 20], -1.0 / 0.125 + 2 * (1.0 / 2.0), 1e-12);
}

TEST(IonPlacement, LikeChargesAreRepelledAndHighestInvertsTheChoice) {
  {
    // An anion next to an anion: the lowest energy q V = -V is where V is smallest: a corner.
    PlacementFixture f(-1.0);
    IonPlacementSettings s;
    s.charge = -1.0;
    s.min_distance = 2.0;
    s.floor = 0.125;
    const PlacedIon ion = place_ions(f.map, f.particles, f.box, s).at(0);
    EXPECT_NEAR(dist(ion.position, {5, 5, 5}), std::sqrt(75.0), 1e-12);
  }
  {
    PlacementFixture f(-1.0);
    IonPlacementSettings s;
    s.charge = -1.0;
    s.min_distance = 2.0;
    s.floor = 0.125;
    s.highest = true;
    const PlacedIon ion = place_ions(f.map, f.particles, f.box, s).at(0);
    EXPECT_NEAR(dist(ion.position, {5, 5, 5}), 2.0, 1e-12);
  }
}

TEST(IonPlacement, PeriodicImagesAreExcludedAndIonsWrapped) {
  Grid3 map = lattice({11, 11, 11}, {0, 0, 0}, {1, 1, 1});
  ChargeList c;
  c.add(0.2, 5, 5, -1.0);
  potential_cpu(c, 1.0, 0.5, map);
  Box box;
  box.lo = {0, 0, 0};
  box.L = {10, 10, 10};
  box.periodic = true;
  IonPlacementSettings s;
  s.min_distance = 1.5;
  s.floor = 0.5;
  const PlacedIon ion = place_ions(map, {{0.2, 5, 5}}, box, s).at(0);
  // Without images, (10, 5, 5) at open distance 9.8 would be allowed but it is 0.2 from the
  // particle's image; the best allowed point is at distance >= 1.5 through the boundary too.
  const Vec3d d = box.min_image(ion.position - Vec3d{0.2, 5, 5});
  EXPECT_GE(std::sqrt(dot(d, d)), 1.5);
  EXPECT_LT(ion.position.x, 10.0);
  EXPECT_GE(ion.position.x, 0.0);
}

TEST(IonPlacement, ReportsHowManyFitWhenTheRegionIsFull) {
  PlacementFixture f(-1.0);
  IonPlacementSettings s;
  s.count = 50;
  s.min_distance = 4.0;
  s.floor = 0.125;
  try {
    place_ions(f.map, f.particles, f.box, s);
    FAIL() << "50 ions 4 apart do not fit in a 10^3 region";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("of 50 ions fit"), std::string::npos) << e.what();
  }
}

// A small charged system (open boundaries) with two extra particles from system.add_particles.
const char* kChargedConfig = R"(
units: real
steps: 10
system:
  boundary: open
  types:
    - {name: A, mass: 10, charge: 1.0}
    - {name: B, mass: 10, charge: -0.5}
  lattice: {kind: sc, cells: 1, density: 0.125}
  add_particles:
    - {type: B, position: [1.7, 0.2, 1.1]}
    - {type: B, position: [0.3, 1.5, 1.9]}
force_field:
  pair:
    - potential: lj
      cutoff: 3.0
      coeffs:
        - {types: [A, A], epsilon: 0.1, sigma: 1.0}
        - {types: [A, B], epsilon: 0.1, sigma: 1.0}
        - {types: [B, B], epsilon: 0.1, sigma: 1.0}
integrator: {kind: langevin, dt: 0.001, temperature: 300, seed: 5}
)";

TEST(SystemConfig, AddParticlesAppendsTypedParticlesAfterTheBuild) {
  const RunConfig cfg = parse_config(kChargedConfig, "charged.yaml");
  ASSERT_EQ(cfg.system.add_particles.size(), 2u);
  const BuiltSystem sys = build_system(cfg);
  ASSERT_EQ(sys.state.size(), 3u);
  EXPECT_EQ(sys.state.type[1], 1);
  EXPECT_EQ(sys.state.charge[1], -0.5);
  EXPECT_EQ(sys.state.mass[2], 10.0);
  EXPECT_EQ(sys.state.position[2].z, 1.9);
  // Periodic boxes wrap them in.
  std::string periodic = kChargedConfig;
  periodic.replace(periodic.find("boundary: open"), 14, "boundary: periodic");
  periodic.replace(periodic.find("cutoff: 3.0"), 11, "cutoff: 0.5");
  periodic.replace(periodic.find("[1.7, 0.2, 1.1]"), 15, "[5.7, -0.2, 1.1]");
  const BuiltSystem wrapped = build_system(parse_config(periodic, "p.yaml", {"neighbor.skin=0.1"}));
  EXPECT_NEAR(wrapped.state.position[1].x, 1.7, 1e-12);
  EXPECT_NEAR(wrapped.state.position[1].y, 1.8, 1e-12);
  std::string bad = kChargedConfig;
  bad.replace(bad.find("{type: B, position: [1.7"), 9, "{type: C,");
  try {
    parse_config(bad, "bad.yaml");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("system.add_particles[0].type: unknown particle type 'C'"), std::string::npos)
        << e.what();
  }
}

TEST(PotentialMapObserver, RunWritesTheTimeAverageAsDx) {
  std::string text = kChargedConfig;
  text += "analysis:\n  potential_map: {every: 5, spacing: 0.5, region: particles, padding: 1.0, kernel: cpu}\n";
  const RunConfig cfg = parse_config(text, "observed.yaml");
  const BuiltSystem sys = build_system(cfg);
  Model model = cfg.model;
  model.topology = sys.topology;
  Simulation sim(cfg, sys.topology, make_backend("cpu", model, sys.state, nullptr));
  const std::string dx = temp_path("observed.potential.dx");
  std::remove(dx.c_str());
  auto obs = std::make_unique<PotentialMapObserver>(cfg, dx);
  const PotentialMapObserver* o = obs.get();
  sim.add_observer(std::move(obs));
  sim.run(10);
  EXPECT_EQ(o->series().frames(), 3);  // steps 0, 5, 10
  const Grid3 avg = o->series().average();
  const Grid3 file = read_dx(dx);
  EXPECT_EQ(file.dims, avg.dims);
  EXPECT_EQ(file.unit, "kcal/mol/e");
  for (size_t p = 0; p < avg.size(); ++p)
    EXPECT_NEAR(file.values[p], avg.values[p], 1e-8 * std::fabs(avg.values[p]) + 1e-12);
}

using test::read_text;

// `pairmd ARGS`; what it printed goes to cmd.log for the messages below.
int run_pairmd(const std::string& args) {
  const test::ChildResult r = test::run_pairmd_shell(args, ::testing::TempDir());
  test::write_text(temp_path("cmd.log"), r.out + r.err);
  return r.exit_code;
}

TEST(PotentialMapCommands, RunAndPotentialMapAndPlaceIonsEndToEnd) {
  const std::string cfg_path = temp_path("cmd.yaml");
  {
    std::ofstream f(cfg_path);
    f << kChargedConfig
      << "analysis:\n  potential_map: {every: 5, spacing: 0.5, region: particles, padding: 2.0, kernel: auto}\n";
  }
  // pairmd run computes maps (auto: cpu here) and writes the average.
  const std::string prefix = temp_path("cmdrun");
  // --overwrite: the prefix is a fixed name under the temporary directory, left by earlier runs of this test.
  ASSERT_EQ(run_pairmd("run " + cfg_path + " --output " + prefix + " --overwrite"), 0)
      << read_text(temp_path("cmd.log"));
  const Grid3 run_map = read_dx(prefix + ".potential.dx");
  EXPECT_GT(run_map.size(), 0u);

  // pairmd potential-map of the config's system: same as the reference on the built state.
  const std::string dx = temp_path("cmd.dx");
  ASSERT_EQ(run_pairmd("potential-map --config " + cfg_path + " --spacing 0.25 --kernel cpu --out " + dx), 0)
      << read_text(temp_path("cmd.log"));
  const RunConfig cfg = load_config(cfg_path);
  const BuiltSystem sys = build_system(cfg);
  MapSettings m = cfg.potential_map.settings;
  m.spacing = 0.25;
  Grid3 want = map_lattice(sys.state, m, cfg.model.units);
  potential_cpu(charged_particles(sys.state), cfg.model.units.coulomb, m.floor(), want);
  const Grid3 got = read_dx(dx);
  ASSERT_EQ(got.dims, want.dims);
  for (size_t p = 0; p < want.size(); ++p) EXPECT_NEAR(got.values[p], want.values[p], 1e-8 * std::fabs(want.values[p]));

  // Bad input: exit 2, a message.
  EXPECT_EQ(run_pairmd("potential-map --config " + cfg_path + " --spacing -1"), 2);
  EXPECT_EQ(run_pairmd("potential-map traj.h5 --spacing 1"), 2);  // no such file
  EXPECT_NE(read_text(temp_path("cmd.log")).find("cannot open 'traj.h5'"), std::string::npos)
      << read_text(temp_path("cmd.log"));
  if (!dcs::gpu_available(nullptr)) {
    EXPECT_EQ(run_pairmd("potential-map --config " + cfg_path + " --kernel gather"), 2);
    EXPECT_NE(read_text(temp_path("cmd.log")).find("runs on a GPU"), std::string::npos)
        << read_text(temp_path("cmd.log"));
    EXPECT_EQ(run_pairmd("place-ions --config " + cfg_path + " --count 1 --type B --min-distance 1 --kernel scatter"),
              2);
  }

  // place-ions: two cations of a new type; the written config builds the system plus the ions.
  const std::string out = temp_path("ions.yaml");
  ASSERT_EQ(run_pairmd("place-ions --config " + cfg_path +
                       " --count 2 --type B --min-distance 1.0 --spacing 0.25 "
                       "--kernel cpu --out " +
                       out),
            0)
      << read_text(temp_path("cmd.log"));
  const RunConfig with_ions = load_config(out);
  const BuiltSystem sys2 = build_system(with_ions);
  ASSERT_EQ(sys2.state.size(), sys.state.size() + 2);
  for (size_t i = 0; i < sys.state.size(); ++i) EXPECT_EQ(dist(sys2.state.position[i], sys.state.position[i]), 0.0);
  for (size_t i = sys.state.size(); i < sys2.state.size(); ++i) {
    EXPECT_EQ(sys2.state.type_names[sys2.state.type[i]], "B");
    for (size_t j = 0; j < i; ++j) EXPECT_GE(dist(sys2.state.position[i], sys2.state.position[j]), 1.0 - 1e-9);
  }
  // B is an anion (-0.5): the first goes next to the cation A at the minimum distance.
  EXPECT_NEAR(dist(sys2.state.position[sys.state.size()], sys.state.position[0]), 1.0, 0.26);
  EXPECT_EQ(run_pairmd("check " + out), 0) << read_text(temp_path("cmd.log"));

  // A new type without force-field coefficients: the written config would not validate.
  EXPECT_EQ(
      run_pairmd("place-ions --config " + cfg_path +
                 " --count 1 --type NA --charge 1 --min-distance 1 --kernel cpu --out " + temp_path("ions2.yaml")),
      2);
  EXPECT_NE(read_text(temp_path("cmd.log")).find("declare type 'NA'"), std::string::npos)
      << read_text(temp_path("cmd.log"));
  EXPECT_EQ(run_pairmd("place-ions --config " + cfg_path + " --count 1 --type B --charge 1 --min-distance 1"), 2);
}

}  // namespace
}  // namespace pairmd
