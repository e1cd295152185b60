// Multilevel summation against the exact sum: time and error of potential maps for 10k, 100k and
// 1M atoms on 0.5 and 1.0 sigma lattices, on the GPU and the CPU, and where MSM starts to win.
//
//   msm_bench [--atoms 10000,100000,1000000] [--spacings 0.5,1.0] [--repeats 3] [--csv msm_bench.csv]
//             [--exact-planes 8] [--cpu-max-atoms 100000] [--crossover | --no-crossover]
//             [--order 6] [--cutoff a] [--grid-spacing h] [--samples 256] [--seed S]
//
// Systems: N atoms uniform in a cube of edge L = 255.5 (N / 1e6)^(1/3) (density 0.06 per sigma^3;
// 1M atoms on the 0.5 spacing give the 512^3 lattice), charges of random sign and
// magnitude 0.1..1 (never zero), distance floor half the spacing; the lattice covers the cube.
//
// What is timed, median of --repeats after a warm-up:
//   msm gpu      the kernels (CUDA events: binning to interpolation) and, separately, the wall time
//                of the whole call (plan on the host, upload, kernels, download, conversion);
//   msm cpu      the CPU reference, wall time, for N <= --cpu-max-atoms (the 1M map takes minutes);
//   exact gpu    gather_coalesced C=8 (the default kernel) on --exact-planes z-planes in the middle
//                of the lattice; the full map's time is that times planes / measured planes (the
//                kernel's rate does not depend on the number of planes);
//   exact cpu    likewise, on 2 planes.
// --exact-planes 0 skips the exact sum (for CPU runs of the large maps, whose exact sum takes hours).
// Error: relative RMS of the MSM map against the exact map on those planes (GPU exact in float,
// whose own error is ~2e-6, or CPU exact in double without a GPU), and the estimate MSM maps
// report (the exact sum in double at --samples random lattice points).
// Crossover: msm and exact times for N = 500 .. 32,000 (GPU) and 250 .. 8,000 (CPU) at each
// spacing, full lattices; the crossover is where exact / msm crosses 1 (log-log interpolation).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "analysis/msm.h"
#include "analysis/potential_map.h"
#include "kernels/dcs/dcs_launch.h"
#include "kernels/dcs/msm_launch.h"

using namespace pairmd;

