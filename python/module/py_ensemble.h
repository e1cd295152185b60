// pairmd.Ensemble: K copies of a config's system advanced together in one backend
// (backends/ensemble.h: on the GPU one set of kernels for all K; on the CPU K reference backends
// over the threads), with their state as NumPy arrays of shape (K, N, 3). No files: it is the
// building block for pulling statistics, sampling and replica schemes written in Python
// (docs/ensembles.md); `pairmd run` with `replicas:` is the way with trajectories and exchange.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <memory>
#include <string>
#include <vector>

#include "backends/ensemble.h"
#include "engine/config.h"

namespace pairmd::python {

namespace py = pybind11;

class PyEnsemble {
 public:
  // Every argument checked (TypeError/ValueError naming it) before the ensemble is built.
  PyEnsemble(const py::object& config, const py::object& copies, const py::object& temperatures,
             const py::object& seeds, const py::object& overrides, const py::object& backend);

  // Advances every system by `steps` steps, the GIL released; Ctrl-C stops between chunks.
  void run(const py::object& steps);

  py::array_t<double> positions();
  void set_positions(const py::object& a);
  py::array_t<double> velocities();
  void set_velocities(const py::object& a);
  py::array_t<double> forces();
  py::array_t<int32_t> images();
  py::dict thermo();  // (K,) arrays: temperature, energies, pressure
  py::array_t<double> temperatures() const;
  void set_temperatures(const py::object& t);
  py::array_t<uint64_t> seeds() const;
  int64_t step() const { return step_; }
  double dt() const { return cfg_.model.integrator.dt; }
  int copies() const { return static_cast<int>(systems_.size()); }
  size_t particles() const { return n_; }
  std::string backend_name() const { return ensemble_->name(); }
  py::dict box() const;
  py::array_t<int32_t> types() const;
  py::list type_names() const;
  std::string repr() const;

 private:
  // All K states, read from the backend when the cache is stale.
  const std::vector<SystemState>& states();
  void put_states(const std::vector<SystemState>& states);

  RunConfig cfg_;
  SystemState first_;  // the state the config builds (types, masses, box)
  std::vector<EnsembleSystem> systems_;
  std::unique_ptr<Ensemble> ensemble_;
  size_t n_ = 0;
  int64_t step_ = 0;
  double dof_ = 0;
  std::vector<SystemState> cache_;
  bool cache_valid_ = false;
};

void define_ensemble(py::module_& m);

}  // namespace pairmd::python
