// What the tests share, in one header and one namespace (pairmd::test, so that GoogleTest's
// ::testing stays visible inside namespace pairmd):
//   - systems from YAML text (make_system), small versions of the example systems, jiggle;
//   - backends by name: every target a physics test runs on (the CPU reference and each
//     registered GPU strategy), and the skip where no GPU is;
//   - files and processes: scratch directories, reading and writing files, running the pairmd
//     binary (as a child with limits and signals, or through the shell);
//   - potential-map inputs: random charges, lattices, boxes, a state holding the charges.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "analysis/potential_map.h"
#include "backends/backend.h"
#include "backends/cpu_backend.h"
#include "backends/strategies.h"
#include "base/box.h"
#include "base/grid.h"
#include "base/system_state.h"
#include "engine/config.h"
#include "engine/system_builder.h"

// Skips the test, with the reason, where no GPU can run it (no device, or built without CUDA).
// scripts/test.sh looks for "no GPU: " to say why GPU tests were skipped.
#define PAIRMD_REQUIRE_GPU()                                                  \
  do {                                                                        \
    std::string why_;                                                         \
    if (!::pairmd::cuda_available(&why_)) GTEST_SKIP() << "no GPU: " << why_; \
  } while (0)

namespace pairmd::test {

// ---- systems ---------------------------------------------------------------------------------

struct TestSystem {
  std::string name;
  RunConfig cfg;
  BuiltSystem built;
  Model model() const { return make_model(cfg, built); }
  std::unique_ptr<CpuBackend> backend() const { return std::make_unique<CpuBackend>(model(), built.state); }
};

inline TestSystem make_system(const std::string& yaml, const std::vector<std::string>& overrides = {},
                              const std::string& name = "test") {
  TestSystem s;
  s.name = name;
  s.cfg = parse_config(yaml, name + ".yaml", overrides);
  // Minimised (chains) on the CPU reference, so that every test binary and target starts from
  // the same bits (the config's backend is "auto": the GPU where there is one).
  BuildOptions build;
  build.minimize_backend = "cpu";
  s.built = build_system(s.cfg, build);
  return s;
}

// A one-type LJ system on an fcc lattice: `cells`^3 * 4 particles.
inline std::string lj_yaml(int cells, double density, const std::string& integrator, double kT, double dt = 0.005,
                           double cutoff = 2.5, bool shift = false, uint64_t seed = 7) {
  std::ostringstream y;
  y << "system:\n"
    << "  types: [{name: A, mass: 1.0}]\n"
    << "  lattice: {kind: fcc, cells: " << cells << ", density: " << density << "}\n"
    << "force_field:\n"
    << "  pair:\n"
    << "    - {potential: lj, cutoff: " << cutoff << ", shift: " << (shift ? "true" : "false")
    << ", coeffs: [{types: [A, A], epsilon: 1.0, sigma: 1.0}]}\n"
    << "integrator: {kind: " << integrator << ", dt: " << dt << ", temperature: " << kT
    << ", friction: 1.0, seed: " << seed << "}\n"
    << "neighbor: {skin: 0.3}\n";
  return y.str();
}

// Small versions of the example systems, for tests that compare backends and strategies on
// realistic configurations.
inline const char* kLjLiquid = R"(
units: lj
system:
  types: [{name: A, mass: 1.0}]
  lattice: {kind: fcc, cells: 6, density: 0.8442}
force_field:
  pair:
    - potential: lj
      cutoff: 2.5
      coeffs: [{types: [A, A], epsilon: 1.0, sigma: 1.0}]
integrator: {kind: langevin, dt: 0.005, temperature: 1.2, friction: 1.0, seed: 11}
neighbor: {skin: 0.3}
)";

inline const char* kKremerGrest = R"(
units: lj
system:
  types: [{name: M, mass: 1.0}]
  chains: {count: 20, length: 25, density: 0.85, bond: fene, seed: 3}
