// pairmd place-ions: put ions at the extrema of the electrostatic potential of a system (the
// one a config builds, or a trajectory frame) and write a config that starts from the system
// with the ions added (system.add_particles).
#include <sys/stat.h>
#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "io/dx_writer.h"
#include "analysis/ion_placement.h"
#include "analysis/potential_map.h"
#include "analysis/potential_map_observer.h"
#include "cli/run_setup.h"
#include "io/h5md.h"

namespace pairmd::cli {

namespace {

const char* kUsage =
    "usage: pairmd place-ions --config CONFIG [--trajectory T.h5 [--frame n]] [--map MAP.dx]\n"
    "                         --count K --type NAME [--charge q] [--mass m] --min-distance d\n"
    "                         [--lowest | --highest] [--spacing h] [--region box|particles] [--padding p]\n"
    "                         [--kernel k] [--method exact|msm|auto] [--boundary open|periodic]\n"
    "                         [--out OUT.yaml] [--map-out MAP.dx]\n"
    "  Places K ions of type NAME one at a time at the lattice point of lowest (--highest: highest)\n"
    "  energy q*V at least d from every particle and placed ion, adding each ion's potential before\n"
    "  the next. The system is the one CONFIG builds, or frame n (default -1, the last) of T.h5;\n"
    "  the map is computed from it (settings: CONFIG's analysis.potential_map, then the options)\n"
    "  unless --map gives one computed for the same positions. NAME may be a type of CONFIG (its\n"
    "  charge and mass are used) or a new one (--charge required; --mass defaults to 1).\n"
    "  Writes OUT.yaml (default PREFIX.ions.yaml): CONFIG with the ions under system.add_particles\n"
    "  (and system.file pointing at T.h5 frame n when --trajectory is given); `pairmd run OUT.yaml`\n"
    "  starts from it. --map-out writes the map including the ions' potential.\n";

double number(const std::string& opt, const std::string& text) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || text.empty()) throw std::invalid_argument(opt + ": expected a number, got '" + text + "'");
  return v;
}

bool ends_with(const std::string& s, const std::string& e) {
  return s.size() >= e.size() && s.compare(s.size() - e.size(), e.size(), e) == 0;
}

// Whether two paths name the same existing file.
bool same_file(const std::string& a, const std::string& b) {
  struct stat x, y;
  return stat(a.c_str(), &x) == 0 && stat(b.c_str(), &y) == 0 && x.st_dev == y.st_dev && x.st_ino == y.st_ino;
}

}  // namespace

