// Direct Coulomb Summation benchmark: atom evaluations per second (charged atoms x lattice
// points / time) of every GPU kernel and of the CPU reference, with the accuracy of each GPU
// kernel against the double-precision reference.
//
//   dcs_bench [--cases small,large] [--repeats 5] [--csv dcs_bench.csv] [--kernels k1,k2,...]
//             [--scatter-atoms-large N] [--cpu-planes P] [--seed S]
//
// Cases: small = 10,000 atoms on 64^3, large = 100,000 atoms on 256^3 (spacing 0.5, atoms
// uniform over the lattice extent, charges of random sign and magnitude 0.1..1, never zero).
// GPU times are the median over repeats of the kernels' CUDA-event time (after one warm-up
// run). The CPU reference runs on the first P z-planes of the lattice (all atoms): the rate per
// evaluation does not depend on how many planes there are, and the whole 256^3 lattice would
// take minutes; those planes are also the reference for every GPU kernel's error. The scatter
// kernel issues one float atomicAdd per evaluation; on the large case it uses the first N atoms
// (default 10,000) to keep its run time in seconds, and its rate is per evaluation as well.
// gather_mixed_rsqrt is gather_coalesced with S of each thread's C points taking 1/sqrt on the FMA
// pipes (kernels/dcs/soft_rsqrt.h) instead of the special-function units, whose 16 lanes per SM
// bound the other kernels near 4,182 G evaluations/s on the H100: it is kept as a default only if
// it beats gather_coalesced at <= 2e-6 relative RMS error. --kernels runs only the named kernels
// (the CPU reference always runs: it is the error reference).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "analysis/potential_map.h"
#include "kernels/dcs/dcs_launch.h"

using namespace pairmd;