namespace {

constexpr double kEdgeFor1M = 255.5;

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

struct System {
  ChargeList atoms;
  Grid3 lattice;
  double floor;
};

System make_system(size_t n, double spacing, unsigned seed) {
  System s;
  const double L = kEdgeFor1M * std::cbrt(static_cast<double>(n) / 1e6);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> pos(0.0, L), mag(0.1, 1.0);
  for (size_t a = 0; a < n; ++a) {
    const double x = pos(rng), y = pos(rng), z = pos(rng);
    s.atoms.add(x, y, z, (rng() & 1 ? 1.0 : -1.0) * mag(rng));
  }
  const int pts = static_cast<int>(std::floor(L / spacing + 1e-9)) + 1;
  s.lattice.dims = {pts, pts, pts};
  s.lattice.spacing = {spacing, spacing, spacing};
  s.lattice.origin = {0, 0, 0};
  s.floor = 0.5 * spacing;
  return s;
}

// The exact map on `planes` z-planes starting at k0 (values in units of charge/length), on the GPU
// (default kernel) or the CPU. Returns seconds.
double exact_planes(const System& s, int k0, int planes, bool gpu, std::vector<double>& out) {
  Grid3 g = s.lattice;
  g.dims[2] = planes;
  g.origin[2] = k0 * s.lattice.spacing[2];
  const double t = compute_potential(gpu ? MapKernel::GatherCoalesced : MapKernel::Cpu, s.atoms, 1.0, s.floor, g, 8);
  out = g.values;
  return t;
}

double slab_error(const std::vector<double>& map, const Grid3& lattice, int k0, const std::vector<double>& exact) {
  const size_t plane = static_cast<size_t>(lattice.dims[0]) * lattice.dims[1];
  double se = 0, sr = 0;
  for (size_t p = 0; p < exact.size(); ++p) {
    const double e = map[k0 * plane + p] - exact[p];
    se += e * e;
    sr += exact[p] * exact[p];
  }
  return std::sqrt(se / sr);
}

struct Options {
  std::vector<double> atoms{10000, 100000, 1000000}, spacings{0.5, 1.0};
  int repeats = 3, exact_planes = 8, samples = 256;
  size_t cpu_max_atoms = 100000;
  bool crossover = true;
  std::string csv = "msm_bench.csv";
  MsmParams params;
  unsigned seed = 2026;
};

// CLI11 (as pairmd's own commands): --help exits 0, bad input (an unknown option, a missing or
// non-numeric value) exits 2 with CLI11's message.
Options parse_options(int argc, char** argv) {
  Options o;
  CLI::App app{"Multilevel summation against the exact sum: time, error and crossover", "msm_bench"};
  app.add_option("--atoms", o.atoms, "comma-separated atom counts (default 10000,100000,1000000)")->delimiter(',');
  app.add_option("--spacings", o.spacings, "comma-separated lattice spacings (default 0.5,1.0)")->delimiter(',');
  app.add_option("--repeats", o.repeats, "timed repeats after a warm-up (default 3)");
  app.add_option("--csv", o.csv, "CSV output (default msm_bench.csv)");
  app.add_option("--exact-planes", o.exact_planes, "z-planes of the exact sum; 0 skips it (default 8)");
  app.add_option("--cpu-max-atoms", o.cpu_max_atoms, "largest N of the CPU MSM runs (default 100000)");
  app.add_flag("--crossover,!--no-crossover", o.crossover, "the crossover sweep (default on)");
  app.add_option("--order", o.params.order, "interpolation order (default 6)");
  app.add_option("--cutoff", o.params.cutoff, "splitting distance a (default: from the spacing)");
  app.add_option("--grid-spacing", o.params.grid_spacing, "finest grid spacing h (default: from the spacing)");
  app.add_option("--samples", o.samples, "lattice points of the error estimate (default 256)");
  app.add_option("--seed", o.seed, "seed of the atoms (default 2026)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    std::exit(app.exit(e) == 0 ? 0 : 2);
  }
  return o;
}

struct MsmRun {
  double kernels_ms = 0, wall_ms = 0;
  dcs::MsmGpuTimes phases;
  std::vector<double> map;
  MsmPlan plan;
};

MsmRun run_msm(const System& s, const Options& o, bool gpu, int repeats) {
  MsmRun r;
  MsmParams p = o.params;
  p.gpu = gpu;
  std::vector<double> kern, wall;
  std::vector<dcs::MsmGpuTimes> phases;
  for (int i = 0; i <= repeats; ++i) {
    Grid3 g = s.lattice;
    const double t0 = now();
    r.plan = make_msm_plan(s.atoms, g, p, s.floor);
    if (gpu) {
      const MsmAtoms at = msm_atoms(r.plan, s.atoms, g);
      const std::vector<float> xyzq = msm_gpu_atoms(at);
      std::vector<float> out(r.plan.lattice_points());
      const dcs::MsmGpuTimes t =
          dcs::gpu_msm_potential(msm_gpu_plan(r.plan), xyzq.data(), s.atoms.size(), out.data(), dcs::MsmGpuOptions{});
      g.values.assign(out.begin(), out.end());
      if (i > 0 || repeats == 0) kern.push_back(t.total), phases.push_back(t);
    } else {
      compute_msm_potential(r.plan, s.atoms, 1.0, false, g);
    }
    const double w = 1e3 * (now() - t0);
    if (i > 0 || repeats == 0) wall.push_back(w);
    if (i == repeats) r.map = std::move(g.values);
  }
  r.wall_ms = median(wall);
  if (gpu) {
    r.kernels_ms = median(kern);
    // The phases of the run whose total is the median.
    std::vector<size_t> idx(kern.size());
    for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
    std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return kern[a] < kern[b]; });
    r.phases = phases[idx[idx.size() / 2]];
  }
  return r;
}

