#include "python/module/py_analysis.h"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <climits>

#include "analysis/potential_map.h"
#include "analysis/potential_map_observer.h"
#include "io/h5md.h"
#include "python/module/py_convert.h"
#include "python/module/py_errors.h"
#include "python/module/py_simulation.h"
#include "session/compare.h"
#include "session/map_options.h"

namespace pairmd::python {

namespace {

// The config of `config` (path, text or dict) with `overrides`, as pairmd.Simulation reads it.
RunConfig load_config_of(const py::object& config, const std::vector<std::string>& overrides) {
  RunRequest r;
  set_config(config, r);
  if (r.config_is_text) return parse_config(r.config_text, r.config_name, overrides);
  if (r.config_path.empty()) raise_config_error("a config is needed (a path, YAML text or a dict)");
  return load_config(r.config_path, overrides);
}

// A str, or a list or tuple of them; a list or tuple of ints (one int alone too): TypeError
// naming `what` for anything else.
std::vector<std::string> strs_arg(const py::handle& v, const std::string& what) {
  if (py::isinstance<py::str>(v)) return {v.cast<std::string>()};
  if (!py::isinstance<py::list>(v) && !py::isinstance<py::tuple>(v))
    throw py::type_error(what + ": expected a str or a list of str, got " + py::repr(v).cast<std::string>());
  std::vector<std::string> out;
  for (const auto& x : v) out.push_back(str_arg(x, what + "[" + std::to_string(out.size()) + "]"));
  return out;
}

// An int, or a list or tuple of them, each checked by the rule of `spec`.
std::vector<long> counts_arg(const py::handle& v, const std::string& who, const OptionSpec& spec) {
  if (!py::isinstance<py::list>(v) && !py::isinstance<py::tuple>(v)) return {int_arg(v, who, spec)};
  std::vector<long> out;
  OptionSpec item = spec;
  for (const auto& x : v) {
    item.python = spec.python + "[" + std::to_string(out.size()) + "]";
    out.push_back(int_arg(x, who, item));
  }
  return out;
}

py::dict compare(const py::object& config, const py::object& strategies, const py::object& steps,
                 const py::object& repeats, const py::object& warmup, const py::object& sizes,
                 const py::object& reference, const py::object& overrides) {
  const std::string who = "pairmd.compare: ";
  CompareSettings c;
  c.steps = int_arg(steps, who, kCompareStepsOption);
  c.repeats = int_arg(repeats, who, kCompareRepeatsOption);
  c.warmup = int_arg(warmup, who, kCompareWarmupOption);
  c.reference = bool_arg(reference, who + "reference");
  if (!strategies.is_none()) c.strategies = strs_arg(strategies, who + kCompareStrategiesOption.python);
  if (!sizes.is_none()) c.sizes = counts_arg(sizes, who, kCompareSizesOption);
  try {
    resolve_compare(c, FrontEndKind::Python);
  } catch (const std::invalid_argument& e) {
    throw py::value_error(std::string("pairmd.compare: ") + e.what());
  }
  const std::vector<std::string> sets = overrides_of(overrides);
  const RunConfig base = load_config_of(config, sets);
  std::vector<CompareRow> rows;
  {
    py::gil_scoped_release nogil;
    const auto load = [&](const std::vector<std::string>& extra) {
      if (extra.empty()) return base;
      std::vector<std::string> all = sets;
      all.insert(all.end(), extra.begin(), extra.end());
      return base.path == "<dict>" || base.path == "<string>" ? parse_config(base.text, base.path, all)
                                                              : load_config(base.path, all);
    };
    rows = compare_strategies(load, c, {}, {});
  }
  const auto col = [&rows](auto get) {
    py::array_t<double> a(static_cast<py::ssize_t>(rows.size()));
    for (size_t i = 0; i < rows.size(); ++i) a.mutable_at(i) = get(rows[i]);
    return a;
  };
  py::dict d;
  py::array_t<int64_t> n(static_cast<py::ssize_t>(rows.size()));
  py::list strategy, reproducible, error;
  for (size_t i = 0; i < rows.size(); ++i) {
    n.mutable_at(i) = rows[i].n;
    strategy.append(rows[i].strategy);
    reproducible.append(rows[i].reproducible == "yes"  ? py::object(py::bool_(true))
                        : rows[i].reproducible == "no" ? py::object(py::bool_(false))
                                                       : py::object(py::none()));
    error.append(rows[i].error);
  }
  d["n"] = n;
  d["strategy"] = py::module_::import("numpy").attr("array")(strategy);
  d["ms_per_step"] = col([](const CompareRow& r) { return r.ms_per_step; });
  d["timesteps_per_s"] = col([](const CompareRow& r) { return r.steps_per_s; });
  d["repeat_spread"] = col([](const CompareRow& r) { return r.spread; });
  d["share_force"] = col([](const CompareRow& r) { return r.share_force; });
  d["share_list"] = col([](const CompareRow& r) { return r.share_list; });
  d["share_integrate"] = col([](const CompareRow& r) { return r.share_integrate; });
  d["list_builds_per_step"] = col([](const CompareRow& r) { return r.builds_per_step; });
  d["max_force_err_rel"] = col([](const CompareRow& r) { return r.max_err; });
  d["rms_force_err_rel"] = col([](const CompareRow& r) { return r.rms_err; });
  d["bitwise_reproducible"] = py::module_::import("numpy").attr("array")(reproducible, "object");
  d["gpu_mib"] = col([](const CompareRow& r) { return r.mib; });
  d["gpu_bytes_per_particle"] = col([](const CompareRow& r) { return r.bytes_per_particle; });
  d["error"] = error;
  return d;
}

// The grid as a dict: values indexed [i, j, k] (x first), origin and spacing.
py::dict map_dict(const Grid3& g, const PotentialMapSeries& series) {
  py::array_t<double> v(
      {static_cast<py::ssize_t>(g.dims[0]), static_cast<py::ssize_t>(g.dims[1]), static_cast<py::ssize_t>(g.dims[2])});
  auto w = v.mutable_unchecked<3>();
  for (int k = 0; k < g.dims[2]; ++k)
    for (int j = 0; j < g.dims[1]; ++j)
      for (int i = 0; i < g.dims[0]; ++i)
        w(i, j, k) = g.values[(static_cast<size_t>(k) * g.dims[1] + j) * g.dims[0] + i];
  py::dict d;
  d["values"] = v;
  d["origin"] = py::array_t<double>(3, g.origin.data());
  d["spacing"] = py::array_t<double>(3, g.spacing.data());
  d["unit"] = g.unit;
  d["frames"] = series.frames();
  d["kernel"] = map_kernel_name(series.kernel());
  d["kernel_description"] = series.kernel_description();
  d["method"] = map_method_name(series.method());
  d["method_description"] = series.method_description();
  d["seconds"] = series.seconds();
  if (series.accuracy().samples > 0) {
    py::dict a;
    a["samples"] = series.accuracy().samples;
    a["rel_rms"] = series.accuracy().rel_rms;
    a["max_abs_err"] = series.accuracy().max_abs_err;
    d["accuracy"] = a;
  } else {
    d["accuracy"] = py::none();
  }
  return d;
}

// The settings and units of a map: the config's analysis.potential_map and units (if there is
// a config), then the arguments, applied and checked as `pairmd potential-map` does
// (session/map_options.h).
void resolve_map_settings(const RunConfig* cfg, const std::string& units_name, const MapOptions& given,
                          MapSettings& settings, Units& units) {
  const std::string who = "pairmd.potential_map: ";
  try {
    if (cfg && cfg->potential_map.every > 0) settings = cfg->potential_map.settings;
    if (!map_units(cfg, units_name, FrontEndKind::Python, units))
      throw std::invalid_argument("the trajectory's units are needed for k_e: give units='lj' or 'real', or config=");
    apply_map_options(given, settings, FrontEndKind::Python);
  } catch (const std::invalid_argument& e) {
    throw py::value_error(who + e.what());
  }
}

// The map's settings as pairmd.potential_map's arguments give them (each checked: TypeError for
// the wrong type, ValueError out of range, naming the argument).
MapOptions map_options_of(const py::object& spacing, const py::object& padding, const py::object& min_distance,
                          const py::object& region, const py::object& kernel, const py::object& method,
                          const py::object& boundary) {
  const std::string who = "pairmd.potential_map: ";
  MapOptions o;
  if (!spacing.is_none()) o.spacing = number_arg(spacing, who, kMapSpacingOption);
  if (!padding.is_none()) o.padding = number_arg(padding, who, kMapPaddingOption);
  if (!min_distance.is_none()) o.min_distance = number_arg(min_distance, who, kMapMinDistanceOption);
  o.region = choice_arg(region, who, kMapRegionOption);
  o.kernel = choice_arg(kernel, who, kMapKernelOption);
  o.method = choice_arg(method, who, kMapMethodOption);
  o.boundary = choice_arg(boundary, who, kMapBoundaryOption);
  return o;
}

py::dict potential_map(const py::object& source, const py::object& config, const py::object& frames_arg,
                       const py::object& spacing, const py::object& region, const py::object& padding,
                       const py::object& kernel, const py::object& min_distance, const py::object& method,
                       const py::object& boundary, const py::object& units_arg, const py::object& overrides) {
  const std::string who = "pairmd.potential_map: ";
  const std::string frames = str_arg(frames_arg, who + kMapFramesOption.python);
  const std::string units_name = str_arg(units_arg, who + kMapUnitsOption.python);
  const MapOptions given = map_options_of(spacing, padding, min_distance, region, kernel, method, boundary);
  // The settings: the config's analysis.potential_map (if any), then the arguments.
  RunConfig cfg;
  bool have_cfg = false;
  PySimulation* sim = nullptr;
  std::string trajectory;
  if (!source.is_none()) {
    if (py::isinstance<PySimulation>(source)) {
      sim = source.cast<PySimulation*>();
      cfg = sim->run_config();
      have_cfg = true;
    } else if (py::isinstance<py::str>(source) || py::hasattr(source, "__fspath__")) {
      trajectory = path_arg(source, who + "source");
    } else {
      throw py::type_error("pairmd.potential_map: source: expected a pairmd.Simulation or a trajectory path");
    }
  }
  if (!config.is_none()) {
    if (sim) throw py::value_error("pairmd.potential_map: give a simulation or a config, not both");
    cfg = load_config_of(config, overrides_of(overrides));
    have_cfg = true;
  }
  if (!sim && trajectory.empty() && !have_cfg)
    throw py::value_error("pairmd.potential_map: give a simulation, a trajectory or config=");
  MapSettings settings;
  Units units = Units::lj();
  resolve_map_settings(have_cfg ? &cfg : nullptr, units_name, given, settings, units);
  std::unique_ptr<PotentialMapSeries> series;
  try {
    series = std::make_unique<PotentialMapSeries>(settings, units);
  } catch (const std::invalid_argument& e) {
    throw py::value_error(std::string("pairmd.potential_map: ") + e.what());
  }
  SystemState one;
  if (sim) one = sim->state();
  {
    py::gil_scoped_release nogil;
    try {
      if (sim) {
        series->add(one);
      } else if (trajectory.empty()) {
        series->add(build_system(cfg).state);
      } else {
        const FrameRange range = parse_frame_range(frames);
        map_frames([&](int64_t f) { return read_h5md_frame(trajectory, f).state; }, range, *series);
      }
    } catch (const std::invalid_argument& e) {
      py::gil_scoped_acquire gil;
      throw py::value_error(std::string("pairmd.potential_map: ") + e.what());
    }
  }
  if (series->frames() == 0)
    throw py::value_error("pairmd.potential_map: frames '" + frames + "' selects no frame of " + trajectory);
  return map_dict(series->average(), *series);
}

}  // namespace

void define_analysis(py::module_& m) {
  m.def("compare", &compare, py::arg("config"), py::kw_only(), py::arg("strategies") = py::none(),
        py::arg("steps") = 500, py::arg("repeats") = 5, py::arg("warmup") = 1000, py::arg("sizes") = py::none(),
        py::arg("reference") = true, py::arg("overrides") = py::none(),
        R"doc(What `pairmd compare` measures (docs/strategies.md), as a dict of NumPy columns, one row per
strategy and size: pandas.DataFrame(pairmd.compare(...)).

strategies: names of GPU strategies and/or "cpu" (default: every registered GPU strategy).
steps, repeats, warmup: timed steps per repeat, repeats (median), warm-up steps of the common start.
sizes: particle counts to scale a lattice or chains system to (default: the config's size).
reference: compare forces with the fp64 CPU reference (max/rms_force_err_rel).)doc");
  m.def("potential_map", &potential_map, py::arg("source") = py::none(), py::kw_only(), py::arg("config") = py::none(),
        py::arg("frames") = ":", py::arg("spacing") = py::none(), py::arg("region") = "",
        py::arg("padding") = py::none(), py::arg("kernel") = "", py::arg("min_distance") = py::none(),
        py::arg("method") = "", py::arg("boundary") = "", py::arg("units") = "", py::arg("overrides") = py::none(),
        R"doc(The electrostatic potential map of `pairmd potential-map` (docs/potential_maps.md), as a dict:
values (nx, ny, nz) float64 indexed [i, j, k], the point origin + (i, j, k) * spacing; origin (3,);
spacing (3,); unit; frames; kernel, method (and their descriptions); seconds; accuracy (msm).

source: a pairmd.Simulation (its current state and config), or an H5MD trajectory path (frames
"a:b:s" as in Python, averaged; units="lj"/"real" or config= for k_e); or leave it out and give
config= (the system the config builds). kernel: "auto", "cpu" or a GPU kernel; method: exact, msm
or auto; boundary: open or periodic. Defaults: the config's analysis.potential_map, else spacing 1,
region box.)doc");
}

}  // namespace pairmd::python
