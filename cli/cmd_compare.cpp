// pairmd compare CONFIG: run every GPU force-summation strategy on the same initial state and
// table speed, time shares, accuracy against the fp64 CPU reference, measured
// reproducibility and GPU memory; CSV and an SVG plot of timesteps/s against N.
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

// The command line: what to compare, how long, on which sizes.
struct CompareOptions {
  ConfigOptions config;  // CONFIG, --set, --backend, --strategy (compare's --steps is its own)
  CompareSettings settings;
  std::string out;
};

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

int compare(CompareOptions& o) {
  CompareSettings& c = o.settings;
  try {
    resolve_compare(c, FrontEndKind::CommandLine);
  } catch (const std::invalid_argument& e) {
    std::cerr << "pairmd compare: " << e.what() << "\n";
    return kExitUsage;
  }
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

}  // namespace

Command add_compare(CLI::App& app) {
  CLI::App* sub = add_command(
      app, "compare", "time the GPU force-summation strategies on CONFIG's system (docs/strategies.md)",
      "Time the GPU force-summation strategies on CONFIG's system, from one common equilibrated start: speed, time "
      "shares, forces against the fp64 CPU reference, measured reproducibility and GPU memory; a CSV, and an SVG "
      "plot of timesteps/s against N for several sizes (docs/strategies.md).");
  auto o = std::make_shared<CompareOptions>();
  CompareSettings& c = o->settings;
  add_config_options(*sub, o->config, true, false);
  add_list_option(*sub, kCompareStrategiesOption, c.strategies);
  add_option(*sub, kCompareStepsOption, c.steps);
  add_list_option(*sub, kCompareSizesOption, c.sizes);
  add_option(*sub, kCompareRepeatsOption, c.repeats);
  add_option(*sub, kCompareWarmupOption, c.warmup);
  sub->add_option("--out", o->out,
                  "output file stem: STEM.csv (and STEM.svg); default the output prefix + .compare; never an input or "
                  "a file of a run")
      ->check(not_empty("a file stem"))
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  sub->add_flag_callback(
      "--no-reference", [o] { o->settings.reference = false; }, "skip the forces against the CPU reference");
  return [o](const Args&) { return compare(*o); };
}

}  // namespace pairmd::cli