force_field:
  exclusions: none
  bonds: [{name: fene, potential: fene, k: 30.0, r0: 1.5}]
  pair:
    - potential: wca
      coeffs: [{types: [M, M], epsilon: 1.0, sigma: 1.0}]
integrator: {kind: langevin, dt: 0.01, temperature: 1.0, friction: 0.5, seed: 5}
neighbor: {skin: 0.4}
)";

inline const char* kPolyelectrolyte = R"(
units: lj
system:
  types: [{name: M, mass: 1.0, charge: -1.0}, {name: C, mass: 1.0, charge: 1.0}]
  chains: {count: 8, length: 20, density: 0.05, bond: spring, monomer_type: M, charged_every: 2, counterion_type: C, seed: 9}
force_field:
  exclusions: bonds
  bonds: [{name: spring, potential: harmonic, k: 100.0, r0: 1.0}]
  pair:
    - potential: wca
      mixing: geometric
      coeffs: [{type: M, epsilon: 1.0, sigma: 1.0}, {type: C, epsilon: 1.0, sigma: 1.0}]
    - potential: debye_huckel
      cutoff: 6.0
      bjerrum_length: 2.0
      debye_length: 3.0
      shift: true
integrator: {kind: langevin, dt: 0.005, temperature: 1.0, friction: 1.0, seed: 21}
neighbor: {skin: 0.4}
)";

inline std::vector<TestSystem> example_systems() {
  return {make_system(kLjLiquid, {}, "lj_liquid"), make_system(kKremerGrest, {}, "kremer_grest"),
          make_system(kPolyelectrolyte, {}, "polyelectrolyte")};
}

// Two types of charged chains with counterions: LJ between all beads, Debye-Hueckel between
// charges, FENE and harmonic bonds (two bond types), and 1-2 exclusions for the LJ term.
inline const char* kMixedSystem = R"(
system:
  types:
    - {name: M, mass: 1.0, charge: -1.0}
    - {name: C, mass: 1.5, charge: 1.0}
  chains: {count: 6, length: 12, density: 0.15, bond: fene, charged_every: 2, counterion_type: C, seed: 3}
  relax: {steps: 300, max_move: 0.02}
force_field:
  exclusions: bonds
  bonds:
    - {name: fene, potential: fene, k: 30, r0: 1.5}
    - {name: spring, potential: harmonic, k: 50, r0: 1.0}
  pair:
    - potential: lj
      cutoff: 2.5
      shift: true
      coeffs:
        - {types: [M, M], epsilon: 1.0, sigma: 1.0}
        - {types: [M, C], epsilon: 0.5, sigma: 1.1}
        - {types: [C, C], epsilon: 0.8, sigma: 0.9, cutoff: 2.0}
    - potential: debye_huckel
      cutoff: 3.5
      bjerrum_length: 2.0
      debye_length: 1.5
integrator: {kind: langevin, dt: 0.005, temperature: 1.0, friction: 1.0, seed: 11}
neighbor: {skin: 0.4}
)";

// Adds a few harmonic bonds (type 1) between chain ends so both bond kinds are exercised.
inline TestSystem mixed_system() {
  TestSystem s = make_system(kMixedSystem);
  for (int c = 0; c + 1 < 6; c += 2) s.built.topology.bonds.push_back({c * 12 + 11, (c + 1) * 12, 1});
  return s;
}

// Charged chains with every angle, dihedral and improper potential and scaled 1-3 and 1-4 pairs
// (issue #32): every fourth chain is semiflexible (cosine angles, no dihedrals); the others have
// bent angles (harmonic and cosine-squared, stiff enough that no angle gets near 180 degrees,
// where a dihedral's forces grow as 1 / sin theta: straight costs 22 kT in either; with the
// cosine-squared k 20, 8.7 kT, NVE runs jumped in energy as such an angle straightened), dihedrals of all five kinds
// cycled along them and an improper on every fourth bead.
inline const char* kBondedSystem = R"(
units: lj
system:
  types: [{name: M, mass: 1.0, charge: 0.5}, {name: N, mass: 1.5, charge: -0.5}]
  chains: {count: 16, length: 16, density: 0.25, bond: spring, angle: a0, dihedral: d0, seed: 17, min_distance: 0.9}
  relax: {steps: 100, max_move: 0.02}