int cmd_place_ions(const Args& args) {
  std::string config_path, trajectory, frame_text = "-1", map_in, count_text, type_name, charge_text, mass_text,
                                       min_dist_text, spacing, region, padding, kernel, out, map_out, method, boundary;
  bool highest = false, lowest = false;
  OptionReader r{args};
  try {
    while (!r.done()) {
      if (r.value("--config", config_path) || r.value("--trajectory", trajectory) || r.value("--frame", frame_text) ||
          r.value("--map", map_in) || r.value("--count", count_text) || r.value("--type", type_name) ||
          r.value("--charge", charge_text) || r.value("--mass", mass_text) ||
          r.value("--min-distance", min_dist_text) || r.value("--spacing", spacing) || r.value("--region", region) ||
          r.value("--padding", padding) || r.value("--kernel", kernel) || r.value("--out", out) ||
          r.value("--map-out", map_out) || r.value("--method", method) || r.value("--boundary", boundary))
        continue;
      if (r.flag("--highest")) {
        highest = true;
        continue;
      }
      if (r.flag("--lowest")) {
        lowest = true;
        continue;
      }
      if (r.flag("--help")) {
        std::cout << kUsage;
        return kExitOk;
      }
      std::cerr << "pairmd place-ions: unexpected argument '" << r.peek() << "'\n" << kUsage;
      return kExitUsage;
    }
    if (config_path.empty() || count_text.empty() || type_name.empty() || min_dist_text.empty())
      throw std::invalid_argument("--config, --count, --type and --min-distance are required");
    if (highest && lowest) throw std::invalid_argument("give --lowest or --highest, not both");
  } catch (const std::invalid_argument& e) {
    std::cerr << "pairmd place-ions: " << e.what() << "\n" << kUsage;
    return kExitUsage;
  }

  // Everything about the input is checked before anything is computed or written.
  RunConfig cfg;
  MapSettings settings;
  IonPlacementSettings place;
  int64_t frame = -1;
  double mass = 1.0;
  bool new_type = true;
  try {
    cfg = load_config(config_path);
    if (cfg.potential_map.every > 0) settings = map_settings(cfg.potential_map);
    if (!spacing.empty()) settings.spacing = number("--spacing", spacing);
    if (!padding.empty()) settings.padding = number("--padding", padding);
    if (!region.empty()) settings.region = region;
    if (!kernel.empty()) settings.kernel = kernel;
    if (!method.empty()) settings.method = method;
    if (!boundary.empty()) settings.boundary = boundary;
    if (!(settings.spacing > 0)) throw std::invalid_argument("--spacing: expected a number > 0");
    if (settings.region != "box" && settings.region != "particles")
      throw std::invalid_argument("--region: expected box or particles, got '" + settings.region + "'");
    parse_map_kernel(settings.kernel);
    const double count = number("--count", count_text);
    if (count < 1 || count != static_cast<int>(count)) throw std::invalid_argument("--count: expected an integer >= 1");
    place.count = static_cast<int>(count);
    place.min_distance = number("--min-distance", min_dist_text);
    if (!(place.min_distance >= 0)) throw std::invalid_argument("--min-distance: expected a number >= 0");
    place.highest = highest;
    place.k_e = cfg.model.units.coulomb;
    place.floor = settings.floor();
    const double f = number("--frame", frame_text);
    if (f < -1 || f != static_cast<int64_t>(f)) throw std::invalid_argument("--frame: expected an index >= 0 or -1");
    frame = static_cast<int64_t>(f);
    for (const TypeSpec& t : cfg.system.types)
      if (t.name == type_name) {
        new_type = false;
        place.charge = t.charge;
        mass = t.mass;
        if (!charge_text.empty() && number("--charge", charge_text) != t.charge)
          throw std::invalid_argument("--charge " + charge_text + " contradicts type " + t.name + "'s charge in " +
                                      config_path);
        if (!mass_text.empty()) throw std::invalid_argument("--mass: type " + t.name + " exists; its mass is in the config");
      }
    if (new_type) {
      if (charge_text.empty()) throw std::invalid_argument("--charge is required for the new type '" + type_name + "'");
      place.charge = number("--charge", charge_text);
      if (!mass_text.empty()) mass = number("--mass", mass_text);
      if (!(mass > 0)) throw std::invalid_argument("--mass: expected a number > 0");
    }
    if (place.charge == 0) throw std::invalid_argument("ions of type '" + type_name + "' carry no charge");
    if (out.empty()) out = output_prefix(cfg) + ".ions.yaml";
    if (ends_with(out, ".h5") || ends_with(out, ".hdf5"))
      throw std::invalid_argument("--out " + out +
                                  ": place-ions writes a config (.yaml) that starts from the system plus the ions");
    // The output must not be one of the inputs: writing it would destroy the user's config.
    for (const std::string& in : {config_path, trajectory, map_in})
      if (!in.empty() && same_file(out, in))
        throw std::invalid_argument("--out " + out + " is the input " + in + "; give another file name");
    if (!map_out.empty())
      for (const std::string& in : {config_path, trajectory, map_in})
        if (!in.empty() && same_file(map_out, in))
          throw std::invalid_argument("--map-out " + map_out + " is the input " + in + "; give another file name");
  } catch (const ConfigError& e) {
    std::cerr << e.what() << "\n";
    return kExitUsage;
  } catch (const std::invalid_argument& e) {
    std::cerr << "pairmd place-ions: " << e.what() << "\n";
    return kExitUsage;
  }

  std::unique_ptr<PotentialMapSeries> series;
  if (map_in.empty()) {
    try {
      series = std::make_unique<PotentialMapSeries>(settings, cfg.model.units);
    } catch (const std::exception& e) {
      std::cerr << "pairmd place-ions: " << e.what() << "\n";
      return kExitUsage;
    }
  }
  // Inputs that cannot be read (a missing or damaged trajectory or map), a lattice too fine for
  // the region and more ions than fit are bad input (exit 2); other failures reach main() (exit 1).
  SystemState state;
  try {
    if (trajectory.empty()) state = build_system(cfg).state;
    else state = read_h5md_frame(trajectory, frame).state;
  } catch (const ConfigError& e) {
    std::cerr << e.what() << "\n";
    return kExitUsage;
  } catch (const std::runtime_error& e) {
    std::cerr << "pairmd place-ions: --trajectory: " << e.what() << "\n";
    return kExitUsage;
  }

  Grid3 map;
  std::string map_source;
  if (!map_in.empty()) {
    try {
      map = read_dx(map_in);
    } catch (const std::runtime_error& e) {
      std::cerr << "pairmd place-ions: --map: " << e.what() << "\n";
      return kExitUsage;
    }
    map_source = map_in;
    const std::string unit = potential_unit(cfg.model.units);
    if (!map.unit.empty() && map.unit != unit)
      std::cerr << "pairmd place-ions: warning: " << map_in << " is in " << map.unit << ", the config's units give "
                << unit << "\n";
  } else {
    try {
      map = series->add(state);
    } catch (const std::invalid_argument& e) {
      std::cerr << "pairmd place-ions: " << e.what() << "\n";
      return kExitUsage;
    }
    map_source = std::string("computed (") + series->kernel_description() + "; " + series->summary() + ")";
  }

  std::vector<PlacedIon> ions;
  try {
    ions = place_ions(map, state.position, state.box, place);
  } catch (const std::runtime_error& e) {
    std::cerr << "pairmd place-ions: " << e.what() << "\n";
    return kExitUsage;
  }

  // The config that starts from this system plus the ions.
  YAML::Node root = YAML::Load(cfg.text);
  YAML::Node sys = root["system"];
  if (new_type) {
    YAML::Node t;
    t["name"] = type_name;
    t["mass"] = mass;
    t["charge"] = place.charge;
    t.SetStyle(YAML::EmitterStyle::Flow);
    sys["types"].push_back(t);
  }
  if (!trajectory.empty()) {
    for (const char* k : {"lattice", "chains", "file", "relax"}) sys.remove(k);
    YAML::Node f;
    f["path"] = trajectory;
    f["frame"] = frame;
    f.SetStyle(YAML::EmitterStyle::Flow);
    sys["file"] = f;
  }
  for (const PlacedIon& ion : ions) {
    YAML::Node e, pos;
    e["type"] = type_name;
    // 12 significant digits: lattice points to ~1e-12, without binary noise in the file.
    for (double c : {ion.position.x, ion.position.y, ion.position.z}) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.12g", c);
      pos.push_back(std::string(buf));
    }
    pos.SetStyle(YAML::EmitterStyle::Flow);
    e["position"] = pos;
    e.SetStyle(YAML::EmitterStyle::Flow);
    sys["add_particles"].push_back(e);
  }
  YAML::Emitter em;
  em << root;
  std::ostringstream text;
  text << "# written by pairmd place-ions from " << config_path;
  if (!trajectory.empty()) text << " and " << trajectory << " frame " << frame;
  text << ": " << ions.size() << " ion(s) of type " << type_name << " (charge " << place.charge << ") at the "
       << (highest ? "highest" : "lowest") << " energy q*V, min distance " << place.min_distance << "\n"
       << em.c_str() << "\n";
  try {
    parse_config(text.str(), out);
  } catch (const ConfigError& e) {
    std::cerr << "pairmd place-ions: the config with the ions does not validate: " << e.what() << "\n";
    if (new_type)
      std::cerr << "  declare type '" << type_name << "' in " << config_path
                << " (system.types, with force-field coefficients for its pairs) and run again\n";
    return kExitUsage;
  }
  {
    std::ofstream f(out);
    f << text.str();
    if (!f) throw std::runtime_error("cannot write " + out);
  }
  if (!map_out.empty()) write_dx(map_out, map, "pairmd potential map with " + std::to_string(ions.size()) + " placed ions");

  std::cout << "map: " << map_source << ", lattice " << map.dims[0] << " x " << map.dims[1] << " x " << map.dims[2]
            << ", spacing " << map.spacing[0] << ", unit " << map.unit << "\n";
  std::cout << "ion        x           y           z         V before      q*V\n";
  for (size_t i = 0; i < ions.size(); ++i) {
    char line[160];
    std::snprintf(line, sizeof line, "%-4zu %11.4f %11.4f %11.4f %12.5g %12.5g\n", i, ions[i].position.x,
                  ions[i].position.y, ions[i].position.z, ions[i].potential, ions[i].energy);
    std::cout << line;
  }
  std::cout << "wrote " << out;
  if (!map_out.empty()) std::cout << " and " << map_out;
  std::cout << "\n";
  return kExitOk;
}

}  // namespace pairmd::cli
