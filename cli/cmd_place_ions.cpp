// pairmd place-ions: put ions at the extrema of the electrostatic potential of a system (the
// one a config builds, or a trajectory frame) and write a config that starts from the system
// with the ions added (system.add_particles).
#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "analysis/ion_placement.h"
#include "analysis/potential_map.h"
#include "analysis/potential_map_observer.h"
#include "cli/run_setup.h"
#include "engine/map_registry.h"
#include "io/dx_writer.h"
#include "io/h5md.h"
#include "io/output_files.h"
#include "session/map_options.h"

namespace pairmd::cli {

namespace {

// What place-ions does, beyond each option's line.
const char* kFooter =
    "Places K ions of type NAME one at a time at the lattice point of lowest (--highest: highest)\n"
    "energy q*V at least d from every particle and placed ion, adding each ion's potential before\n"
    "the next. The system is the one CONFIG builds, or frame n (default -1, the last) of T.h5\n"
    "(a trajectory of CONFIG's system: its types, its particle count); the map is computed from\n"
    "it (settings: CONFIG's analysis.potential_map, then --spacing ... --boundary) unless --map\n"
    "gives one of the same system (its units, covering every particle; the map settings are then\n"
    "the file's and may not be given). A map that is zero everywhere (no charges) is refused.\n"
    "NAME may be a type of CONFIG (its charge and mass are used) or a new one (--charge\n"
    "required; --mass defaults to 1).\n"
    "Writes OUT.yaml (default PREFIX.ions.yaml): CONFIG with the ions under system.add_particles\n"
    "(and system.file pointing at T.h5 frame n when --trajectory is given); `pairmd run OUT.yaml`\n"
    "starts from it. --map-out writes the map including the ions' potential. Neither output may\n"
    "be an input or a file of a run (docs/output.md).";

bool ends_with(const std::string& s, const std::string& e) {
  return s.size() >= e.size() && s.compare(s.size() - e.size(), e.size(), e) == 0;
}

// The command line (each value checked by its option's rule; plan() checks them together).
struct PlaceOptions {
  std::string config_path, trajectory, map_in, type_name, out, map_out;
  int64_t frame = -1;
  long count = 0;
  double min_distance = 0;
  std::optional<double> charge, mass;
  MapOptions given;  // the map's settings: spacing, region, padding, kernel, method, boundary
  bool highest = false;
};

// What the checked options say: the config, the map's settings, the ions to place, the output.
struct PlacePlan {
  RunConfig cfg;
  MapSettings settings;
  IonPlacementSettings place;
  int64_t frame = -1;
  double mass = 1.0;
  bool new_type = true;
  std::string out;
};

// The map's settings: CONFIG's analysis.potential_map, then the options.
void plan_map(const PlaceOptions& o, PlacePlan& p) {
  if (p.cfg.potential_map.every > 0) p.settings = p.cfg.potential_map.settings;
  apply_map_options(o.given, p.settings, FrontEndKind::CommandLine);
}

// The ions: how many, how close, and their type (one of the config's, or a new one).
void plan_ions(const PlaceOptions& o, PlacePlan& p) {
  p.place.count = static_cast<int>(o.count);
  p.place.min_distance = o.min_distance;
  p.place.highest = o.highest;
  p.place.k_e = p.cfg.model.units.coulomb;
  p.place.floor = p.settings.floor();
  p.frame = o.frame;
  for (const TypeSpec& t : p.cfg.system.types)
    if (t.name == o.type_name) {
      p.new_type = false;
      p.place.charge = t.charge;
      p.mass = t.mass;
      if (o.charge && *o.charge != t.charge) {
        std::ostringstream m;
        m << "--charge " << *o.charge << " contradicts type " << t.name << "'s charge in " << o.config_path;
        throw std::invalid_argument(m.str());
      }
      if (o.mass) throw std::invalid_argument("--mass: type " + t.name + " exists; its mass is in the config");
    }
  if (p.new_type) {
    if (!o.charge) throw std::invalid_argument("--charge is required for the new type '" + o.type_name + "'");
    p.place.charge = *o.charge;
    if (o.mass) p.mass = *o.mass;
  }
  if (p.place.charge == 0) throw std::invalid_argument("ions of type '" + o.type_name + "' carry no charge");
}

// Where the config goes: not a trajectory, never one of the inputs nor a file of a run
// (io/output_files.h), and not where the map goes.
void plan_output(const PlaceOptions& o, PlacePlan& p) {
  p.out = o.out.empty() ? output_prefix(p.cfg) + ".ions.yaml" : o.out;
  if (ends_with(p.out, ".h5") || ends_with(p.out, ".hdf5"))
    throw std::invalid_argument("--out " + p.out +
                                ": place-ions writes a config (.yaml) that starts from the system plus the ions");
  std::vector<std::string> inputs = {o.config_path, o.trajectory, o.map_in};
  for (const std::string& f : config_input_files(p.cfg)) inputs.push_back(f);
  require_output_path("--out", p.out, inputs);
  if (o.map_out.empty()) return;
  require_output_path("--map-out", o.map_out, inputs);
  if (same_prefix(o.map_out, p.out))
    throw std::invalid_argument("--map-out " + o.map_out + " is the file --out writes; give another file name");
}

// With --map the lattice is the map's: the options that set up a map place-ions computes would
// be ignored, so they are refused.
void refuse_map_settings(const PlaceOptions& o) {
  if (o.map_in.empty()) return;
  const MapOptions& g = o.given;
  const std::pair<const OptionSpec*, bool> settings[] = {
      {&kMapSpacingOption, g.spacing.has_value()}, {&kMapRegionOption, !g.region.empty()},
      {&kMapPaddingOption, g.padding.has_value()}, {&kMapKernelOption, !g.kernel.empty()},
      {&kMapMethodOption, !g.method.empty()},      {&kMapBoundaryOption, !g.boundary.empty()}};
  for (const auto& [spec, given] : settings)
    if (given)
      throw std::invalid_argument(spec->cli + " sets up the map place-ions computes; with --map " + o.map_in +
                                  " the map (its lattice, spacing and method) is the file's: leave " + spec->cli +
                                  " out, or leave --map out to compute the map");
}

// Everything about the input is checked before anything is computed or written. Returns kGoOn,
// or kExitUsage with the message printed.
int plan(const PlaceOptions& o, PlacePlan& p) {
  try {
    p.cfg = load_config(o.config_path);
    refuse_map_settings(o);
    plan_map(o, p);
    plan_ions(o, p);
    plan_output(o, p);
  } catch (const ConfigError& e) {
    std::cerr << e.what() << "\n";
    return kExitUsage;
  } catch (const std::invalid_argument& e) {
    std::cerr << "pairmd place-ions: " << e.what() << "\n";
    return kExitUsage;
  }
  return kGoOn;
}

// A trajectory's frame must be of the system CONFIG describes: its types are CONFIG's, and it
// holds as many particles as CONFIG builds (where that can be told without building it). Throws
// std::invalid_argument.
void check_frame_matches(const PlaceOptions& o, const PlacePlan& p, const SystemState& frame) {
  const std::string what = "--trajectory " + o.trajectory + " frame " + std::to_string(p.frame);
  for (const std::string& name : frame.type_names) {
    bool known = false;
    for (const TypeSpec& t : p.cfg.system.types) known = known || t.name == name;
    if (!known)
      throw std::invalid_argument(what + " has particles of type '" + name + "', which " + o.config_path +
                                  " does not declare: the trajectory is not of the system of the config");
  }
  const int64_t n = planned_size(p.cfg).particles;
  if (n >= 0 && n != static_cast<int64_t>(frame.size()))
    throw std::invalid_argument(what + " holds " + std::to_string(frame.size()) + " particles, " + o.config_path +
                                " builds " + std::to_string(n) + ": the trajectory is not of the system of the config");
}

// The system: the one CONFIG builds, or the trajectory's frame. Inputs that cannot be read (a
// missing or damaged trajectory), or a trajectory of another system, are bad input (exit 2).
int load_state(const PlaceOptions& o, const PlacePlan& p, SystemState& state) {
  try {
    if (o.trajectory.empty()) {
      state = build_system(p.cfg).state;
    } else {
      state = read_h5md_frame(o.trajectory, p.frame).state;
      check_frame_matches(o, p, state);
    }
  } catch (const ConfigError& e) {
    std::cerr << e.what() << "\n";
    return kExitUsage;
  } catch (const std::invalid_argument& e) {
    std::cerr << "pairmd place-ions: " << e.what() << "\n";
    return kExitUsage;
  } catch (const std::runtime_error& e) {
    std::cerr << "pairmd place-ions: --trajectory: " << e.what() << "\n";
    return kExitUsage;
  }
  return kGoOn;
}

// A map read with --map must be of this system: in the config's units, and its lattice covers
// every particle (a map of another, smaller system does not). Throws std::invalid_argument.
void check_map_matches(const PlaceOptions& o, const PlacePlan& p, const Grid3& map, const SystemState& state) {
  const std::string unit = potential_unit(p.cfg.model.units);
  if (!map.unit.empty() && map.unit != unit)
    throw std::invalid_argument("--map " + o.map_in + " is in " + map.unit + ", the config's units give " + unit +
                                ": the map is not of this system");
  for (size_t i = 0; i < state.size(); ++i) {
    Vec3d x = state.position[i];
    auto image = state.image.empty() ? decltype(state.image)::value_type{} : state.image[i];
    state.box.wrap(x, image);
    const double c[3] = {x.x, x.y, x.z};
    for (int d = 0; d < 3; ++d) {
      const double lo = map.origin[d] - map.spacing[d], hi = map.origin[d] + map.dims[d] * map.spacing[d];
      if (c[d] < lo || c[d] > hi) {
        std::ostringstream m;
        m << "--map " << o.map_in << " does not cover the system: particle " << i << " is at "
          << "xyz"[d] << " = " << c[d] << ", the map's lattice spans " << map.origin[d] << " .. " << hi - map.spacing[d]
          << ": the map is not of this system";
        throw std::invalid_argument(m.str());
      }
    }
  }
}

// The map must hold a potential: a system without charges gives one that is zero everywhere,
// and ions placed on it would go anywhere. Throws std::invalid_argument.
void check_map_not_zero(const Grid3& map, const std::string& source) {
  for (const double v : map.values)
    if (v != 0) return;
  throw std::invalid_argument("the map (" + source +
                              ") is zero everywhere: the system carries no charge, so there is no potential to "
                              "place ions by (a trajectory or map of another system?)");
}

// The map: read from --map, or computed for `state` (a lattice too fine for the region is bad
// input, exit 2). `source` says which, for the report.
int obtain_map(const PlaceOptions& o, const PlacePlan& p, PotentialMapSeries* series, const SystemState& state,
               Grid3& map, std::string& source) {
  try {
    if (!o.map_in.empty()) {
      try {
        map = read_dx(o.map_in);
      } catch (const std::runtime_error& e) {
        throw std::invalid_argument(std::string("--map: ") + e.what());
      }
      source = o.map_in;
      check_map_matches(o, p, map, state);
    } else {
      map = series->add(state);
      source = std::string("computed (") + series->kernel_description() + "; " + series->summary() + ")";
    }
    check_map_not_zero(map, o.map_in.empty() ? "computed" : o.map_in);
  } catch (const std::invalid_argument& e) {
    std::cerr << "pairmd place-ions: " << e.what() << "\n";
    return kExitUsage;
  }
  return kGoOn;
}

// The config that starts from this system plus the ions, with a first line saying how it was made.
std::string config_with_ions(const PlaceOptions& o, const PlacePlan& p, const std::vector<PlacedIon>& ions) {
  YAML::Node root = YAML::Load(p.cfg.text);
  YAML::Node sys = root["system"];
  if (p.new_type) {
    YAML::Node t;
    t["name"] = o.type_name;
    t["mass"] = p.mass;
    t["charge"] = p.place.charge;
    t.SetStyle(YAML::EmitterStyle::Flow);
    sys["types"].push_back(t);
  }
  if (!o.trajectory.empty()) {
    for (const char* k : {"lattice", "chains", "file", "relax"}) sys.remove(k);
    root.remove("minimize");  // the frame is the state the ions were placed against
    YAML::Node f;
    f["path"] = o.trajectory;
    f["frame"] = p.frame;
    f.SetStyle(YAML::EmitterStyle::Flow);
    sys["file"] = f;
  }
  for (const PlacedIon& ion : ions) {
    YAML::Node e, pos;
    e["type"] = o.type_name;
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
  text << "# written by pairmd place-ions from " << o.config_path;
  if (!o.trajectory.empty()) text << " and " << o.trajectory << " frame " << p.frame;
  text << ": " << ions.size() << " ion(s) of type " << o.type_name << " (charge " << p.place.charge << ") at the "
       << (o.highest ? "highest" : "lowest") << " energy q*V, min distance " << p.place.min_distance << "\n"
       << em.c_str() << "\n";
  return text.str();
}

void print_report(const PlaceOptions& o, const PlacePlan& p, const Grid3& map, const std::string& map_source,
                  const std::vector<PlacedIon>& ions) {
  std::cout << "map: " << map_source << ", lattice " << map.dims[0] << " x " << map.dims[1] << " x " << map.dims[2]
            << ", spacing " << map.spacing[0] << ", unit " << map.unit << "\n";
  std::cout << "ion        x           y           z         V before      q*V\n";
  for (size_t i = 0; i < ions.size(); ++i) {
    char line[160];
    std::snprintf(line, sizeof line, "%-4zu %11.4f %11.4f %11.4f %12.5g %12.5g\n", i, ions[i].position.x,
                  ions[i].position.y, ions[i].position.z, ions[i].potential, ions[i].energy);
    std::cout << line;
  }
  std::cout << "wrote " << p.out;
  if (!o.map_out.empty()) std::cout << " and " << o.map_out;
  std::cout << "\n";
}

int place(const PlaceOptions& o) {
  PlacePlan p;
  if (const int rc = plan(o, p); rc != kGoOn) return rc;

  std::unique_ptr<PotentialMapSeries> series;
  if (o.map_in.empty()) {
    try {
      series = std::make_unique<PotentialMapSeries>(p.settings, p.cfg.model.units);
    } catch (const std::exception& e) {
      std::cerr << "pairmd place-ions: " << e.what() << "\n";
      return kExitUsage;
    }
  }
  // More ions than fit are bad input (exit 2) too; other failures reach main() (exit 1).
  SystemState state;
  if (const int rc = load_state(o, p, state); rc != kGoOn) return rc;
  Grid3 map;
  std::string map_source;
  if (const int rc = obtain_map(o, p, series.get(), state, map, map_source); rc != kGoOn) return rc;
  std::vector<PlacedIon> ions;
  try {
    ions = place_ions(map, state.position, state.box, p.place);
  } catch (const std::runtime_error& e) {
    std::cerr << "pairmd place-ions: " << e.what() << "\n";
    return kExitUsage;
  }

  const std::string text = config_with_ions(o, p, ions);
  try {
    parse_config(text, p.out);
  } catch (const ConfigError& e) {
    std::cerr << "pairmd place-ions: the config with the ions does not validate: " << e.what() << "\n";
    if (p.new_type)
      std::cerr << "  declare type '" << o.type_name << "' in " << o.config_path
                << " (system.types, with force-field coefficients for its pairs) and run again\n";
    return kExitUsage;
  }
  {
    std::ofstream f(p.out);
    f << text;
    if (!f) throw std::runtime_error("cannot write " + p.out);
  }
  if (!o.map_out.empty())
    write_dx(o.map_out, map, "pairmd potential map with " + std::to_string(ions.size()) + " placed ions");
  print_report(o, p, map, map_source, ions);
  return kExitOk;
}

}  // namespace

Command add_place_ions(CLI::App& app) {
  CLI::App* sub = add_command(
      app, "place-ions", "place ions at the extrema of the potential map (docs/potential_maps.md)",
      std::string(
          "Place ions at the extrema of the electrostatic potential map of a system, and write a config that starts "
          "from the system with the ions added (docs/potential_maps.md).") +
          "\n" + kFooter);
  auto o = std::make_shared<PlaceOptions>();
  const auto text = [sub](const char* name, std::string& value, const std::string& help) {
    return sub->add_option(name, value, help)->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  };
  const auto number = [sub](const char* name, auto& value, const std::string& help, const NumberRule& rule) {
    return sub->add_option(name, value, help)
        ->check(number_check(rule))
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  };
  text("--config", o->config_path, "the config of the system")->required();
  text("--trajectory", o->trajectory, "take the system from this trajectory (of CONFIG's system) instead");
  number("--frame", o->frame, "the frame of --trajectory (default -1, the last)", NumberRule::whole_from(-1));
  text("--map", o->map_in,
       "a .dx map of the same system (e.g. a run's time average), instead of computing one; not with the map "
       "settings --spacing, --region, --padding, --kernel, --method, --boundary");
  number("--count", o->count, "how many ions", NumberRule::whole_from(1, 1e9))->required();
  text("--type", o->type_name, "their type: one of the config's, or a new one")->required();
  number("--charge", o->charge, "the charge of a new type", NumberRule{});
  number("--mass", o->mass, "the mass of a new type (default 1)", NumberRule::above(0));
  number("--min-distance", o->min_distance, "closest distance to every particle and placed ion",
         NumberRule::at_least(0))
      ->required();
  add_option(*sub, kMapSpacingOption, o->given.spacing);
  add_option(*sub, kMapRegionOption, o->given.region);
  add_option(*sub, kMapPaddingOption, o->given.padding);
  add_option(*sub, kMapKernelOption, o->given.kernel);
  add_option(*sub, kMapMethodOption, o->given.method);
  add_option(*sub, kMapBoundaryOption, o->given.boundary);
  text("--out", o->out, "the config to write (default PREFIX.ions.yaml); not an input, not a file of a run")
      ->check(not_empty("a file name"));
  text("--map-out", o->map_out,
       "also write the map including the ions' potential; not an input, not a file of a run, not --out")
      ->check(not_empty("a file name"));
  CLI::Option* highest = sub->add_flag("--highest", o->highest, "place at the highest energy q*V");
  sub->add_flag("--lowest", "place at the lowest energy q*V (the default)")->excludes(highest);
  return [o](const Args&) { return place(*o); };
}

}  // namespace pairmd::cli