force_field:
  special_bonds: {lj: [0, 0.5, 0.5], coulomb: [0, 0, 0.8]}
  bonds: [{name: spring, potential: harmonic, k: 200.0, r0: 1.0}]
  angles:
    - {name: a0, potential: cosine, k: 4.0}
    - {name: a1, potential: harmonic, k: 20.0, theta0: 120}
    - {name: a2, potential: cosine_squared, k: 60.0, theta0: 110}
  dihedrals:
    - {name: d0, potential: fourier, terms: [[0.8, 1, 0], [0.3, 3, 40]]}
    - {name: d1, potential: harmonic, k: 0.9, d: -1, n: 2}
    - {name: d2, potential: opls, k1: 1.1, k2: -0.4, k3: 0.6, k4: 0.2}
    - {name: d3, potential: multi_harmonic, a1: 0.5, a2: -0.3, a3: 0.8, a4: 0.2, a5: -0.1}
    - {name: d4, potential: quadratic, k: 0.7, phi0: 150}
  impropers: [{name: i0, potential: harmonic, k: 2.0, chi0: 0}]
  pair:
    - potential: lj
      cutoff: 2.5
      shift: true
      coeffs: [{types: [M, M], epsilon: 1.0, sigma: 1.0}, {types: [M, N], epsilon: 0.8, sigma: 1.0}, {types: [N, N], epsilon: 1.0, sigma: 1.0}]
    - {potential: debye_huckel, cutoff: 4.0, bjerrum_length: 1.0, debye_length: 1.5, shift: true}
integrator: {kind: langevin, dt: 0.002, temperature: 1.0, friction: 1.0, seed: 13}
neighbor: {skin: 0.4}
)";

// The bonded system with its terms spread over the kinds: the chain builder gives every angle
// type a0 and every dihedral d0; here they go to all types (above), every other bead is type N,
// and each fourth bead gets an improper with its neighbours, in chain order (i, j, k, l): each of
// its two planes is spanned by two bonds whose angle has a term, so neither degenerates. (In the
// order (j, i, k, l) the second plane is i, k, l, which nothing keeps from becoming a line; there
// the improper's force grows as 1 / sin of that angle, and NVE runs jumped in energy in 5 of 24
// starts, in double on the CPU as on the GPU.)
inline TestSystem bonded_system(const std::vector<std::string>& overrides = {}) {
  TestSystem s = make_system(kBondedSystem, overrides);
  Topology& t = s.built.topology;
  const int length = s.cfg.system.chains.length;
  auto semiflexible = [&](int bead) { return (bead / length) % 4 == 0; };
  for (size_t k = 0; k < t.angles.size(); ++k)
    t.angles[k].type = semiflexible(t.angles[k].j) ? 0 : 1 + static_cast<int>(k % 2);
  std::vector<Dihedral> kept;
  for (const Dihedral& d : t.dihedrals)
    if (!semiflexible(d.j)) kept.push_back(d);
  t.dihedrals = kept;
  for (size_t k = 0; k < t.dihedrals.size(); ++k) t.dihedrals[k].type = static_cast<int>(k % 5);
  for (size_t i = 0; i < s.built.state.size(); i += 2) {
    s.built.state.type[i] = 1;
    s.built.state.mass[i] = 1.5;
    s.built.state.charge[i] = -0.5;
  }
  for (const Dihedral& d : std::vector<Dihedral>(t.dihedrals))
    if (d.j % 4 == 1) t.impropers.push_back({d.i, d.j, d.k, d.l, 0});
  return s;
}