namespace {

struct Options {
  std::string cases = "small,large", csv = "dcs_bench.csv";
  std::string kernels;  // empty: every kernel
  int repeats = 5, cpu_planes = 4;
  size_t scatter_atoms_large = 10000;
  unsigned seed = 2026;
};

// CLI11 (as pairmd's own commands): --help exits 0, bad input (an unknown option, a missing or
// non-numeric value) exits 2 with CLI11's message.
Options parse_options(int argc, char** argv) {
  Options o;
  CLI::App app{"Direct Coulomb Summation benchmark: every GPU kernel and the CPU reference", "dcs_bench"};
  app.add_option("--cases", o.cases, "small, large or both (default small,large)");
  app.add_option("--repeats", o.repeats, "timed repeats per kernel, after one warm-up (default 5)");
  app.add_option("--csv", o.csv, "CSV output (default dcs_bench.csv)");
  app.add_option("--kernels", o.kernels, "comma-separated kernels to run (default every kernel)");
  app.add_option("--scatter-atoms-large", o.scatter_atoms_large, "atoms of the scatter kernel, large case (10000)");
  app.add_option("--cpu-planes", o.cpu_planes, "z-planes of the CPU reference (default 4)");
  app.add_option("--seed", o.seed, "seed of the atoms (default 2026)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    std::exit(app.exit(e) == 0 ? 0 : 2);
  }
  return o;
}

struct Case {
  std::string name;
  size_t atoms;
  int n;  // lattice points per direction
};

std::vector<Case> selected_cases(const std::string& text) {
  std::vector<Case> cases;
  if (text.find("small") != std::string::npos) cases.push_back({"small", 10000, 64});
  if (text.find("large") != std::string::npos) cases.push_back({"large", 100000, 256});
  return cases;
}

constexpr double kSpacing = 0.5;
constexpr double kFloor = 0.5 * kSpacing;  // the distance floor

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

// The same atoms twice: as the CPU reference takes them, and packed x, y, z, q in float for the GPU.
struct Atoms {
  ChargeList charges;
  std::vector<float> xyzq;
};

// Uniform over the lattice extent, charges of random sign and magnitude 0.1..1.
Atoms random_atoms(const Case& c, unsigned seed) {
  const double extent = kSpacing * (c.n - 1);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> pos(0.0, extent), mag(0.1, 1.0);
  Atoms atoms;
  for (size_t a = 0; a < c.atoms; ++a) {
    const double x = pos(rng), y = pos(rng), z = pos(rng), q = (rng() & 1 ? 1 : -1) * mag(rng);
    atoms.charges.add(x, y, z, q);
    atoms.xyzq.insert(atoms.xyzq.end(), {float(x), float(y), float(z), float(q)});
  }
  return atoms;
}

struct CpuReference {
  Grid3 ref;  // the first planes of the lattice: the error reference of every GPU kernel
  double seconds = 0, gevals_per_s = 0;
};

// On the first --cpu-planes planes only: the rate per evaluation does not depend on the number of
// planes, and the whole large lattice would take minutes. At most 3 repeats, for the same reason.
CpuReference run_cpu_reference(const Case& c, const ChargeList& atoms, const Options& o) {
  CpuReference cpu;
  const int planes = std::min(o.cpu_planes, c.n);
  cpu.ref.dims = {c.n, c.n, planes};
  cpu.ref.spacing = {kSpacing, kSpacing, kSpacing};
  std::vector<double> times;
  for (int r = 0; r < std::max(1, std::min(o.repeats, 3)); ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    potential_cpu(atoms, 1.0, kFloor, cpu.ref);
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  cpu.seconds = median(times);
  const double evals = double(c.atoms) * cpu.ref.size();
  cpu.gevals_per_s = 1e-9 * evals / cpu.seconds;
  return cpu;
}

void print_headers(std::ostream& csv) {
  csv << "case,kernel,coarsen,atoms,points,median_ms,gevals_per_s,rel_rms,max_err_over_max_ref,soft_rsqrt\n";
  char line[256];
  std::snprintf(line, sizeof line, "%-6s %-17s %3s %8s %10s %11s %14s %10s %10s\n", "case", "kernel", "C", "atoms",
                "points", "median ms", "Geval/s", "rel RMS", "max err");
  std::cout << line;
}

void print_cpu_row(const Case& c, const CpuReference& cpu, std::ostream& csv) {
  char line[256];
  std::snprintf(line, sizeof line, "%-6s %-17s %3s %8zu %10zu %11.3f %14.3f %10s %10s\n", c.name.c_str(), "cpu", "-",
                c.atoms, cpu.ref.size(), 1e3 * cpu.seconds, cpu.gevals_per_s, "ref", "ref");
  std::cout << line << std::flush;
  csv << c.name << ",cpu,," << c.atoms << "," << cpu.ref.size() << "," << 1e3 * cpu.seconds << "," << cpu.gevals_per_s
      << ",,\n";
}

// One row of the GPU table: a kernel, its points per thread C and, for gather_mixed_rsqrt, S of
// those points on the FMA pipes.
struct KernelRun {
  dcs::GpuKernel k;
  const char* name;
  int coarsen;
  int soft = 0;
};

const std::vector<KernelRun>& kernel_runs() {
  static const std::vector<KernelRun> runs = {
      {dcs::GpuKernel::Scatter, "scatter", 1},
      {dcs::GpuKernel::Gather, "gather", 1},
      {dcs::GpuKernel::GatherCoarsened, "gather_coarsened", 4},
      {dcs::GpuKernel::GatherCoarsened, "gather_coarsened", 8},
      {dcs::GpuKernel::GatherCoarsened, "gather_coarsened", 16},
      {dcs::GpuKernel::GatherCoalesced, "gather_coalesced", 4},
      {dcs::GpuKernel::GatherCoalesced, "gather_coalesced", 8},
      {dcs::GpuKernel::GatherCoalesced, "gather_coalesced", 16},
      {dcs::GpuKernel::GatherMixedRsqrt, "gather_mixed_rsqrt", 8, 1},
      {dcs::GpuKernel::GatherMixedRsqrt, "gather_mixed_rsqrt", 8, 2},
      {dcs::GpuKernel::GatherMixedRsqrt, "gather_mixed_rsqrt", 16, 2},
      {dcs::GpuKernel::GatherMixedRsqrt, "gather_mixed_rsqrt", 16, 3},
      {dcs::GpuKernel::GatherMixedRsqrt, "gather_mixed_rsqrt", 16, 4},
  };
  return runs;
}

bool selected(const Options& o, const KernelRun& run) {
  return o.kernels.empty() || ("," + o.kernels + ",").find("," + std::string(run.name) + ",") != std::string::npos;
}

struct Errors {
  double rel_rms = 0, max_rel = 0;  // max_rel: max |gpu - ref| / max |ref|
};

Errors compare(const std::vector<float>& gpu, const Grid3& ref) {
  double se = 0, sr = 0, emax = 0, rmax = 0;
  for (size_t p = 0; p < ref.values.size(); ++p) {
    const double e = gpu[p] - ref.values[p];
    se += e * e;
    sr += ref.values[p] * ref.values[p];
    emax = std::max(emax, std::fabs(e));
    rmax = std::max(rmax, std::fabs(ref.values[p]));
  }
  return {std::sqrt(se / sr), emax / rmax};
}

struct GpuResult {
  size_t atoms = 0;      // fewer than the case's for scatter on the large case
  bool checked = false;  // whether the error was measured: only when all atoms were used
  double median_ms = 0, gevals_per_s = 0;
  Errors err;
};

// The median of --repeats CUDA-event times after one warm-up, on the whole lattice; `out` is the
// case's output buffer, reused by every run.
GpuResult time_gpu_run(const KernelRun& run, const Case& c, const Atoms& atoms, const CpuReference& cpu,
                       const Options& o, std::vector<float>& out) {
  dcs::GpuLattice lat;
  lat.nx = lat.ny = lat.nz = c.n;
  lat.hx = lat.hy = lat.hz = static_cast<float>(kSpacing);
  const size_t points = size_t(c.n) * c.n * c.n;
  GpuResult res;
  // Scatter issues one atomicAdd per evaluation: fewer atoms on the large case keep it to seconds.
  res.atoms = c.atoms;
  if (run.k == dcs::GpuKernel::Scatter && c.name == "large") res.atoms = std::min(res.atoms, o.scatter_atoms_large);
  dcs::GpuOptions opt;
  opt.floor2 = static_cast<float>(kFloor * kFloor);
  opt.coarsen = run.coarsen == 1 ? 8 : run.coarsen;
  opt.soft_rsqrt = run.soft;
  std::vector<double> ms;
  for (int r = 0; r <= o.repeats; ++r) {
    const double t = dcs::gpu_potential(run.k, lat, atoms.xyzq.data(), res.atoms, out.data(), opt);
    if (r > 0) ms.push_back(t);  // r == 0: warm-up
  }
  res.median_ms = median(ms);
  res.gevals_per_s = 1e-9 * double(res.atoms) * points / (1e-3 * res.median_ms);
  res.checked = res.atoms == c.atoms;
  if (res.checked) {
    std::vector<float> slab(out.begin(), out.begin() + cpu.ref.size());
    res.err = compare(slab, cpu.ref);
  }
  return res;
}

void print_gpu_row(const Case& c, const KernelRun& run, const GpuResult& res, std::ostream& csv) {
  const size_t points = size_t(c.n) * c.n * c.n;
  char e1[32] = "-", e2[32] = "-";
  if (res.checked) {
    std::snprintf(e1, sizeof e1, "%.2e", res.err.rel_rms);
    std::snprintf(e2, sizeof e2, "%.2e", res.err.max_rel);
  }
  char line[256];
  std::snprintf(line, sizeof line, "%-6s %-17s %3d %8zu %10zu %11.3f %14.3f %10s %10s%s\n", c.name.c_str(), run.name,
                run.coarsen, res.atoms, points, res.median_ms, res.gevals_per_s, e1, e2,
                run.soft ? (" S=" + std::to_string(run.soft)).c_str() : "");
  std::cout << line << std::flush;
  csv << c.name << "," << run.name << "," << run.coarsen << "," << res.atoms << "," << points << "," << res.median_ms
      << "," << res.gevals_per_s << "," << (res.checked ? e1 : "") << "," << (res.checked ? e2 : "") << "," << run.soft
      << "\n";
}

// What a case's closing line reports: scatter against gather, and the fastest run.
struct Summary {
  double rate_scatter = 0, rate_gather = 0, best_rate = 0;
  std::string best;

  void add(const KernelRun& run, double rate) {
    if (run.k == dcs::GpuKernel::Scatter) rate_scatter = rate;
    if (run.k == dcs::GpuKernel::Gather) rate_gather = rate;
    if (rate > best_rate)
      best_rate = rate, best = std::string(run.name) + " C=" + std::to_string(run.coarsen) +
                               (run.soft ? " S=" + std::to_string(run.soft) : std::string());
  }
};

void print_summary(const Case& c, const Summary& s, const CpuReference& cpu) {
  std::cout << c.name << ": ";
  if (s.rate_gather > 0 && s.rate_scatter > 0)
    std::cout << "gather / scatter speed ratio " << s.rate_gather / s.rate_scatter << ", ";
  std::cout << "best " << s.best << " at " << s.best_rate << " Geval/s, " << s.best_rate / cpu.gevals_per_s
            << "x the CPU reference\n";
}

void run_gpu_kernels(const Case& c, const Atoms& atoms, const CpuReference& cpu, const Options& o, std::ostream& csv) {
  std::vector<float> out(size_t(c.n) * c.n * c.n);
  Summary summary;
  for (const KernelRun& run : kernel_runs()) {
    if (!selected(o, run)) continue;
    const GpuResult res = time_gpu_run(run, c, atoms, cpu, o, out);
    summary.add(run, res.gevals_per_s);
    print_gpu_row(c, run, res, csv);
  }
  print_summary(c, summary, cpu);
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse_options(argc, argv);
  std::string why;
  const bool gpu = dcs::gpu_available(&why);
  std::cout << "dcs_bench: " << why << "\n";
  std::ofstream csv(o.csv);
  print_headers(csv);
  for (const Case& c : selected_cases(o.cases)) {
    const Atoms atoms = random_atoms(c, o.seed);
    const CpuReference cpu = run_cpu_reference(c, atoms.charges, o);
    print_cpu_row(c, cpu, csv);
    if (gpu) run_gpu_kernels(c, atoms, cpu, o, csv);
  }
  std::cout << "wrote " << o.csv << "\n";
  return 0;
}
