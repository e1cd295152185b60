// Helpers shared by the CPU tests: systems from YAML text, the CPU backend on them, and running
// the pairmd binary as a child process.
#pragma once

#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "engine/config.h"
#include "backends/cpu_backend.h"
#include "engine/system_builder.h"

namespace pairmd::test {

struct TestSystem {
  RunConfig cfg;
  BuiltSystem built;
  Model model() const {
    Model m = cfg.model;
    m.topology = built.topology;
    return m;
  }
  std::unique_ptr<CpuBackend> backend() const { return std::make_unique<CpuBackend>(model(), built.state); }
};

inline TestSystem make_system(const std::string& yaml, const std::vector<std::string>& overrides = {}) {
  TestSystem s;
  s.cfg = parse_config(yaml, "test.yaml", overrides);
  s.built = build_system(s.cfg);
  return s;
}

// A one-type LJ system on an fcc lattice: `cells`^3 * 4 particles.
inline std::string lj_yaml(int cells, double density, const std::string& integrator, double kT,
                           double dt = 0.005, double cutoff = 2.5, bool shift = false, uint64_t seed = 7) {
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

struct ChildResult {
  int exit_code = -1;
  std::string out, err;
  double seconds = 0;
};

inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs the pairmd binary with `args` (already shell-quoted where needed) in directory `dir`.
inline ChildResult run_pairmd(const std::string& args, const std::filesystem::path& dir) {
  const std::filesystem::path out = dir / ".child.out", err = dir / ".child.err";
  const std::string cmd = "cd '" + dir.string() + "' && OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} '" PAIRMD_BINARY "' " +
                          args + " > '" + out.string() + "' 2> '" + err.string() + "'";
  const auto t0 = std::chrono::steady_clock::now();
  const int status = std::system(cmd.c_str());
  ChildResult r;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = read_file(out);
  r.err = read_file(err);
  std::filesystem::remove(out);
  std::filesystem::remove(err);
  return r;
}

// A fresh empty directory under the system's temp dir, removed at scope exit.
class TempDir {
 public:
  explicit TempDir(const std::string& tag) {
    std::string templ = (std::filesystem::temp_directory_path() / ("pairmd_" + tag + "_XXXXXX")).string();
    path_ = mkdtemp(templ.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }
  std::vector<std::string> files() const {
    std::vector<std::string> f;
    for (const auto& e : std::filesystem::directory_iterator(path_)) f.push_back(e.path().filename().string());
    return f;
  }

 private:
  std::filesystem::path path_;
};

}  // namespace pairmd::test
