#include "python/module/py_ensemble.h"

#include <pybind11/stl.h>

#include <algorithm>
#include <sstream>

#include "engine/simulation.h"
#include "engine/system_builder.h"
#include "engine/time_step_check.h"
#include "python/module/py_convert.h"
#include "python/module/py_errors.h"
#include "session/run_plan.h"

namespace pairmd::python {

namespace {

const std::string kWho = "pairmd.Ensemble: ";
// Steps per call into the engine between checks for Ctrl-C (a chunk of 98-bead systems is a few
// milliseconds on the GPU; one of a 4,000-particle CPU ensemble well under a second).
constexpr int64_t kChunk = 1000;

// A sequence of K numbers (a list, tuple or 1-D array), each checked as `check` checks one.
template <class T, class Check>
std::vector<T> list_arg(const py::object& v, const std::string& what, Check check) {
  if (py::isinstance<py::str>(v) || (!py::isinstance<py::sequence>(v) && !py::isinstance<py::array>(v)))
    throw py::type_error(what + ": expected a sequence of numbers, got " + py::repr(v).cast<std::string>());
  std::vector<T> out;
  const py::sequence s = py::isinstance<py::array>(v) ? py::sequence(v.attr("tolist")()) : py::sequence(v);
  for (size_t k = 0; k < s.size(); ++k) out.push_back(check(s[k], what + "[" + std::to_string(k) + "]"));
  return out;
}

// (K, N, 3) from K vectors of N Vec3d (or Int3).
template <class V, class T, class Get>
py::array_t<T> stacked(const std::vector<SystemState>& states, size_t n, Get get) {
  py::array_t<T> a({static_cast<py::ssize_t>(states.size()), static_cast<py::ssize_t>(n), py::ssize_t{3}});
  auto w = a.template mutable_unchecked<3>();
  for (size_t k = 0; k < states.size(); ++k) {
    const std::vector<V>& v = get(states[k]);
    for (size_t i = 0; i < n; ++i) {
      w(k, i, 0) = v[i].x;
      w(k, i, 1) = v[i].y;
      w(k, i, 2) = v[i].z;
    }
  }
  return a;
}

// K arrays of shape (N, 3) from one of shape (K, N, 3).
std::vector<std::vector<Vec3d>> unstacked(const py::object& obj, size_t k, size_t n, const std::string& what) {
  const auto a = py::array_t<double, py::array::c_style | py::array::forcecast>::ensure(obj);
  if (!a || a.ndim() != 3 || a.shape(0) != static_cast<py::ssize_t>(k) || a.shape(1) != static_cast<py::ssize_t>(n) ||
      a.shape(2) != 3)
    throw py::value_error(what + ": expected an array of shape (" + std::to_string(k) + ", " + std::to_string(n) +
                          ", 3)");
  std::vector<std::vector<Vec3d>> out;
  for (size_t s = 0; s < k; ++s) out.push_back(vec3s_of(a[py::int_(s)], n, what + "[" + std::to_string(s) + "]"));
  return out;
}

// The config with the overrides and the backend, as pairmd.Simulation reads it.
RunConfig ensemble_config(const py::object& config, const py::object& overrides, const py::object& backend) {
  if (config.is_none()) throw py::type_error(kWho + "config: a YAML file, YAML text or a dict is needed");
  RunRequest r;
  set_config(config, r);
  r.overrides = overrides_of(overrides);
  const std::string backend_name = override_choice_arg(backend, kWho, kBackendOption);
  if (!backend_name.empty()) r.overrides.push_back("backend=" + backend_name);
  return r.config_is_text ? parse_config(r.config_text, r.config_name, r.overrides)
                          : load_config(r.config_path, r.overrides);
}

// The K systems' temperatures and seeds. K: `copies`, else the length of the lists given, else
// the config's replicas.count. As `pairmd run` gives replicas theirs: the ladder of an exchange
// section, integrator.seed + k.
std::vector<EnsembleSystem> ensemble_systems(const RunConfig& cfg, const py::object& copies,
                                             const py::object& temperatures, const py::object& seeds) {
  std::vector<double> temps;
  std::vector<uint64_t> seed_list;
  if (!temperatures.is_none())
    temps = list_arg<double>(temperatures, kWho + "temperatures",
                             [](const py::handle& v, const std::string& w) { return number_arg(v, w, 0, true); });
  if (!seeds.is_none())
    seed_list = list_arg<uint64_t>(seeds, kWho + "seeds", [](const py::handle& v, const std::string& w) {
      return static_cast<uint64_t>(int_arg(v, w, 0, INT64_MAX));
    });
  int64_t k = 0;
  if (!copies.is_none())
    k = int_arg(copies, kWho + "copies", 1, 1 << 20);
  else if (!temps.empty())
    k = static_cast<int64_t>(temps.size());
  else if (!seed_list.empty())
    k = static_cast<int64_t>(seed_list.size());
  else if (cfg.replicas.count > 0)
    k = cfg.replicas.count;
  else
    throw py::type_error(kWho + "copies: how many systems? (copies=K, temperatures=[...] or seeds=[...])");
  if (!temps.empty() && static_cast<int64_t>(temps.size()) != k)
    throw py::value_error(kWho + "temperatures: " + std::to_string(temps.size()) + " given for " + std::to_string(k) +
                          " copies");
  if (!seed_list.empty() && static_cast<int64_t>(seed_list.size()) != k)
    throw py::value_error(kWho + "seeds: " + std::to_string(seed_list.size()) + " given for " + std::to_string(k) +
                          " copies");
  if (temps.empty() && cfg.replicas.exchange && static_cast<int64_t>(cfg.replicas.temperatures.size()) == k)
    temps = cfg.replicas.temperatures;
  std::vector<EnsembleSystem> systems;
  for (int64_t s = 0; s < k; ++s) {
    const double t = temps.empty() ? cfg.model.integrator.temperature : temps[s];
    const uint64_t seed = seed_list.empty() ? cfg.model.integrator.seed + static_cast<uint64_t>(s) : seed_list[s];
    systems.push_back({t, seed});
  }
  return systems;
}

// Copy k is built as `pairmd run` builds the config with integrator.seed and temperature set
// to copy k's (the same positions unless the builder draws them from those; velocities drawn
// at its temperature with its seed), so that it runs what that run runs. `model` and `first`:
// copy 0's.
std::vector<SystemState> build_copies(const RunConfig& cfg, const std::vector<EnsembleSystem>& systems, Model& model,
                                      SystemState& first) {
  std::vector<SystemState> states;
  for (size_t s = 0; s < systems.size(); ++s) {
    RunConfig ck = cfg;
    ck.model.integrator.seed = systems[s].seed;
    ck.model.integrator.temperature = systems[s].temperature;
    BuiltSystem sys = build_system(ck);
    if (s == 0) {
      model = make_model(cfg, sys);
      first = sys.state;
      // As `pairmd run` and pairmd.Simulation warn (a time step too long for the model).
      for (const std::string& w : time_step_warnings(cfg, sys.state, sys.topology))
        if (PyErr_WarnEx(PyExc_UserWarning, ("pairmd.Ensemble: warning: " + w).c_str(), 1) != 0)
          throw py::error_already_set();
    } else if (sys.state.size() != first.size()) {
      throw py::value_error(kWho + "copy " + std::to_string(s) + " builds " + std::to_string(sys.state.size()) +
                            " particles, copy 0 " + std::to_string(first.size()));
    }
    states.push_back(std::move(sys.state));
  }
  return states;
}

}  // namespace

PyEnsemble::PyEnsemble(const py::object& config, const py::object& copies, const py::object& temperatures,
                       const py::object& seeds, const py::object& overrides, const py::object& backend)
    : cfg_(ensemble_config(config, overrides, backend)) {
  systems_ = ensemble_systems(cfg_, copies, temperatures, seeds);
  Model model;
  std::vector<SystemState> states = build_copies(cfg_, systems_, model, first_);
  n_ = first_.size();
  step_ = first_.step;
  dof_ = degrees_of_freedom(cfg_, n_);
  std::string why;
  py::gil_scoped_release nogil;
  ensemble_ = make_ensemble(cfg_.backend, model, states, systems_, &why);
  if (!ensemble_) {
    py::gil_scoped_acquire gil;
    raise_config_error(kWho + why);
  }
}

void PyEnsemble::run(const py::object& steps) {
  const int64_t n = int_arg(steps, kWho + "run: steps", 0, INT64_MAX / 2 - step_);
  for (int64_t done = 0; done < n;) {
    const int64_t chunk = std::min(kChunk, n - done);
    try {
      py::gil_scoped_release nogil;
      cache_valid_ = false;
      ensemble_->advance(chunk);
    } catch (const SimulationBlowup& e) {
      raise_simulation_error(kWho + e.what(), "blew_up", step_ + done);
    }
    done += chunk;
    step_ += chunk;
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
  }
}

const std::vector<SystemState>& PyEnsemble::states() {
  if (!cache_valid_) {
    cache_.resize(systems_.size());
    py::gil_scoped_release nogil;
    for (int k = 0; k < copies(); ++k) ensemble_->get_state(k, cache_[k]);
    cache_valid_ = true;
  }
  return cache_;
}

void PyEnsemble::put_states(const std::vector<SystemState>& states) {
  {
    py::gil_scoped_release nogil;
    ensemble_->set_states(states);
  }
  cache_ = states;
  cache_valid_ = true;
}

py::array_t<double> PyEnsemble::positions() {
  return stacked<Vec3d, double>(
      states(), n_, [](const SystemState& s) -> const auto& { return s.position; });
}

py::array_t<double> PyEnsemble::velocities() {
  return stacked<Vec3d, double>(
      states(), n_, [](const SystemState& s) -> const auto& { return s.velocity; });
}

py::array_t<int32_t> PyEnsemble::images() {
  return stacked<Int3, int32_t>(
      states(), n_, [](const SystemState& s) -> const auto& { return s.image; });
}

void PyEnsemble::set_positions(const py::object& a) {
  const auto rows = unstacked(a, systems_.size(), n_, kWho + "positions");
  std::vector<SystemState> s = states();
  for (size_t k = 0; k < s.size(); ++k)
    for (size_t i = 0; i < n_; ++i) {
      // Moved positions are wrapped into the box, their crossings counted in the image.
      Vec3d r = rows[k][i];
      Int3 im = s[k].image[i];
      s[k].box.wrap(r, im);
      s[k].position[i] = r;
      s[k].image[i] = im;
    }
  put_states(s);
}

void PyEnsemble::set_velocities(const py::object& a) {
  const auto rows = unstacked(a, systems_.size(), n_, kWho + "velocities");
  std::vector<SystemState> s = states();
  for (size_t k = 0; k < s.size(); ++k) s[k].velocity = rows[k];
  put_states(s);
}

py::array_t<double> PyEnsemble::forces() {
  std::vector<SystemState> f(systems_.size());
  {
    py::gil_scoped_release nogil;
    for (int k = 0; k < copies(); ++k) f[k].position = ensemble_->forces(k);
  }
  return stacked<Vec3d, double>(
      f, n_, [](const SystemState& s) -> const auto& { return s.position; });
}

py::dict PyEnsemble::thermo() {
  const size_t k = systems_.size();
  py::array_t<double> temperature(k), potential(k), kinetic(k), total(k), pressure_a(k);
  const double volume = first_.box.periodic ? first_.box.volume() : 0.0;
  for (size_t s = 0; s < k; ++s) {
    Observables o;
    {
      py::gil_scoped_release nogil;
      o = ensemble_->observables(static_cast<int>(s));
    }
    temperature.mutable_at(s) = pairmd::temperature(o, dof_, cfg_.model.units.kB);
    potential.mutable_at(s) = o.potential;
    kinetic.mutable_at(s) = o.kinetic;
    total.mutable_at(s) = o.total();
    pressure_a.mutable_at(s) = cfg_.model.units.pressure_out * pressure(o, volume);
  }
  py::dict d;
  d["step"] = step_;
  d["temperature"] = temperature;
  d["potential_energy"] = potential;
  d["kinetic_energy"] = kinetic;
  d["total_energy"] = total;
  d["pressure"] = pressure_a;
  return d;
}

py::array_t<double> PyEnsemble::temperatures() const {
  py::array_t<double> a(systems_.size());
  for (size_t k = 0; k < systems_.size(); ++k) a.mutable_at(k) = systems_[k].temperature;
  return a;
}

void PyEnsemble::set_temperatures(const py::object& t) {
  const auto temps = list_arg<double>(
      t, kWho + "temperatures", [](const py::handle& v, const std::string& w) { return number_arg(v, w, 0, true); });
  if (temps.size() != systems_.size())
    throw py::value_error(kWho + "temperatures: " + std::to_string(temps.size()) + " given for " +
                          std::to_string(systems_.size()) + " copies");
  // One batch: on a GPU one upload for all the copies that change, not one synchronised upload each.
  std::vector<TemperatureChange> changes;
  for (size_t k = 0; k < temps.size(); ++k)
    if (temps[k] != systems_[k].temperature) changes.push_back({static_cast<int>(k), temps[k], 1.0});
  if (changes.empty()) return;
  ensemble_->change_temperatures(changes);
  for (const TemperatureChange& c : changes) systems_[c.system].temperature = c.temperature;
}

py::array_t<uint64_t> PyEnsemble::seeds() const {
  py::array_t<uint64_t> a(systems_.size());
  for (size_t k = 0; k < systems_.size(); ++k) a.mutable_at(k) = systems_[k].seed;
  return a;
}

py::dict PyEnsemble::box() const {
  py::dict d;
  const Box& b = first_.box;
  d["lo"] = py::make_tuple(b.lo.x, b.lo.y, b.lo.z);
  d["lengths"] = py::make_tuple(b.L.x, b.L.y, b.L.z);
  d["periodic"] = b.periodic;
  return d;
}

py::array_t<int32_t> PyEnsemble::types() const {
  py::array_t<int32_t> a(n_);
  for (size_t i = 0; i < n_; ++i) a.mutable_at(i) = first_.type[i];
  return a;
}

py::list PyEnsemble::type_names() const {
  py::list l;
  for (const std::string& t : first_.type_names) l.append(t);
  return l;
}

std::string PyEnsemble::repr() const {
  std::ostringstream s;
  s << "<pairmd.Ensemble " << copies() << " x " << n_ << " particles, " << backend_name() << ", step " << step_ << ">";
  return s.str();
}

void define_ensemble(py::module_& m) {
  py::class_<PyEnsemble>(m, "Ensemble", R"doc(
K copies of a config's system advanced together in one backend (docs/ensembles.md): on the GPU
one set of kernel launches per step for all K, on the CPU K reference backends over the threads.
Copy k runs bit for bit the trajectory it runs alone with its temperature and seed.

Ensemble(config, copies=None, *, temperatures=None, seeds=None, overrides=None, backend="")

config: a YAML file, YAML text or a dict (docs/config.md), as pairmd.Simulation takes it.
copies: K (default: len(temperatures), len(seeds), or the config's replicas.count).
temperatures: K thermostat temperatures (default: the config's, or its replica-exchange ladder).
seeds: K noise seeds (default: integrator.seed + k, as `pairmd run` gives replicas theirs).
Every copy starts from the configuration the config builds, with velocities drawn at its own
temperature and seed. An ensemble writes no files; positions, velocities and forces are
(K, N, 3) arrays, thermo a dict of (K,) arrays.
)doc")
      .def(py::init<const py::object&, const py::object&, const py::object&, const py::object&, const py::object&,
                    const py::object&>(),
           py::arg("config"), py::arg("copies") = py::none(), py::kw_only(), py::arg("temperatures") = py::none(),
           py::arg("seeds") = py::none(), py::arg("overrides") = py::none(), py::arg("backend") = "")
      .def("run", &PyEnsemble::run, py::arg("steps"),
           "Advance every copy by `steps` steps (the GIL released; Ctrl-C stops within 1,000 steps).\n"
           "A blow-up raises pairmd.SimulationError naming the copy; the ensemble's state is then undefined.")
      .def("__repr__", &PyEnsemble::repr)
      .def("__len__", &PyEnsemble::copies)
      .def_property("positions", &PyEnsemble::positions, &PyEnsemble::set_positions,
                    "(K, N, 3) float64, wrapped into the box (setting wraps and counts images)")
      .def_property("velocities", &PyEnsemble::velocities, &PyEnsemble::set_velocities, "(K, N, 3) float64")
      .def_property_readonly("forces", &PyEnsemble::forces, "(K, N, 3) float64 forces on the current states")
      .def_property_readonly("images", &PyEnsemble::images, "(K, N, 3) int32: unwrapped = positions + images * L")
      .def_property_readonly("thermo", &PyEnsemble::thermo, "the current observables, a dict of (K,) arrays")
      .def_property("temperatures", &PyEnsemble::temperatures, &PyEnsemble::set_temperatures,
                    "(K,) thermostat temperatures; setting changes each copy's (as a replica swap does)")
      .def_property_readonly("seeds", &PyEnsemble::seeds, "(K,) noise seeds")
      .def_property_readonly("copies", &PyEnsemble::copies)
      .def_property_readonly("particles", &PyEnsemble::particles, "N, the particles of each copy")
      .def_property_readonly("step", &PyEnsemble::step)
      .def_property_readonly("time", [](const PyEnsemble& e) { return static_cast<double>(e.step()) * e.dt(); })
      .def_property_readonly("dt", &PyEnsemble::dt)
      .def_property_readonly("box", &PyEnsemble::box, "{'lo': (3,), 'lengths': (3,), 'periodic': bool}")
      .def_property_readonly("types", &PyEnsemble::types, "(N,) int32 indices into type_names")
      .def_property_readonly("type_names", &PyEnsemble::type_names)
      .def_property_readonly("backend", &PyEnsemble::backend_name);
}

}  // namespace pairmd::python
