// pairmd compare CONFIG: run every GPU force-summation strategy on the same initial state and
// table speed, time shares, accuracy against the fp64 CPU reference, measured
// reproducibility and GPU memory; CSV and an SVG plot of timesteps/s against N.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "backends/cpu_backend.h"
#include "backends/strategies.h"
#include "cli/run_setup.h"
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

// The command line: what to compare, how long, on which sizes.
struct CompareOptions {
  ConfigOptions config;  // CONFIG, --set, --backend, --strategy (compare's --steps is its own)
  std::string strategies, sizes, out, steps = "500", repeats = "5", warmup = "1000";
  bool reference = true;
};

// The numbers of the options, checked.
struct CompareSettings {
  long steps = 0, repeats = 0, warmup = 0;
  std::vector<long> sizes;
  std::vector<std::string> strategies;
  bool gpu = false;
  std::string why;  // the GPU, or why there is none
};

// The fp64 CPU reference's forces on the common start, and their RMS.
struct Reference {
  std::vector<Vec3d> forces;
  double rms = 0;
};

const char* kUsage =
    "usage: pairmd compare CONFIG [--strategies a,b,..] [--steps N] [--sizes n1,n2,..] [--repeats R]\n"
    "                      [--warmup W] [--no-reference] [--out PREFIX]\n"
    "                      [--set key.path=value]...\n";

