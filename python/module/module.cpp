// The pairmd Python module: pairmd.Simulation, pairmd.Ensemble, pairmd.compare, pairmd.potential_map and the
// exceptions (docs/python.md). Built by the same CMake as the program (python/module/CMakeLists.txt).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "backends/backend.h"
#include "backends/strategies.h"
#include "base/version.h"
#include "io/hdf5_util.h"
#include "python/module/py_analysis.h"
#include "python/module/py_ensemble.h"
#include "python/module/py_errors.h"
#include "python/module/py_simulation.h"

namespace py = pybind11;

PYBIND11_MODULE(pairmd, m) {
  using namespace pairmd;
  using namespace pairmd::python;
  m.doc() = "pairmd: molecular dynamics on the GPU (or the CPU reference) from Python; docs/python.md";
  m.attr("__version__") = PAIRMD_VERSION;
  // HDF5 reports its own errors on stderr unless told not to; pairmd reports them itself.
  pairmd::h5::quiet_library(false);
  define_errors(m);
  define_simulation(m);
  define_ensemble(m);
  define_analysis(m);
  m.def(
      "cuda_available",
      [] {
        std::string why;
        return cuda_available(&why);
      },
      "True where the CUDA backend can run (a GPU and its driver); cuda_status() says which GPU or why not");
  m.def(
      "cuda_status",
      [] {
        std::string why;
        cuda_available(&why);
        return why;
      },
      "the GPU the CUDA backend runs on, or why it cannot run (no GPU, no driver, built without CUDA)");
  m.def(
      "strategies", [] { return strategy_names(); }, "the registered GPU force-summation strategies");
  // Runs still open at exit are ended as close() ends them: outputs finished and flushed.
  py::module_::import("atexit").attr("register")(py::cpp_function([] { PySimulation::close_all(); }));
}