// Random displacements of up to `amount` in each direction, wrapped back into the box: a
// "random configuration" near the system's own structure (no overlaps that blow up).
inline void jiggle(SystemState& s, double amount, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-amount, amount);
  for (size_t i = 0; i < s.size(); ++i) {
    s.position[i] += Vec3d{u(rng), u(rng), u(rng)};
    s.box.wrap(s.position[i], s.image[i]);
  }
}

// ---- backends ------------------------------------------------------------------------------

// What a physics test runs on: the CPU reference, or the CUDA backend with one strategy.
struct Target {
  std::string backend;        // "cpu" or "cuda"
  std::string strategy;       // the CUDA strategy (registry name); empty for cpu
  bool fp32 = false;          // the backend computes in single precision (its tolerances say so)
  bool deterministic = true;  // the same run gives the same bits (float atomics do not)
  std::string label() const { return strategy.empty() ? backend : backend + "_" + strategy; }
};

// What GoogleTest prints for a parameter.
inline void PrintTo(const Target& t, std::ostream* os) { *os << t.label(); }

inline Target cpu_target() { return {"cpu", "", false, true}; }

// One target per registered strategy (backends/strategies.h): a new strategy is tested as soon
// as it is registered.
inline std::vector<Target> gpu_targets() {
  std::vector<Target> t;
  for (const StrategyInfo& s : kStrategies) t.push_back({"cuda", s.name, true, s.deterministic});
  return t;
}

inline std::unique_ptr<Backend> make_target_backend(const Target& t, Model m, const SystemState& s) {
  if (!t.strategy.empty()) m.strategy = t.strategy;
  return make_backend(t.backend, m, s);
}

// For GoogleTest's parameter names: Cpu/Physics.NveEnergyDrift/cpu, Cuda/.../cuda_pair_slots.
inline std::string target_name(const ::testing::TestParamInfo<Target>& info) { return info.param.label(); }

// ---- files and processes -------------------------------------------------------------------

inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

inline void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

inline bool file_exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

