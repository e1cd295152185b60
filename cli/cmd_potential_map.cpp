// pairmd potential-map: the electrostatic potential map (Direct Coulomb Summation) of
// trajectory frames, averaged, as an OpenDX file; or of the system a config builds.
#include <iostream>
#include <sstream>

#include "analysis/potential_map.h"
#include "analysis/potential_map_observer.h"
#include "cli/run_setup.h"
#include "engine/map_registry.h"
#include "io/dx_writer.h"
#include "io/h5md.h"
#include "io/h5md_run_info.h"
#include "io/output_files.h"
#include "session/map_options.h"

namespace pairmd::cli {

namespace {

// What the options say beyond each one's line: the frames, the units, the defaults, the output.
const char* kFooter =
    "The map of the trajectory's frames (their mean), or with --config alone of the system CONFIG builds.\n"
    "  units: those the trajectory stores (--units or --config only for a file that does not say)\n"
    "  defaults: the config's analysis.potential_map if given, else spacing 1, region box, padding 5,\n"
    "            kernel auto, min-distance spacing/2, method exact, boundary open;\n"
    "            out: TRAJECTORY (or the output prefix) without its extension + .map.dx; never an input\n"
    "            or a file of a run (its trajectory, checkpoint, potential map, ...)\n"
    "  method msm: multilevel summation (O(atoms + points), relative error ~1e-4, estimated and printed);\n"
    "  auto: msm where it is estimated 4x faster; boundary periodic: every image (needs msm or auto)\n"
    "exit codes: 0 written, 2 bad input (nothing written), 1 the map could not be computed or written";

std::string stem_of(const std::string& path) {
  std::string s = path;
  const size_t dot = s.find_last_of('.');
  const size_t slash = s.find_last_of('/');
  if (dot != std::string::npos && (slash == std::string::npos || dot > slash)) s = s.substr(0, dot);
  return s;
}

struct MapCommandOptions {
  std::string trajectory, config_path, frames = "0:", units_name, out;
  MapOptions given;  // spacing, padding, min-distance, region, kernel, method, boundary
};

// The map's settings (the config's analysis.potential_map, then the options), the units the
// options give, and the frames. Throws ConfigError or std::invalid_argument.
void plan_map(const MapCommandOptions& o, RunConfig& cfg, MapSettings& settings, Units& units, FrameRange& range) {
  if (!o.config_path.empty()) {
    cfg = load_config(o.config_path);
    if (cfg.potential_map.every > 0) settings = cfg.potential_map.settings;
  }
  if (!map_units(o.config_path.empty() ? nullptr : &cfg, o.units_name, FrontEndKind::CommandLine, units) &&
      o.trajectory.empty())
    throw std::invalid_argument("give --config CONFIG");
  apply_map_options(o.given, settings, FrontEndKind::CommandLine);
  range = parse_frame_range(o.frames);
}

// The .dx file: --out, or the trajectory's (the config's output prefix's) name + .map.dx. It is
// never an input, nor a file of a run (io/output_files.h). Throws std::invalid_argument.
std::string plan_out(const MapCommandOptions& o, const RunConfig& cfg) {
  const std::string out =
      !o.out.empty() ? o.out : (o.trajectory.empty() ? output_prefix(cfg) : stem_of(o.trajectory)) + ".map.dx";
  std::vector<std::string> inputs = {o.trajectory, o.config_path};
  if (o.trajectory.empty())
    for (const std::string& f : config_input_files(cfg)) inputs.push_back(f);
  require_output_path(o.out.empty() ? "the map" : "--out", out, inputs);
  return out;
}

// The trajectory's units: those it stores (the options must agree), else the options'. Read
// after one frame was read in a child process (read_h5md_frame), which stops a damaged file.
// Throws std::invalid_argument or std::runtime_error (bad input).
Units trajectory_units(const MapCommandOptions& o, const Units& given) {
  read_h5md_frame(o.trajectory, 0);
  const std::string stored = read_h5md_run_info(o.trajectory).units;
  if (stored.empty()) {
    if (o.units_name.empty() && o.config_path.empty())
      throw std::invalid_argument(o.trajectory +
                                  " does not store its units (not written by pairmd?); give --units lj|real or "
                                  "--config CONFIG");
    return given;
  }
  if ((!o.units_name.empty() || !o.config_path.empty()) && given.name != stored)
    throw std::invalid_argument((o.units_name.empty() ? "--config " + o.config_path + ": its units " : "--units ") +
                                given.name + " contradict" + (o.units_name.empty() ? " " : "s ") +
                                "the units of the trajectory " + o.trajectory + " (" + stored +
                                ", parameters/units): k_e would be wrong");
  return stored == "real" ? Units::real() : Units::lj();
}

void print_summary(const PotentialMapSeries& series, const MapSettings& settings, const Grid3& avg,
                   const std::string& note, const std::string& out) {
  std::cout << "potential map: " << series.frames() << " frame(s), lattice " << avg.dims[0] << " x " << avg.dims[1]
            << " x " << avg.dims[2] << " (spacing " << settings.spacing << ", origin " << avg.origin[0] << " "
            << avg.origin[1] << " " << avg.origin[2] << "), unit " << avg.unit << "\n"
            << "kernel: " << series.kernel_description() << ", " << series.seconds() << " s";
  if (series.seconds() > 0)
    std::cout << " (" << 1e-9 * series.evaluations() / series.seconds() << " billion atom evaluations/s"
              << (series.method() == MapMethod::Msm ? " of the exact sum's work" : "") << ")";
  std::cout << "\n"
            << "method: " << series.method_description() << "\n";
  if (series.accuracy().samples > 0)
    std::cout << "accuracy: estimated relative RMS error " << series.accuracy().rel_rms << " (max abs error "
              << series.accuracy().max_abs_err << " " << avg.unit << "), from the exact sum at "
              << series.accuracy().samples << " sampled lattice points of the first map\n";
  if (!note.empty()) std::cout << note << "\n";
  std::cout << "wrote " << out << "\n";
}

// Adds the maps: of the frames of the trajectory, or of the system the config builds. Returns
// kGoOn or the exit code (message printed). A trajectory that cannot be read (missing, not
// HDF5, damaged, frame out of range) and a lattice too fine for the region are bad input (exit 2);
// other failures reach main() (exit 1).
int add_maps(const MapCommandOptions& o, const RunConfig& cfg, const FrameRange& range, PotentialMapSeries& series,
             std::string& note, std::string& source) {
  try {
    if (o.trajectory.empty()) {
      series.add(build_system(cfg).state);
      source = "the system " + o.config_path + " builds";
    } else {
      const auto read = [&](int64_t f) { return read_h5md_frame(o.trajectory, f).state; };
      map_frames(read, range, series, &note);
      source = o.trajectory + " frames " + o.frames;
    }
  } catch (const ConfigError& e) {
    std::cerr << e.what() << "\n";
    return kExitUsage;
  } catch (const std::invalid_argument& e) {
    std::cerr << "pairmd potential-map: " << e.what() << "\n";
    return kExitUsage;
  } catch (const std::runtime_error& e) {
    std::cerr << "pairmd potential-map: " << e.what() << "\n";
    return kExitUsage;
  }
  return kGoOn;
}

int potential_map(const MapCommandOptions& o) {
  // Settings, units and the output, all checked before anything is computed or written.
  RunConfig cfg;
  MapSettings settings;
  Units units = Units::lj();
  FrameRange range;
  std::string out;
  try {
    plan_map(o, cfg, settings, units, range);
    out = plan_out(o, cfg);
    if (!o.trajectory.empty()) units = trajectory_units(o, units);
  } catch (const ConfigError& e) {
    std::cerr << e.what() << "\n";
    return kExitUsage;
  } catch (const std::invalid_argument& e) {
    std::cerr << "pairmd potential-map: " << e.what() << "\n";
    return kExitUsage;
  } catch (const std::runtime_error& e) {
    std::cerr << "pairmd potential-map: " << e.what() << "\n";
    return kExitUsage;
  }

  std::unique_ptr<PotentialMapSeries> series;
  try {
    series = std::make_unique<PotentialMapSeries>(settings, units);
  } catch (const std::exception& e) {
    std::cerr << "pairmd potential-map: " << e.what() << "\n";
    return kExitUsage;
  }
  std::string note, source;
  if (const int rc = add_maps(o, cfg, range, *series, note, source); rc != kGoOn) return rc;
  if (series->frames() == 0) {
    std::cerr << "pairmd potential-map: --frames " << o.frames << " selects no frame of " << o.trajectory << "\n";
    return kExitUsage;
  }
  const Grid3 avg = series->average();
  std::ostringstream title;
  title << "pairmd electrostatic potential map (" << series->summary() << ") of " << source << ", mean of "
        << series->frames() << " frame(s)";
  write_dx(out, avg, title.str());
  print_summary(*series, settings, avg, note, out);
  return kExitOk;
}

// A validator of --frames: a range parse_frame_range reads.
CLI::Validator frame_range_check() {
  return CLI::Validator(
      [](std::string& text) {
        try {
          parse_frame_range(text);
          return std::string();
        } catch (const std::invalid_argument& e) {
          return std::string(e.what());
        }
      },
      "a:b:s", "FRAMES");
}

}  // namespace

Command add_potential_map(CLI::App& app) {
  CLI::App* sub = add_command(
      app, "potential-map",
      "electrostatic potential map of trajectory frames, or of a config's system (docs/potential_maps.md)",
      std::string(
          "The electrostatic potential map (Direct Coulomb Summation or multilevel summation) of trajectory frames, "
          "averaged, as an OpenDX file; or of the system a config builds (docs/potential_maps.md).") +
          "\n" + kFooter);
  auto o = std::make_shared<MapCommandOptions>();
  sub->add_option("TRAJECTORY", o->trajectory, "an H5MD trajectory written by pairmd");
  add_option(*sub, kMapFramesOption, o->frames)->check(frame_range_check());
  add_option(*sub, kMapSpacingOption, o->given.spacing);
  add_option(*sub, kMapPaddingOption, o->given.padding);
  add_option(*sub, kMapRegionOption, o->given.region);
  add_option(*sub, kMapKernelOption, o->given.kernel);
  add_option(*sub, kMapMinDistanceOption, o->given.min_distance);
  add_option(*sub, kMapMethodOption, o->given.method);
  add_option(*sub, kMapBoundaryOption, o->given.boundary);
  add_option(*sub, kMapUnitsOption, o->units_name);
  sub->add_option("--config", o->config_path,
                  "the run's config: units and analysis.potential_map; alone, the map of its system")

      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  sub->add_option("--out", o->out,
                  "the .dx file (default TRAJECTORY, or the output prefix, + .map.dx); not an input, not a file of a "
                  "run")
      ->check(not_empty("a file name"))
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  return [o, sub](const Args&) {
    if (o->trajectory.empty() && o->config_path.empty()) return usage_error(*sub, "give a trajectory or --config");
    return potential_map(*o);
  };
}

}  // namespace pairmd::cli