// Returns kParsed, or the exit code (help, or the message, printed).
int read_compare_options(const Args& args, CompareOptions& o) {
  for (const std::string& name : strategy_names()) o.strategies += (o.strategies.empty() ? "" : ",") + name;
  CLI::App app{"Time the GPU force-summation strategies on CONFIG's system, from one common equilibrated start: "
               "speed, time shares, forces against the fp64 CPU reference, measured reproducibility and GPU "
               "memory; a CSV, and an SVG plot of timesteps/s against N for several sizes (docs/strategies.md).",
               "pairmd compare"};
  prepare_app(app);
  add_config_options(app, o.config, false);
  app.add_option("--strategies", o.strategies,
                 "comma-separated strategies to time, or cpu for the CPU reference; default every registered "
                 "strategy: " + o.strategies)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_option("--steps", o.steps, "timed steps per repeat (default 500)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_option("--sizes", o.sizes, "comma-separated particle counts to scale the system to (default: the config's)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_option("--repeats", o.repeats, "timed repeats per strategy, the median is reported (default 5)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_option("--warmup", o.warmup, "steps of the first strategy to equilibrate the common start (default 1000)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_option("--out", o.out, "output file stem (default: the output prefix + .compare)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_flag_callback("--no-reference", [&o] { o.reference = false; }, "skip the forces against the CPU reference");
  if (const int rc = parse_command_line(app, args, {"compare", "", ""}); rc != kParsed) return rc;
  if (o.config.config_path.empty()) {
    std::cerr << kUsage;
    return kExitUsage;
  }
  return kParsed;
}

// Returns kParsed, or kExitUsage with the message printed: a number that is not one, or a strategy
// that needs a GPU where there is none.
int resolve_settings(const CompareOptions& o, CompareSettings& c) {
  try {
    c.steps = whole_number("--steps", o.steps, 1);
    c.repeats = whole_number("--repeats", o.repeats, 1);
    c.warmup = whole_number("--warmup", o.warmup, 0);
    for (const std::string& s : split(o.sizes)) c.sizes.push_back(whole_number("--sizes", s, 1));
  } catch (const std::invalid_argument& e) {
    std::cerr << "pairmd compare: " << e.what() << "\n";
    return kExitUsage;
  }
  c.strategies = split(o.strategies);
  c.gpu = cuda_available(&c.why);
  for (const std::string& s : c.strategies) {
    if (s != "cpu" && !c.gpu) {
      std::cerr << "pairmd compare: strategy " << s << " needs a GPU, and " << c.why << " (use --strategies cpu)\n";
      return kExitUsage;
    }
  }
  if (c.sizes.empty()) c.sizes.push_back(0);  // the config's own size
  return kParsed;
}

// The config scaled to about `size` particles (0: as it is) and the system it builds.
void build_sized(const CompareOptions& o, const RunConfig& base, long size, const std::string& first_strategy,
                 RunConfig& cfg, BuiltSystem& sys) {
  ConfigOptions so = o.config;
  if (size > 0)
    for (const std::string& s : size_overrides(base, size)) so.sets.push_back(s);
  cfg = load_with_options(so);
  check_build_memory(cfg, first_strategy == "cpu" ? "cpu" : "cuda");
  sys = build_system(cfg);
}

// One common, equilibrated start for every strategy (warm-up with the first one).
SystemState equilibrated_start(const Model& model, const SystemState& built, const std::string& first, long warmup) {
  SystemState start = built;
  if (warmup > 0) {
    Model m = model;
    m.strategy = first == "cpu" ? strategy_name(kDefaultStrategy) : first;
    auto b = make_backend(first == "cpu" ? "cpu" : "cuda", m, start);
    b->advance(warmup);
    b->get_state(start);
  }
  return start;
}

Reference cpu_reference(const Model& model, const SystemState& start) {
  Reference r;
  CpuBackend cpu(model, start);
  r.forces = cpu.forces();
  for (const Vec3d& f : r.forces) r.rms += dot(f, f);
  r.rms = std::sqrt(r.rms / std::max<long>(1, static_cast<long>(start.size())));
  return r;
}

// Max and RMS of |F - F_ref| relative to the reference's RMS force.
void force_errors(Backend& b, const Reference& ref, long n, Row& row) {
  const std::vector<Vec3d> f = b.forces();
  double mx = 0, ss = 0;
  for (long i = 0; i < n; ++i) {
    const Vec3d d = f[i] - ref.forces[i];
    mx = std::max(mx, std::sqrt(dot(d, d)));
    ss += dot(d, d);
  }
  row.max_err = mx / ref.rms;
  row.rms_err = std::sqrt(ss / n) / ref.rms;
}

// Speed: the median of the timed repeats after a short warm-up.
void time_steps(Backend& b, const CompareSettings& c, Row& row) {
  b.advance(std::min(50L, c.steps));  // warm-up: first launches, list build
  std::vector<double> ms;
  for (long k = 0; k < c.repeats; ++k) {
    const auto t0 = std::chrono::steady_clock::now();
    b.advance(c.steps);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / c.steps);
  }
  row.ms_per_step = median(ms);
  row.spread = (*std::max_element(ms.begin(), ms.end()) - *std::min_element(ms.begin(), ms.end())) / row.ms_per_step;
  row.steps_per_s = 1000.0 / row.ms_per_step;
  row.detail = b.stats().detail;
}

// Time shares from a separate profiled run: GPU time between events around each phase.
void time_shares(Backend& b, const CompareSettings& c, long n, Row& row) {
  const BackendStats before = b.stats();
  b.set_profiling(true);
  b.advance(c.steps);
  b.set_profiling(false);
  const BackendStats after = b.stats();
  const double f = after.seconds_force - before.seconds_force, l = after.seconds_list - before.seconds_list,
               in = after.seconds_integrate - before.seconds_integrate, tot = f + l + in;
  if (tot > 0) {
    row.share_force = f / tot;
    row.share_list = l / tot;
    row.share_integrate = in / tot;
  }
  row.builds_per_step = static_cast<double>(after.list_builds - before.list_builds) / c.steps;
  row.mib = after.device_bytes / 1048576.0;
  row.bytes_per_particle = static_cast<double>(after.device_bytes) / n;
}

// Reproducibility, measured: two fresh runs from the same state, compared bit for bit.
std::string reproducible(const std::string& backend_name, const Model& m, const SystemState& start, long steps) {
  const long rsteps = std::min(steps, 300L);
  SystemState s1, s2;
  auto r1 = make_backend(backend_name, m, start);
  r1->advance(rsteps);
  r1->get_state(s1);
  r1.reset();
  auto r2 = make_backend(backend_name, m, start);
  r2->advance(rsteps);
  r2->get_state(s2);
  return bitwise_equal(s1, s2) ? "yes" : "no";
}

// Everything compare measures of one strategy ("cpu": the reference backend) on the start.
Row measure(const std::string& strategy, const Model& model, const SystemState& start, const CompareSettings& c,
            const Reference* ref) {
  Row row;
  row.n = static_cast<long>(start.size());
  row.strategy = strategy;
  Model m = model;
  if (strategy != "cpu") m.strategy = strategy;
  const std::string backend_name = strategy == "cpu" ? "cpu" : "cuda";
  try {
    auto b = make_backend(backend_name, m, start);
    if (ref) force_errors(*b, *ref, row.n, row);
    time_steps(*b, c, row);
    time_shares(*b, c, row.n, row);
    b.reset();
    row.reproducible = reproducible(backend_name, m, start, c.steps);
  } catch (const std::exception& e) {
    std::cerr << "  " << strategy << ": " << e.what() << "\n";
    row.reproducible = "error";
  }
  return row;
}

void print_header(long n) {
  std::cout << "\nN = " << n << "\n"
            << std::left << std::setw(18) << "strategy" << std::right << std::setw(10) << "ms/step" << std::setw(12)
            << "steps/s" << std::setw(8) << "force" << std::setw(7) << "list" << std::setw(7) << "integ" << std::setw(12)
            << "max dF/F" << std::setw(12) << "rms dF/F" << std::setw(12) << "bitwise" << std::setw(10) << "MiB" << "\n";
}

void print_row(const Row& row) {
  std::cout << std::left << std::setw(18) << row.strategy << std::right << std::fixed << std::setprecision(4)
            << std::setw(10) << row.ms_per_step << std::setprecision(0) << std::setw(12) << row.steps_per_s
            << std::setprecision(0) << std::setw(7) << 100 * row.share_force << "%" << std::setw(6)
            << 100 * row.share_list << "%" << std::setw(6) << 100 * row.share_integrate << "%" << std::scientific
            << std::setprecision(2) << std::setw(12) << row.max_err << std::setw(12) << row.rms_err << std::setw(12)
            << row.reproducible << std::fixed << std::setprecision(1) << std::setw(10) << row.mib << std::defaultfloat
            << "\n";
  if (!row.detail.empty()) std::cout << "  " << row.detail << "\n";
  std::cout << std::flush;
}

// The CSV of every row and, for several sizes, the plot of timesteps/s against N.
void write_results(const std::string& out_prefix, const RunConfig& base, const CompareSettings& c,
                   const std::vector<Row>& rows) {
  const std::string csv_path = out_prefix + ".csv";
  std::ofstream csv(csv_path);
  csv << "n,strategy,ms_per_step,timesteps_per_s,repeat_spread,share_force,share_list,share_integrate,list_builds_per_step,"
         "max_force_err_rel,rms_force_err_rel,bitwise_reproducible,gpu_mib,gpu_bytes_per_particle\n";
  for (const Row& w : rows)
    csv << w.n << "," << w.strategy << "," << w.ms_per_step << "," << w.steps_per_s << "," << w.spread << "," << w.share_force
        << "," << w.share_list << "," << w.share_integrate << "," << w.builds_per_step << "," << w.max_err << "," << w.rms_err
        << "," << w.reproducible << "," << w.mib << "," << w.bytes_per_particle << "\n";
  std::cout << "\nwrote " << csv_path;
  if (c.sizes.size() > 1) {
    SvgPlot plot("timesteps/s against N (" + base.path + ")", "particles N", "timesteps per second");
    for (const std::string& s : c.strategies) {
      std::vector<std::pair<double, double>> pts;
      for (const Row& w : rows)
        if (w.strategy == s && w.steps_per_s > 0) pts.push_back({static_cast<double>(w.n), w.steps_per_s});
      plot.add_series(s, pts);
    }
    plot.write(out_prefix + ".svg");
    std::cout << " and " << out_prefix << ".svg";
  }
  std::cout << "\n";
}

}  // namespace