// log-log interpolation of the N where ratio(N) = exact / msm crosses 1.
double crossover(const std::vector<double>& n, const std::vector<double>& ratio) {
  for (size_t i = 0; i + 1 < n.size(); ++i)
    if ((ratio[i] - 1) * (ratio[i + 1] - 1) <= 0 && ratio[i] != ratio[i + 1]) {
      const double f = std::log(ratio[i]) / (std::log(ratio[i]) - std::log(ratio[i + 1]));
      return std::exp(std::log(n[i]) + f * (std::log(n[i + 1]) - std::log(n[i])));
    }
  return ratio.empty() ? 0 : ratio.front() > 1 ? -1 : 0;  // -1: msm already faster at the smallest N
}

const char* backend(bool gpu) { return gpu ? "gpu" : "cpu"; }

// The exact map's time on `planes` z-planes from k0, scaled to the whole lattice (the kernel's rate
// does not depend on the number of planes): on the GPU the median of --repeats after a warm-up, on
// the CPU one run (the exact sum is slow there). `exact` gets the planes' values.
double scaled_exact_ms(const System& s, int k0, int planes, bool gpu, int repeats, std::vector<double>& exact) {
  std::vector<double> et;
  for (int r = 0; r <= (gpu ? repeats : 0); ++r) {
    const double t = exact_planes(s, k0, planes, gpu, exact);
    if (r > 0 || !gpu) et.push_back(t);
  }
  const int N = s.lattice.dims[0];
  return 1e3 * median(et) * N / planes;
}

void write_csv_header(std::ostream& csv) {
  csv << "kind,backend,atoms,spacing,points,method,plan,kernels_ms,wall_ms,binning_ms,short_ms,anterp_ms,grids_ms,"
         "interp_ms,"
         "exact_ms,speedup,rel_rms_slab,rel_rms_sampled\n";
}

// One system on one backend: MSM against the exact sum.
struct CaseRow {
  bool gpu;
  size_t n;
  double h;
  int N, planes;  // lattice points per direction; exact planes measured (0: none)
  double exact_ms, rel_rms_slab, rel_rms_sampled;
};

void print_case_row(const CaseRow& r, const MsmRun& m, double points, std::ostream& csv) {
  const double t_msm = r.gpu ? m.kernels_ms : m.wall_ms;
  char line[512];
  std::snprintf(line, sizeof line,
                "%-4s %8zu atoms, %4d^3 at %.2f: msm %10.2f ms (wall %9.2f ms), exact %12.1f ms (%d planes "
                "scaled), %7.1fx; rel RMS %.2e (slab) %.2e (sampled)\n",
                backend(r.gpu), r.n, r.N, r.h, t_msm, m.wall_ms, r.exact_ms, r.planes, r.exact_ms / t_msm,
                r.rel_rms_slab, r.rel_rms_sampled);
  std::cout << line << "     " << m.plan.describe() << "\n";
  if (r.gpu)
    std::printf("     phases ms: binning %.2f, short range %.2f, anterpolation %.2f, grids %.2f, interpolation %.2f\n",
                m.phases.binning, m.phases.short_range, m.phases.anterpolation, m.phases.grids, m.phases.interpolation);
  std::cout << std::flush;
  csv << "case," << backend(r.gpu) << "," << r.n << "," << r.h << "," << points << ",msm,\"" << m.plan.describe()
      << "\"," << (r.gpu ? m.kernels_ms : 0) << "," << m.wall_ms << "," << m.phases.binning << ","
      << m.phases.short_range << "," << m.phases.anterpolation << "," << m.phases.grids << "," << m.phases.interpolation
      << "," << r.exact_ms << "," << r.exact_ms / t_msm << "," << r.rel_rms_slab << "," << r.rel_rms_sampled << "\n";
}

void run_case(const System& s, size_t n, double h, bool gpu, const Options& o, std::ostream& csv) {
  CaseRow r{gpu, n, h, s.lattice.dims[0], 0, 0, 0, 0};
  // A slab in the middle of the lattice; the CPU exact sum on 2 planes at most (it is slow), none
  // with --exact-planes 0 (the sampled estimate only; for CPU runs of large maps).
  r.planes = std::min({r.N, o.exact_planes, gpu ? o.exact_planes : 2});
  const int k0 = (r.N - r.planes) / 2;
  std::vector<double> exact;
  r.exact_ms = r.planes > 0 ? scaled_exact_ms(s, k0, r.planes, gpu, o.repeats, exact) : std::nan("");
  const MsmRun m = run_msm(s, o, gpu, gpu ? o.repeats : 0);
  r.rel_rms_slab = r.planes > 0 ? slab_error(m.map, s.lattice, k0, exact) : std::nan("");
  Grid3 map = s.lattice;
  map.values = m.map;
  r.rel_rms_sampled = sampled_accuracy(s.atoms, 1.0, s.floor, nullptr, map, o.samples).rel_rms;
  print_case_row(r, m, static_cast<double>(s.lattice.size()), csv);
}