// A fresh directory under the system's temp dir, removed at destruction (kept with
// PAIRMD_KEEP_TEST_FILES set).
struct ScratchDir {
  std::string path;
  explicit ScratchDir(const std::string& tag = "test") {
    std::string templ = (std::filesystem::temp_directory_path() / ("pairmd_" + tag + "_XXXXXX")).string();
    path = mkdtemp(templ.data());
  }
  ~ScratchDir() {
    if (std::getenv("PAIRMD_KEEP_TEST_FILES")) return;
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  std::string operator/(const std::string& name) const { return path + "/" + name; }
  std::vector<std::string> files() const {
    std::vector<std::string> f;
    for (const auto& e : std::filesystem::directory_iterator(path)) f.push_back(e.path().filename().string());
    return f;
  }
};

struct ChildResult {
  int exit_code = -1;  // when exited
  int signal = 0;      // when killed by a signal
  bool timed_out = false;
  std::string out, err;
  double seconds = 0;  // wall time
};

// A running `pairmd` (or any program): argv[0] is the program path.
class Child {
 public:
  // `file_size_limit` > 0: RLIMIT_FSIZE in bytes (a full disk, as the process sees it).
  // `memory_limit` > 0: RLIMIT_AS in bytes. `env`: "NAME=value" entries set in the child.
  Child(const std::vector<std::string>& argv, const std::string& dir, long file_size_limit = 0, long memory_limit = 0,
        const std::vector<std::string>& env = {})
      : out_path_(dir + "/child." + std::to_string(counter()) + ".out"),
        err_path_(out_path_ + ".err"),
        start_(std::chrono::steady_clock::now()) {
    pid_ = fork();
    if (pid_ == 0) {
      const int o = open(out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      const int e = open(err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      const int in = open("/dev/null", O_RDONLY);
      dup2(o, 1);
      dup2(e, 2);
      dup2(in, 0);
      if (chdir(dir.c_str()) != 0) _exit(126);
      if (file_size_limit > 0) {
        struct rlimit rl {
          static_cast<rlim_t>(file_size_limit), static_cast<rlim_t>(file_size_limit)
        };
        setrlimit(RLIMIT_FSIZE, &rl);
      }
      if (memory_limit > 0) {
        struct rlimit rl {
          static_cast<rlim_t>(memory_limit), static_cast<rlim_t>(memory_limit)
        };
        setrlimit(RLIMIT_AS, &rl);
      }
      setenv("OMP_NUM_THREADS", "1", 1);
      for (const std::string& e : env) {
        const size_t eq = e.find('=');
        setenv(e.substr(0, eq).c_str(), e.substr(eq + 1).c_str(), 1);
      }
      std::vector<char*> args;
      for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      execv(args[0], args.data());
      _exit(127);
    }
  }
  ~Child() {
    if (pid_ > 0 && !done_) {
      kill(pid_, SIGKILL);
      wait(1.0);
    }
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  pid_t pid() const { return pid_; }
  void signal(int sig) { kill(pid_, sig); }
  std::string out() const { return read_text(out_path_); }
  std::string err() const { return read_text(err_path_); }
  // Whether the child has ended (it is reaped by wait()).
  bool running() const { return kill(pid_, 0) == 0 && !exited(); }

  ChildResult wait(double timeout_s) {
    ChildResult r;
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    int status = 0;
    for (;;) {
      const pid_t w = waitpid(pid_, &status, WNOHANG);
      if (w == pid_) break;
      if (std::chrono::steady_clock::now() > until) {
        r.timed_out = true;
        kill(pid_, SIGKILL);
        waitpid(pid_, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    done_ = true;
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
    r.out = read_text(out_path_);
    r.err = read_text(err_path_);
    return r;
  }

 private:
  static int counter() {
    static int n = 0;
    return n++;
  }
  bool exited() const {
    // A child that has exited but is not yet reaped is a zombie: /proc says state Z.
    const std::string stat = read_text("/proc/" + std::to_string(pid_) + "/stat");
    const size_t close = stat.rfind(')');
    return close == std::string::npos || (close + 2 < stat.size() && stat[close + 2] == 'Z');
  }
  pid_t pid_ = -1;
  bool done_ = false;
  std::string out_path_, err_path_;
  std::chrono::steady_clock::time_point start_;
};

// The pairmd binary of this build (tests that run it are built with PAIRMD_BINARY), or the one
// PAIRMD_TEST_BINARY names (to show that a test fails on another build, e.g. the one before a fix).
inline std::string pairmd_binary() {
  if (const char* other = std::getenv("PAIRMD_TEST_BINARY")) return other;
#ifdef PAIRMD_BINARY
  return PAIRMD_BINARY;
#else
  ADD_FAILURE() << "this test binary was built without PAIRMD_BINARY";
  return "pairmd";
#endif
}

// Runs `pairmd args...` in `dir` with one OpenMP thread, limits and extra environment.
inline ChildResult run_pairmd(const std::vector<std::string>& args, const std::string& dir, double timeout_s = 120,
                              long file_size_limit = 0, long memory_limit = 0,
                              const std::vector<std::string>& env = {}) {
  std::vector<std::string> argv{pairmd_binary()};
  argv.insert(argv.end(), args.begin(), args.end());
  Child c(argv, dir, file_size_limit, memory_limit, env);
  return c.wait(timeout_s);
}

// Runs `pairmd ARGS` through the shell in `dir` (ARGS quoted for the shell where needed), with
// the test's own OMP_NUM_THREADS (2 if unset): for timings and for command lines as users type them.
inline ChildResult run_pairmd_shell(const std::string& args, const std::string& dir) {
  const std::string out = dir + "/.child.out", err = dir + "/.child.err";
  const std::string cmd = "cd '" + dir + "' && OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} '" + pairmd_binary() + "' " +
                          args + " > '" + out + "' 2> '" + err + "'";
  const auto t0 = std::chrono::steady_clock::now();
  const int status = std::system(cmd.c_str());
  ChildResult r;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = read_text(out);
  r.err = read_text(err);
  std::remove(out.c_str());
  std::remove(err.c_str());
  return r;
}

// A small LJ liquid (256 particles) with a trajectory, thermo and checkpoints; `trajectory` is the
// output section's trajectory mapping.
inline std::string small_lj_config(
    int64_t steps,
    const std::string& trajectory = "{every: 100, velocities_every: 100, observables_every: 50, flush_seconds: 0.2}",
    int64_t checkpoint_every = 200) {
  std::ostringstream s;
  s << "title: small LJ liquid\nunits: lj\nsteps: " << steps << "\n"
    << "system:\n  types: [{name: A, mass: 1.0}]\n  lattice: {kind: fcc, cells: 4, density: 0.8442}\n"
    << "force_field:\n  pair:\n    - potential: lj\n      cutoff: 2.5\n      coeffs: [{types: [A, A], epsilon: 1.0, "
       "sigma: 1.0}]\n"
    << "integrator: {kind: langevin, dt: 0.005, temperature: 1.2, friction: 1.0, seed: 11}\n"
    << "output:\n  thermo_every: 50\n  progress: off\n  checkpoint_every: " << checkpoint_every
    << "\n  trajectory: " << trajectory << "\n";
  return s.str();
}

// ---- potential-map inputs -------------------------------------------------------------------

// n charges uniform in the box [lo, hi], of random sign and magnitude 0.1..1 (never zero).
inline ChargeList random_charges(size_t n, const std::array<double, 3>& lo, const std::array<double, 3>& hi,
                                 unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1), mag(0.1, 1.0);
  ChargeList c;
  for (size_t i = 0; i < n; ++i) {
    const double x = lo[0] + u(rng) * (hi[0] - lo[0]), y = lo[1] + u(rng) * (hi[1] - lo[1]),
                 z = lo[2] + u(rng) * (hi[2] - lo[2]);
    c.add(x, y, z, (rng() & 1 ? 1.0 : -1.0) * mag(rng));
  }
  return c;
}

inline Grid3 lattice(std::array<int, 3> dims, std::array<double, 3> origin, std::array<double, 3> spacing) {
  Grid3 g;
  g.dims = dims;
  g.origin = origin;
  g.spacing = spacing;
  g.values.assign(g.size(), 0.0);
  return g;
}

inline Box make_box(std::array<double, 3> lo, std::array<double, 3> L, bool periodic) {
  Box b;
  b.lo = {lo[0], lo[1], lo[2]};
  b.L = {L[0], L[1], L[2]};
  b.periodic = periodic;
  return b;
}

// A state of particles of one type carrying the charges.
inline SystemState charged_state(const ChargeList& c, const Box& box) {
  SystemState s;
  s.box = box;
  for (size_t i = 0; i < c.size(); ++i) {
    s.position.push_back({c.x[i], c.y[i], c.z[i]});
    s.velocity.push_back({0, 0, 0});
    s.image.push_back({0, 0, 0});
    s.type.push_back(0);
    s.mass.push_back(1);
    s.charge.push_back(c.q[i]);
  }
  s.type_names = {"A"};
  return s;
}

// sqrt(sum (got - want)^2 / sum want^2).
template <typename T>
double rel_rms(const std::vector<T>& got, const std::vector<double>& want) {
  double se = 0, sr = 0;
  for (size_t p = 0; p < want.size(); ++p) {
    const double e = static_cast<double>(got[p]) - want[p];
    se += e * e;
    sr += want[p] * want[p];
  }
  return std::sqrt(se / sr);
}

}  // namespace pairmd::test
