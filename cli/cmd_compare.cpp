// pairmd compare CONFIG: run every GPU force-summation strategy on the same initial state and
// table speed, time shares, accuracy against the fp64 CPU reference, measured
// reproducibility and GPU memory; CSV and an SVG plot of timesteps/s against N.
#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "cli/run_setup.h"
#include "backends/cpu_backend.h"
#include "backends/strategies.h"
#include "io/svg_plot.h"

namespace pairmd::cli {

namespace {

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string x; std::getline(ss, x, ',');)
    if (!x.empty()) out.push_back(x);
  return out;
}

// Scale the config's system to about n particles (lattices: cubic cell count; chains: count).
std::vector<std::string> size_overrides(const RunConfig& cfg, long n) {
  if (cfg.system.source == SystemSource::Lattice) {
    const int basis = cfg.system.lattice.kind == LatticeKind::Fcc ? 4 : 1;
    const long c = std::max(1L, std::lround(std::cbrt(static_cast<double>(n) / basis)));
    return {"system.lattice.cells=" + std::to_string(c)};
  }
  if (cfg.system.source == SystemSource::Chains) {
    const long per_chain = cfg.system.chains.length;
    return {"system.chains.count=" + std::to_string(std::max(1L, n / std::max(1L, per_chain)))};
  }
  throw std::runtime_error("--sizes needs a lattice or chains system");
}

struct Row {
  long n = 0;
  std::string strategy;
  double ms_per_step = 0, steps_per_s = 0, spread = 0;
  double share_force = 0, share_list = 0, share_integrate = 0, builds_per_step = 0;
  double max_err = NAN, rms_err = NAN;
  std::string reproducible;
  double mib = 0;
  double bytes_per_particle = 0;
  std::string detail;  // the backend's own account of the timed runs
};

// A whole number >= `min` written in full ("10x" and "1e3" are not); throws std::invalid_argument.
long whole_number(const std::string& opt, const std::string& text, long min) {
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE || v < min)
    throw std::invalid_argument(opt + ": expected a whole number >= " + std::to_string(min) + ", got '" + text + "'");
  return v;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? NAN : v[v.size() / 2];
}

bool bitwise_equal(const SystemState& a, const SystemState& b) {
  return a.size() == b.size() && std::memcmp(a.position.data(), b.position.data(), a.size() * sizeof(Vec3d)) == 0 &&
         std::memcmp(a.velocity.data(), b.velocity.data(), a.size() * sizeof(Vec3d)) == 0;
}

}  // namespace