// Every --atoms and --spacings system on the GPU (if there is one) and the CPU (up to
// --cpu-max-atoms: the CPU reference of the 1M map takes minutes).
void run_cases(const Options& o, bool have_gpu, std::ostream& csv) {
  for (double nd : o.atoms)
    for (double h : o.spacings) {
      const size_t n = static_cast<size_t>(nd);
      const System s = make_system(n, h, o.seed);
      for (bool gpu : {true, false}) {
        if (gpu && !have_gpu) continue;
        if (!gpu && n > o.cpu_max_atoms) continue;
        run_case(s, n, h, gpu, o, csv);
      }
    }
}

// One size of the crossover sweep, full lattice: prints its row and returns exact time / msm time.
double sweep_ratio(size_t n, double h, bool gpu, const Options& o, std::ostream& csv) {
  const System s = make_system(n, h, o.seed);
  // The CPU exact sum on the larger maps: 2 planes, scaled.
  const int N = s.lattice.dims[0], planes = gpu ? N : std::min(N, 2);
  std::vector<double> exact;
  const double exact_ms = scaled_exact_ms(s, 0, planes, gpu, o.repeats, exact);
  const MsmRun m = run_msm(s, o, gpu, gpu ? o.repeats : 0);
  const double t_msm = gpu ? m.kernels_ms : m.wall_ms;
  char line[512];
  std::snprintf(line, sizeof line,
                "crossover %s spacing %.2f: %6zu atoms %4d^3: exact %9.3f ms, msm %9.3f ms, ratio %.3f\n", backend(gpu),
                h, n, N, exact_ms, t_msm, exact_ms / t_msm);
  std::cout << line << std::flush;
  csv << "sweep," << backend(gpu) << "," << n << "," << h << "," << s.lattice.size() << ",msm,\"" << m.plan.describe()
      << "\"," << (gpu ? m.kernels_ms : 0) << "," << m.wall_ms << ",,,,,," << exact_ms << "," << exact_ms / t_msm
      << ",,\n";
  return exact_ms / t_msm;
}

// The atom counts of the sweep: smaller on the CPU, whose exact sum is slower.
std::vector<double> sweep_sizes(bool gpu) {
  return gpu ? std::vector<double>{500, 1000, 2000, 4000, 8000, 16000, 32000}
             : std::vector<double>{250, 500, 1000, 2000, 4000, 8000};
}

void run_crossover(bool gpu, double h, const Options& o, std::ostream& csv) {
  const std::vector<double> ns = sweep_sizes(gpu);
  std::vector<double> ratio;
  for (double nd : ns) ratio.push_back(sweep_ratio(static_cast<size_t>(nd), h, gpu, o, csv));
  const double x = crossover(ns, ratio);
  char line[512];
  std::snprintf(line, sizeof line, "crossover %s spacing %.2f: msm is faster from %s\n", backend(gpu), h,
                x > 0   ? (std::to_string(static_cast<long>(x)) + " atoms").c_str()
                : x < 0 ? "below the smallest size measured"
                        : "beyond the largest size measured");
  std::cout << line << std::flush;
  csv << "crossover," << backend(gpu) << "," << x << "," << h << ",,,,,,,,,,,,,,\n";
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse_options(argc, argv);
  std::string why;
  const bool gpu = dcs::gpu_available(&why);
  std::cout << "msm_bench: " << why << "\n";
  std::ofstream csv(o.csv);
  write_csv_header(csv);
  run_cases(o, gpu, csv);
  if (o.crossover)
    for (bool on_gpu : {true, false}) {
      if (on_gpu && !gpu) continue;
      for (double h : o.spacings) run_crossover(on_gpu, h, o, csv);
    }
  std::cout << "wrote " << o.csv << "\n";
  return 0;
}
