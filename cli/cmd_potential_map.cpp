// pairmd potential-map: the electrostatic potential map (Direct Coulomb Summation) of
// trajectory frames, averaged, as an OpenDX file; or of the system a config builds.
#include <CLI/CLI.hpp>

#include <iostream>
#include <sstream>

#include "analysis/potential_map.h"
#include "analysis/potential_map_observer.h"
#include "cli/run_setup.h"
#include "io/dx_writer.h"
#include "io/h5md.h"
#include "kernels/dcs/map_registry.h"

namespace pairmd::cli {

namespace {

// The usage text: the kernels and methods are the registered ones (kernels/dcs/map_registry.h).
std::string usage() {
  std::string kernels, methods;
  for (const std::string& k : map_kernel_names()) kernels += (kernels.empty() ? "" : "|") + k;
  for (const std::string& m : map_method_names()) methods += (methods.empty() ? "" : "|") + m;
  return "usage: pairmd potential-map TRAJECTORY.h5 [--frames a:b:s] [--spacing h] [--padding p]\n"
         "                            [--region box|particles] [--kernel " +
         kernels +
         "]\n"
         "                            [--min-distance d] [--method " +
         methods +
         "] [--boundary open|periodic]\n"
         "                            [--units lj|real | --config CONFIG] [--out map.dx]\n"
         "       pairmd potential-map --config CONFIG [same options]   (the map of the system CONFIG builds)\n"
         "  frames: a:b:s as in Python (b exclusive, default all frames), a single index, or -1 (the last)\n"
         "  defaults: the config's analysis.potential_map if given, else spacing 1, region box, padding 5,\n"
         "            kernel auto, min-distance spacing/2, method exact, boundary open;\n"
         "            out: TRAJECTORY (or output prefix) + .potential.dx\n"
         "  method msm: multilevel summation (O(atoms + points), relative error ~1e-4, estimated and printed);\n"
         "  auto: msm where it is estimated 4x faster; boundary periodic: every image (needs msm or auto)\n";
}

std::string stem_of(const std::string& path) {
  std::string s = path;
  const size_t dot = s.find_last_of('.');
  const size_t slash = s.find_last_of('/');
  if (dot != std::string::npos && (slash == std::string::npos || dot > slash)) s = s.substr(0, dot);
  return s;
}

}  // namespace

int cmd_potential_map(const Args& args) {
  const std::string kUsage = usage();
  std::string trajectory, config_path, frames = "0:", spacing, padding, region, kernel, min_distance, units_name, out,
                                       method, boundary;
  CLI::App app{
      "The electrostatic potential map (Direct Coulomb Summation or multilevel summation) of trajectory "
      "frames, averaged, as an OpenDX file; or of the system a config builds (docs/potential_maps.md).",
      "pairmd potential-map"};
  prepare_app(app);
  app.add_option("TRAJECTORY", trajectory, "an H5MD trajectory written by pairmd");
  const auto text = [&app](const char* name, std::string& value, const std::string& help) {
    app.add_option(name, value, help)->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  };
  text("--frames", frames, "a:b:s as in Python (b exclusive, default all frames), a single index, or -1 (the last)");
  text("--spacing", spacing, "lattice spacing (default the config's, else 1)");
  text("--padding", padding, "padding around the particles for --region particles (default 5)");
  text("--region", region, "box or particles");
  text("--kernel", kernel, choices(map_kernel_names()) + " (default auto)");
  text("--min-distance", min_distance, "distance floor against the 1/r singularity (default spacing/2)");
  text("--method", method, choices(map_method_names()) + " (default exact)");
  text("--boundary", boundary, "open or periodic (every image; needs msm or auto)");
  text("--units", units_name, "lj or real: the trajectory's units (or --config)");
  text("--config", config_path, "the run's config: units and analysis.potential_map; alone, the map of its system");
  text("--out", out, "the .dx file (default TRAJECTORY, or the output prefix, + .potential.dx)");
  app.footer(kUsage);
  if (const int rc = parse_command_line(app, args, {"potential-map", kUsage, ""}); rc != kParsed) return rc;
  if (trajectory.empty() && config_path.empty()) {
    std::cerr << "pairmd potential-map: give a trajectory or --config\n" << kUsage;
    return kExitUsage;
  }

  // Settings: the config's analysis.potential_map (if any), then the command line.
  RunConfig cfg;
  MapSettings settings;
  Units units = Units::lj();
  FrameRange range;
  try {
    if (!config_path.empty()) {
      cfg = load_config(config_path);
      units = cfg.model.units;
      if (cfg.potential_map.every > 0) settings = map_settings(cfg.potential_map);
    }
    if (!units_name.empty()) {
      if (units_name != "lj" && units_name != "real")
        throw std::invalid_argument("--units: expected lj or real, got '" + units_name + "'");
      if (!config_path.empty() && units_name != units.name)
        throw std::invalid_argument("--units " + units_name + " contradicts the config's units " + units.name);
      units = units_name == "real" ? Units::real() : Units::lj();
    } else if (config_path.empty()) {
      throw std::invalid_argument("the trajectory's units are needed for k_e: give --units lj|real or --config CONFIG");
    }
    if (!spacing.empty()) settings.spacing = option_number("--spacing", spacing);
    if (!padding.empty()) settings.padding = option_number("--padding", padding);
    if (!min_distance.empty()) settings.min_distance = option_number("--min-distance", min_distance);
    if (!region.empty()) settings.region = region;
    if (!kernel.empty()) settings.kernel = kernel;
    if (!method.empty()) settings.method = method;
    if (!boundary.empty()) settings.boundary = boundary;
    if (!(settings.spacing > 0)) throw std::invalid_argument("--spacing: expected a number > 0");
    if (!(settings.padding >= 0)) throw std::invalid_argument("--padding: expected a number >= 0");
    if (!(settings.min_distance >= 0)) throw std::invalid_argument("--min-distance: expected a number >= 0");
    if (settings.region != "box" && settings.region != "particles")
      throw std::invalid_argument("--region: expected box or particles, got '" + settings.region + "'");
    parse_map_kernel(settings.kernel);
    range = parse_frame_range(frames);
  } catch (const ConfigError& e) {
    std::cerr << e.what() << "\n";
    return kExitUsage;
  } catch (const std::invalid_argument& e) {
    std::cerr << "pairmd potential-map: " << e.what() << "\n";
    return kExitUsage;
  }
  if (out.empty()) out = (trajectory.empty() ? output_prefix(cfg) : stem_of(trajectory)) + ".potential.dx";

  std::unique_ptr<PotentialMapSeries> series;
  try {
    series = std::make_unique<PotentialMapSeries>(settings, units);
  } catch (const std::exception& e) {
    std::cerr << "pairmd potential-map: " << e.what() << "\n";
    return kExitUsage;
  }
  std::string note, source;
  if (trajectory.empty()) {
    try {
      series->add(build_system(cfg).state);
    } catch (const ConfigError& e) {
      std::cerr << e.what() << "\n";
      return kExitUsage;
    } catch (const std::invalid_argument& e) {
      std::cerr << "pairmd potential-map: " << e.what() << "\n";
      return kExitUsage;
    }
    source = "the system " + config_path + " builds";
  } else {
    // A trajectory that cannot be read (missing, not HDF5, damaged, frame out of range) and a
    // lattice too fine for the region are bad input (exit 2); other failures reach main() (exit 1).
    const auto read = [&](int64_t f) { return read_h5md_frame(trajectory, f).state; };
    try {
      map_frames(read, range, *series, &note);
    } catch (const std::invalid_argument& e) {
      std::cerr << "pairmd potential-map: " << e.what() << "\n";
      return kExitUsage;
    } catch (const std::runtime_error& e) {
      std::cerr << "pairmd potential-map: " << e.what() << "\n";
      return kExitUsage;
    }
    source = trajectory + " frames " + frames;
  }
  if (series->frames() == 0) {
    std::cerr << "pairmd potential-map: --frames " << frames << " selects no frame of " << trajectory << "\n";
    return kExitUsage;
  }
  const Grid3 avg = series->average();
  std::ostringstream title;
  title << "pairmd electrostatic potential map (" << series->summary() << ") of " << source << ", mean of "
        << series->frames() << " frame(s)";
  write_dx(out, avg, title.str());
  std::cout << "potential map: " << series->frames() << " frame(s), lattice " << avg.dims[0] << " x " << avg.dims[1]
            << " x " << avg.dims[2] << " (spacing " << settings.spacing << ", origin " << avg.origin[0] << " "
            << avg.origin[1] << " " << avg.origin[2] << "), unit " << avg.unit << "\n"
            << "kernel: " << series->kernel_description() << ", " << series->seconds() << " s";
  if (series->seconds() > 0)
    std::cout << " (" << 1e-9 * series->evaluations() / series->seconds() << " billion atom evaluations/s"
              << (series->method() == MapMethod::Msm ? " of the exact sum's work" : "") << ")";
  std::cout << "\n"
            << "method: " << series->method_description() << "\n";
  if (series->accuracy().samples > 0)
    std::cout << "accuracy: estimated relative RMS error " << series->accuracy().rel_rms << " (max abs error "
              << series->accuracy().max_abs_err << " " << avg.unit << "), from the exact sum at "
              << series->accuracy().samples << " sampled lattice points of the first map\n";
  if (!note.empty()) std::cout << note << "\n";
  std::cout << "wrote " << out << "\n";
  return kExitOk;
}

}  // namespace pairmd::cli