int cmd_compare(const Args& args) {
  ConfigOptions o;
  std::string strategies_arg;  // default: every registered strategy (backends/strategies.h)
  for (const std::string& name : strategy_names()) strategies_arg += (strategies_arg.empty() ? "" : ",") + name;
  std::string sizes_arg, out_prefix, steps_arg = "500", repeats_arg = "5", warmup_arg = "1000";
  bool reference = true;
  OptionReader r{args};
  try {
    while (!r.done()) {
      std::string v;
      if (r.value("--strategies", strategies_arg) || r.value("--sizes", sizes_arg) || r.value("--out", out_prefix) ||
          r.value("--repeats", repeats_arg) || r.value("--warmup", warmup_arg))
        continue;
      if (r.value("--steps", steps_arg)) continue;
      if (r.flag("--no-reference")) {
        reference = false;
        continue;
      }
      if (read_config_option(r, o)) continue;
      if (r.peek().rfind("--", 0) == 0 || !o.config_path.empty()) {
        std::cerr << "pairmd compare: unexpected argument '" << r.peek() << "'\n";
        return kExitUsage;
      }
      o.config_path = args[r.i++];
    }
  } catch (const std::invalid_argument& e) {
    std::cerr << "pairmd compare: " << e.what() << "\n";
    return kExitUsage;
  }
  if (o.config_path.empty()) {
    std::cerr << "usage: pairmd compare CONFIG [--strategies a,b,..] [--steps N] [--sizes n1,n2,..] [--repeats R]\n"
                 "                      [--warmup W] [--no-reference] [--out PREFIX]\n"
                 "                      [--set key.path=value]...\n";
    return kExitUsage;
  }
  long steps = 0, repeats = 0, warmup = 0;
  std::vector<long> sizes;
  try {
    steps = whole_number("--steps", steps_arg, 1);
    repeats = whole_number("--repeats", repeats_arg, 1);
    warmup = whole_number("--warmup", warmup_arg, 0);
    for (const std::string& s : split(sizes_arg)) sizes.push_back(whole_number("--sizes", s, 1));
  } catch (const std::invalid_argument& e) {
    std::cerr << "pairmd compare: " << e.what() << "\n";
    return kExitUsage;
  }
  const std::vector<std::string> strategies = split(strategies_arg);
  std::string why;
  const bool gpu = cuda_available(&why);
  for (const std::string& s : strategies) {
    if (s != "cpu" && !gpu) {
      std::cerr << "pairmd compare: strategy " << s << " needs a GPU, and " << why << " (use --strategies cpu)\n";
      return kExitUsage;
    }
  }

  RunConfig base;
  try {
    base = load_with_options(o);
  } catch (const ConfigError& e) {
    std::cerr << e.what() << "\n";
    return kExitUsage;
  }
  if (sizes.empty()) sizes.push_back(0);  // the config's own size
  if (out_prefix.empty()) out_prefix = output_prefix(base) + ".compare";

  std::vector<Row> rows;
  std::cout << "pairmd compare: " << o.config_path << ", " << steps << " timed steps x " << repeats << " repeats after "
            << warmup << " warm-up steps; " << (gpu ? why : "no GPU") << "\n";
  for (long size : sizes) {
    RunConfig cfg;
    BuiltSystem sys;
    try {
      ConfigOptions so = o;
      if (size > 0)
        for (const std::string& s : size_overrides(base, size)) so.sets.push_back(s);
      cfg = load_with_options(so);
      check_build_memory(cfg, strategies[0] == "cpu" ? "cpu" : "cuda");
      sys = build_system(cfg);
    } catch (const std::exception& e) {
      std::cerr << e.what() << "\n";
      return kExitUsage;
    }
    Model model = cfg.model;
    model.topology = sys.topology;
    const long n = static_cast<long>(sys.state.size());

    // One common, equilibrated start for every strategy (warm-up with the first one).
    SystemState start = sys.state;
    if (warmup > 0) {
      Model m = model;
      m.strategy = strategies[0] == "cpu" ? "pair_slots_fused" : strategies[0];
      auto b = make_backend(strategies[0] == "cpu" ? "cpu" : "cuda", m, start);
      b->advance(warmup);
      b->get_state(start);
    }
    std::vector<Vec3d> ref;
    double ref_rms = 0;
    if (reference) {
      CpuBackend cpu(model, start);
      ref = cpu.forces();
      for (const Vec3d& f : ref) ref_rms += dot(f, f);
      ref_rms = std::sqrt(ref_rms / std::max(1L, n));
    }
    std::cout << "\nN = " << n << "\n"
              << std::left << std::setw(18) << "strategy" << std::right << std::setw(10) << "ms/step" << std::setw(12)
              << "steps/s" << std::setw(8) << "force" << std::setw(7) << "list" << std::setw(7) << "integ" << std::setw(12)
              << "max dF/F" << std::setw(12) << "rms dF/F" << std::setw(12) << "bitwise" << std::setw(10) << "MiB" << "\n";
    for (const std::string& strategy : strategies) {
      Row row;
      row.n = n;
      row.strategy = strategy;
      Model m = model;
      if (strategy != "cpu") m.strategy = strategy;
      const std::string backend_name = strategy == "cpu" ? "cpu" : "cuda";
      try {
        auto b = make_backend(backend_name, m, start);
        if (reference) {
          const std::vector<Vec3d> f = b->forces();
          double mx = 0, ss = 0;
          for (long i = 0; i < n; ++i) {
            const Vec3d d = f[i] - ref[i];
            mx = std::max(mx, std::sqrt(dot(d, d)));
            ss += dot(d, d);
          }
          row.max_err = mx / ref_rms;
          row.rms_err = std::sqrt(ss / n) / ref_rms;
        }
        b->advance(std::min(50L, steps));  // warm-up: first launches, list build
        std::vector<double> ms;
        for (long k = 0; k < repeats; ++k) {
          const auto t0 = std::chrono::steady_clock::now();
          b->advance(steps);
          ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / steps);
        }
        row.ms_per_step = median(ms);
        row.spread = (*std::max_element(ms.begin(), ms.end()) - *std::min_element(ms.begin(), ms.end())) / row.ms_per_step;
        row.steps_per_s = 1000.0 / row.ms_per_step;
        row.detail = b->stats().detail;
        // Time shares from a separate profiled run: GPU time between events around each phase.
        const BackendStats before = b->stats();
        b->set_profiling(true);
        b->advance(steps);
        b->set_profiling(false);
        const BackendStats after = b->stats();
        const double f = after.seconds_force - before.seconds_force, l = after.seconds_list - before.seconds_list,
                     in = after.seconds_integrate - before.seconds_integrate, tot = f + l + in;
        if (tot > 0) {
          row.share_force = f / tot;
          row.share_list = l / tot;
          row.share_integrate = in / tot;
        }
        row.builds_per_step = static_cast<double>(after.list_builds - before.list_builds) / steps;
        row.mib = after.device_bytes / 1048576.0;
        row.bytes_per_particle = static_cast<double>(after.device_bytes) / n;
        b.reset();
        // Reproducibility, measured: two fresh runs from the same state, compared bit for bit.
        const long rsteps = std::min(steps, 300L);
        SystemState s1, s2;
        auto r1 = make_backend(backend_name, m, start);
        r1->advance(rsteps);
        r1->get_state(s1);
        r1.reset();
        auto r2 = make_backend(backend_name, m, start);
        r2->advance(rsteps);
        r2->get_state(s2);
        row.reproducible = bitwise_equal(s1, s2) ? "yes" : "no";
      } catch (const std::exception& e) {
        std::cerr << "  " << strategy << ": " << e.what() << "\n";
        row.reproducible = "error";
      }
      std::cout << std::left << std::setw(18) << strategy << std::right << std::fixed << std::setprecision(4) << std::setw(10)
                << row.ms_per_step << std::setprecision(0) << std::setw(12) << row.steps_per_s << std::setprecision(0)
                << std::setw(7) << 100 * row.share_force << "%" << std::setw(6) << 100 * row.share_list << "%" << std::setw(6)
                << 100 * row.share_integrate << "%" << std::scientific << std::setprecision(2) << std::setw(12) << row.max_err
                << std::setw(12) << row.rms_err << std::setw(12) << row.reproducible << std::fixed << std::setprecision(1)
                << std::setw(10) << row.mib << std::defaultfloat << "\n";
      if (!row.detail.empty()) std::cout << "  " << row.detail << "\n";
      std::cout << std::flush;
      rows.push_back(row);
    }
  }

  const std::string csv_path = out_prefix + ".csv";
  std::ofstream csv(csv_path);
  csv << "n,strategy,ms_per_step,timesteps_per_s,repeat_spread,share_force,share_list,share_integrate,list_builds_per_step,"
         "max_force_err_rel,rms_force_err_rel,bitwise_reproducible,gpu_mib,gpu_bytes_per_particle\n";
  for (const Row& w : rows)
    csv << w.n << "," << w.strategy << "," << w.ms_per_step << "," << w.steps_per_s << "," << w.spread << "," << w.share_force
        << "," << w.share_list << "," << w.share_integrate << "," << w.builds_per_step << "," << w.max_err << "," << w.rms_err
        << "," << w.reproducible << "," << w.mib << "," << w.bytes_per_particle << "\n";
  std::cout << "\nwrote " << csv_path;
  if (sizes.size() > 1) {
    SvgPlot plot("timesteps/s against N (" + base.path + ")", "particles N", "timesteps per second");
    for (const std::string& s : strategies) {
      std::vector<std::pair<double, double>> pts;
      for (const Row& w : rows)
        if (w.strategy == s && w.steps_per_s > 0) pts.push_back({static_cast<double>(w.n), w.steps_per_s});
      plot.add_series(s, pts);
    }
    plot.write(out_prefix + ".svg");
    std::cout << " and " << out_prefix << ".svg";
  }
  std::cout << "\n";
  return kExitOk;
}

}  // namespace pairmd::cli
