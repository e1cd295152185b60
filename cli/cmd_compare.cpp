// pairmd compare CONFIG: run every GPU force-summation strategy on the same initial state and
// table speed, time shares, accuracy against the fp64 CPU reference, measured
// reproducibility and GPU memory; CSV and an SVG plot of timesteps/s against N.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "backends/strategies.h"
#include "cli/run_setup.h"
#include "io/output_files.h"
#include "io/svg_plot.h"
#include "session/compare.h"

namespace pairmd::cli {

namespace {

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string x; std::getline(ss, x, ',');)
    if (!x.empty()) out.push_back(x);
  return out;
}

// A whole number >= `min` written in full ("10x" and "1e3" are not); throws std::invalid_argument.
long whole_number(const std::string& opt, const std::string& text, long min) {
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE || v < min)
    throw std::invalid_argument(opt + ": expected a whole number >= " + std::to_string(min) + ", got '" + text + "'");
  return v;
}

// The command line: what to compare, how long, on which sizes.
struct CompareOptions {
  ConfigOptions config;  // CONFIG, --set, --backend, --strategy (compare's --steps is its own)
  std::string strategies, sizes, out, steps = "500", repeats = "5", warmup = "1000";
  bool reference = true;
};

const char* kUsage =
    "usage: pairmd compare CONFIG [--strategies a,b,..] [--steps N] [--sizes n1,n2,..] [--repeats R]\n"
    "                      [--warmup W] [--no-reference] [--out PREFIX]\n"
    "                      [--set key.path=value]...\n";

// Returns kParsed, or the exit code (help, or the message, printed).
int read_compare_options(const Args& args, CompareOptions& o) {
  for (const std::string& name : strategy_names()) o.strategies += (o.strategies.empty() ? "" : ",") + name;
  CLI::App app{
      "Time the GPU force-summation strategies on CONFIG's system, from one common equilibrated start: "
      "speed, time shares, forces against the fp64 CPU reference, measured reproducibility and GPU "
      "memory; a CSV, and an SVG plot of timesteps/s against N for several sizes (docs/strategies.md).",
      "pairmd compare"};
  prepare_app(app);
  add_config_options(app, o.config, false);
  app.add_option("--strategies", o.strategies,
                 "comma-separated strategies to time, or cpu for the CPU reference; default every registered "
                 "strategy: " +
                     o.strategies)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_option("--steps", o.steps, "timed steps per repeat (default 500)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_option("--sizes", o.sizes, "comma-separated particle counts to scale the system to (default: the config's)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_option("--repeats", o.repeats, "timed repeats per strategy, the median is reported (default 5)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_option("--warmup", o.warmup, "steps of the first strategy to equilibrate the common start (default 1000)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_option("--out", o.out,
                 "output file stem: STEM.csv (and STEM.svg); default the output prefix + .compare; never an input or a "
                 "file of a run")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_flag_callback(
      "--no-reference", [&o] { o.reference = false; }, "skip the forces against the CPU reference");
  if (const int rc = parse_command_line(app, args, {"compare", "", ""}); rc != kParsed) return rc;
  if (o.config.config_path.empty()) {
    std::cerr << kUsage;
    return kExitUsage;
  }
  return kParsed;
}

// Returns kParsed, or kExitUsage with the message printed: a number that is not one, an unknown
// strategy, or a strategy that needs a GPU where there is none.
int resolve_settings(const CompareOptions& o, CompareSettings& c) {
  try {
    c.steps = whole_number("--steps", o.steps, 1);
    c.repeats = whole_number("--repeats", o.repeats, 1);
    c.warmup = whole_number("--warmup", o.warmup, 0);
    for (const std::string& s : split(o.sizes)) c.sizes.push_back(whole_number("--sizes", s, 1));
    c.strategies = split(o.strategies);
    c.reference = o.reference;
    resolve_compare(c);
  } catch (const std::invalid_argument& e) {
    std::cerr << "pairmd compare: " << e.what() << "\n";
    return kExitUsage;
  }
  return kParsed;
}

void print_header(long n) {
  std::cout << "\nN = " << n << "\n"
            << std::left << std::setw(18) << "strategy" << std::right << std::setw(10) << "ms/step" << std::setw(12)
            << "steps/s" << std::setw(8) << "force" << std::setw(7) << "list" << std::setw(7) << "integ"
            << std::setw(12) << "max dF/F" << std::setw(12) << "rms dF/F" << std::setw(12) << "bitwise" << std::setw(10)
            << "MiB"
            << "\n";
}

void print_row(const CompareRow& row) {
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
                   const std::vector<CompareRow>& rows) {
  const std::string csv_path = out_prefix + ".csv";
  std::ofstream csv(csv_path);
  csv << "n,strategy,ms_per_step,timesteps_per_s,repeat_spread,share_force,share_list,share_integrate,list_builds_per_"
         "step,"
         "max_force_err_rel,rms_force_err_rel,bitwise_reproducible,gpu_mib,gpu_bytes_per_particle\n";
  for (const CompareRow& w : rows)
    csv << w.n << "," << w.strategy << "," << w.ms_per_step << "," << w.steps_per_s << "," << w.spread << ","
        << w.share_force << "," << w.share_list << "," << w.share_integrate << "," << w.builds_per_step << ","
        << w.max_err << "," << w.rms_err << "," << w.reproducible << "," << w.mib << "," << w.bytes_per_particle
        << "\n";
  std::cout << "\nwrote " << csv_path;
  if (c.sizes.size() > 1) {
    SvgPlot plot("timesteps/s against N (" + base.path + ")", "particles N", "timesteps per second");
    for (const std::string& s : c.strategies) {
      std::vector<std::pair<double, double>> pts;
      for (const CompareRow& w : rows)
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
  // Its files are never an input or a file of a run; checked before the minutes of timing.
  try {
    std::vector<std::string> inputs = config_input_files(base);
    inputs.push_back(o.config.config_path);
    require_output_path("--out", out_prefix + ".csv", inputs);
    if (c.sizes.size() > 1) require_output_path("--out", out_prefix + ".svg", inputs);
  } catch (const std::invalid_argument& e) {
    std::cerr << "pairmd compare: " << e.what() << "\n";
    return kExitUsage;
  }
  std::cout << "pairmd compare: " << o.config.config_path << ", " << c.steps << " timed steps x " << c.repeats
            << " repeats after " << c.warmup << " warm-up steps; " << (c.gpu ? c.why : "no GPU") << "\n";
  const auto load = [&o](const std::vector<std::string>& extra) {
    ConfigOptions so = o.config;
    for (const std::string& s : extra) so.sets.push_back(s);
    return load_with_options(so);
  };
  const auto row_printed = [](const CompareRow& row) {
    if (!row.error.empty()) std::cerr << "  " << row.strategy << ": " << row.error << "\n";
    print_row(row);
  };
  std::vector<CompareRow> rows;
  try {
    rows = compare_strategies(load, c, print_header, row_printed);
  } catch (const ConfigError& e) {
    std::cerr << e.what() << "\n";
    return kExitUsage;
  } catch (const std::exception& e) {
    std::cerr << "pairmd compare: " << e.what() << "\n";
    return kExitUsage;
  }
  write_results(out_prefix, base, c, rows);
  return kExitOk;
}

}  // namespace pairmd::cli
