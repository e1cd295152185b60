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

#include "analysis/potential_map.h"
#include "kernels/dcs/dcs_launch.h"

using namespace pairmd;

namespace {

struct Case {
  std::string name;
  size_t atoms;
  int n;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
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

}  // namespace

int main(int argc, char** argv) {
  std::string cases_text = "small,large", csv_path = "dcs_bench.csv", kernels_text;
  int repeats = 5, cpu_planes = 4;
  size_t scatter_atoms_large = 10000;
  unsigned seed = 2026;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << a << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--cases")
      cases_text = next();
    else if (a == "--repeats")
      repeats = std::stoi(next());
    else if (a == "--csv")
      csv_path = next();
    else if (a == "--kernels")
      kernels_text = next();
    else if (a == "--scatter-atoms-large")
      scatter_atoms_large = std::stoul(next());
    else if (a == "--cpu-planes")
      cpu_planes = std::stoi(next());
    else if (a == "--seed")
      seed = static_cast<unsigned>(std::stoul(next()));
    else {
      std::cerr << "usage: dcs_bench [--cases small,large] [--repeats 5] [--csv dcs_bench.csv] [--kernels k1,k2]\n"
                   "                 [--scatter-atoms-large N] [--cpu-planes P] [--seed S]\n";
      return 2;
    }
  }
  std::vector<Case> cases;
  if (cases_text.find("small") != std::string::npos) cases.push_back({"small", 10000, 64});
  if (cases_text.find("large") != std::string::npos) cases.push_back({"large", 100000, 256});

  std::string why;
  const bool gpu = dcs::gpu_available(&why);
  std::cout << "dcs_bench: " << why << "\n";
  std::ofstream csv(csv_path);
  csv << "case,kernel,coarsen,atoms,points,median_ms,gevals_per_s,rel_rms,max_err_over_max_ref,soft_rsqrt\n";
  char line[256];
  std::snprintf(line, sizeof line, "%-6s %-17s %3s %8s %10s %11s %14s %10s %10s\n", "case", "kernel", "C", "atoms",
                "points", "median ms", "Geval/s", "rel RMS", "max err");
  std::cout << line;

  for (const Case& c : cases) {
    const double h = 0.5, extent = h * (c.n - 1);
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> pos(0.0, extent), mag(0.1, 1.0);
    ChargeList atoms;
    std::vector<float> xyzq;
    for (size_t a = 0; a < c.atoms; ++a) {
      const double x = pos(rng), y = pos(rng), z = pos(rng), q = (rng() & 1 ? 1 : -1) * mag(rng);
      atoms.add(x, y, z, q);
      xyzq.insert(xyzq.end(), {float(x), float(y), float(z), float(q)});
    }
    const double floor = 0.5 * h;

    // CPU reference on the first planes: the rate, and the reference values for the errors.
    Grid3 ref;
    const int planes = std::min(cpu_planes, c.n);
    ref.dims = {c.n, c.n, planes};
    ref.spacing = {h, h, h};
    std::vector<double> cpu_times;
    for (int r = 0; r < std::max(1, std::min(repeats, 3)); ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      potential_cpu(atoms, 1.0, floor, ref);
      cpu_times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    const double cpu_s = median(cpu_times);
    const double cpu_evals = double(c.atoms) * ref.size();
    std::snprintf(line, sizeof line, "%-6s %-17s %3s %8zu %10zu %11.3f %14.3f %10s %10s\n", c.name.c_str(), "cpu", "-",
                  c.atoms, ref.size(), 1e3 * cpu_s, 1e-9 * cpu_evals / cpu_s, "ref", "ref");
    std::cout << line << std::flush;
    csv << c.name << ",cpu,," << c.atoms << "," << ref.size() << "," << 1e3 * cpu_s << "," << 1e-9 * cpu_evals / cpu_s
        << ",,\n";
    if (!gpu) continue;

    dcs::GpuLattice lat;
    lat.nx = lat.ny = lat.nz = c.n;
    lat.hx = lat.hy = lat.hz = static_cast<float>(h);
    const size_t points = size_t(c.n) * c.n * c.n;
    std::vector<float> out(points);
    struct Run {
      dcs::GpuKernel k;
      const char* name;
      int coarsen;
      int soft = 0;  // gather_mixed_rsqrt: points per thread on the FMA pipes
    };
    const std::vector<Run> runs = {
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
    double rate_scatter = 0, rate_gather = 0, best_rate = 0;
    std::string best;
    for (const Run& run : runs) {
      if (!kernels_text.empty() &&
          ("," + kernels_text + ",").find("," + std::string(run.name) + ",") == std::string::npos)
        continue;
      size_t n = c.atoms;
      if (run.k == dcs::GpuKernel::Scatter && c.name == "large") n = std::min(n, scatter_atoms_large);
      dcs::GpuOptions opt;
      opt.floor2 = static_cast<float>(floor * floor);
      opt.coarsen = run.coarsen == 1 ? 8 : run.coarsen;
      opt.soft_rsqrt = run.soft;
      std::vector<double> ms;
      for (int r = 0; r <= repeats; ++r) {
        const double t = dcs::gpu_potential(run.k, lat, xyzq.data(), n, out.data(), opt);
        if (r > 0) ms.push_back(t);  // r == 0: warm-up
      }
      const double med = median(ms);
      const double rate = 1e-9 * double(n) * points / (1e-3 * med);
      Errors err;
      if (n == c.atoms) {
        std::vector<float> slab(out.begin(), out.begin() + ref.size());
        err = compare(slab, ref);
      }
      if (run.k == dcs::GpuKernel::Scatter) rate_scatter = rate;
      if (run.k == dcs::GpuKernel::Gather) rate_gather = rate;
      if (rate > best_rate)
        best_rate = rate, best = std::string(run.name) + " C=" + std::to_string(run.coarsen) +
                                 (run.soft ? " S=" + std::to_string(run.soft) : std::string());
      char e1[32] = "-", e2[32] = "-";
      if (n == c.atoms) {
        std::snprintf(e1, sizeof e1, "%.2e", err.rel_rms);
        std::snprintf(e2, sizeof e2, "%.2e", err.max_rel);
      }
      std::snprintf(line, sizeof line, "%-6s %-17s %3d %8zu %10zu %11.3f %14.3f %10s %10s%s\n", c.name.c_str(),
                    run.name, run.coarsen, n, points, med, rate, e1, e2,
                    run.soft ? (" S=" + std::to_string(run.soft)).c_str() : "");
      std::cout << line << std::flush;
      csv << c.name << "," << run.name << "," << run.coarsen << "," << n << "," << points << "," << med << "," << rate
          << "," << (n == c.atoms ? e1 : "") << "," << (n == c.atoms ? e2 : "") << "," << run.soft << "\n";
    }
    std::cout << c.name << ": ";
    if (rate_gather > 0 && rate_scatter > 0)
      std::cout << "gather / scatter speed ratio " << rate_gather / rate_scatter << ", ";
    std::cout << "best " << best << " at " << best_rate << " Geval/s, " << best_rate / (1e-9 * cpu_evals / cpu_s)
              << "x the CPU reference\n";
  }
  std::cout << "wrote " << csv_path << "\n";
  return 0;
}