int cmd_compare(const Args& args) {
  CompareOptions o;
  if (const int rc = read_compare_options(args, o); rc != kParsed) return rc;
  CompareSettings c;
  if (const int rc = resolve_settings(o, c); rc != kParsed) return rc;
  RunConfig base;
  try {
    base = load_with_options(o.config);
  } catch (const ConfigError& e) {
    std::cerr << e.what() << "\n";
    return kExitUsage;
  }
  const std::string out_prefix = o.out.empty() ? output_prefix(base) + ".compare" : o.out;

  std::vector<Row> rows;
  std::cout << "pairmd compare: " << o.config.config_path << ", " << c.steps << " timed steps x " << c.repeats
            << " repeats after " << c.warmup << " warm-up steps; " << (c.gpu ? c.why : "no GPU") << "\n";
  for (long size : c.sizes) {
    RunConfig cfg;
    BuiltSystem sys;
    try {
      build_sized(o, base, size, c.strategies[0], cfg, sys);
    } catch (const std::exception& e) {
      std::cerr << e.what() << "\n";
      return kExitUsage;
    }
    const Model model = make_model(cfg, sys);
    const SystemState start = equilibrated_start(model, sys.state, c.strategies[0], c.warmup);
    Reference ref;
    if (o.reference) ref = cpu_reference(model, start);
    print_header(static_cast<long>(start.size()));
    for (const std::string& strategy : c.strategies) {
      rows.push_back(measure(strategy, model, start, c, o.reference ? &ref : nullptr));
      print_row(rows.back());
    }
  }
  write_results(out_prefix, base, c, rows);
  return kExitOk;
}

}  // namespace pairmd::cli
