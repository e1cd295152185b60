// pairmd.Simulation: a run driven from Python. It is prepared, opens its outputs and runs as
// `pairmd run` does (session/run_plan.h, session/run_outputs.h), in steps the caller chooses:
// run(n) advances n steps with the GIL released, calls a callback every k steps, and on Ctrl-C
// ends the run as `pairmd run` does on SIGINT (outputs flushed, checkpoint written) before the
// KeyboardInterrupt goes on. State comes and goes as NumPy arrays in the user's particle order.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <memory>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "engine/simulation.h"
#include "session/run_log.h"
#include "session/run_outputs.h"
#include "session/run_plan.h"

namespace pairmd::python {

namespace py = pybind11;

// The thermo rows of the run (step, time, temperature, energies, pressure), column by column.
struct ThermoRows {
  std::vector<std::string> names;
  std::vector<std::vector<double>> columns;
};

class PySimulation {
 public:
  // Every argument is checked (TypeError/ValueError naming it) before anything is read or written.
  PySimulation(const py::object& config, const py::object& overrides, const py::object& backend,
               const py::object& strategy, const py::object& output, const py::object& overwrite,
               const py::object& restart, const py::object& quiet);
  ~PySimulation();
  PySimulation(const PySimulation&) = delete;
  PySimulation& operator=(const PySimulation&) = delete;

  // Advances `steps` steps (None: to the end the config's `steps` sets); `callback(sim)` runs at
  // every multiple of `every` (0: output.thermo_every). `steps` is an int in [0, kLastStep - step].
  void run(const py::object& steps, const py::object& callback, const py::object& every);
  // The last step a simulation can reach: the largest `steps` a config takes (engine/config.cpp
  // reads integers through a double, exact to 9e15), far enough below 2^63 that no output
  // interval's next multiple can overflow.
  static constexpr int64_t kLastStep = 9'000'000'000'000'000;
  // Ends the run (observers finished: last frame, thermo row, checkpoint), closes the files and
  // gives up the output prefix. The state stays readable. Raises SimulationError when an output
  // could not be finished (unless `quiet_errors`, as in the destructor).
  void close(bool quiet_errors = false);
  bool closed() const { return sim_ == nullptr; }
  // Writes a checkpoint of the current state (default: the run's checkpoint file).
  std::string write_checkpoint(const py::object& path);

  py::array_t<double> positions();
  void set_positions(const py::object& a);
  py::array_t<double> velocities();
  void set_velocities(const py::object& a);
  py::array_t<double> forces();
  py::array_t<int32_t> images();
  py::array_t<int32_t> types();
  py::array_t<double> charges();
  py::array_t<double> masses();
  py::list type_names();
  py::dict box();
  py::array_t<double> dimensions();  // [Lx, Ly, Lz, 90, 90, 90], as MDAnalysis takes them
  int64_t step();
  double time() { return static_cast<double>(step()) * dt(); }
  double dt() const { return run_.plan.cfg.model.integrator.dt; }
  size_t size() const { return run_.plan.sys.state.size(); }

  py::dict thermo();        // the current state's observables
  py::dict thermo_table();  // every thermo row of the run so far, as NumPy columns
  py::dict thermo_units() const;
  std::string backend_name() const { return backend_name_; }
  py::object files() const;  // the output files, or None
  std::string config_text() const { return run_.plan.cfg.text; }
  std::string log_path() const { return log_path_; }
  std::string repr() const;

  // For pairmd.potential_map(sim): the config and the current state.
  const RunConfig& run_config() const { return run_.plan.cfg; }
  const SystemState& state();

  static void close_all();  // at interpreter exit: every simulation still open

 private:
  // Marks the simulation busy for the life of one call (run, close, a state read) and refuses
  // a call from another thread meanwhile: the engine is not thread-safe, and run() releases the
  // GIL. Calls from the busy thread itself (run's callback) go through.
  class Busy {
   public:
    // `what`: the attribute or method called; `doing`: how a refused call names this one.
    Busy(PySimulation& s, const std::string& what, const std::string& doing = "");
    ~Busy();
    Busy(const Busy&) = delete;
    Busy& operator=(const Busy&) = delete;

   private:
    PySimulation& s_;
  };
  bool busy_elsewhere() const { return busy_depth_ > 0 && busy_thread_ != std::this_thread::get_id(); }

  void require_open(const char* what) const;
  const SystemState& current();
  void settle();
  void set_state(const std::vector<Vec3d>& v, bool positions);
  void report(const RunResult& r);
  void finish_run();
  [[noreturn]] void ended(const RunResult& r);
  void interrupted();
  std::ostream& say() { return log_->out(); }

  RunRequest request_;
  FrontEnd fe_;
  PreparedRun run_;
  std::unique_ptr<RunLog> log_;
  Outputs out_;
  std::unique_ptr<Simulation> sim_;
  std::shared_ptr<ThermoRows> rows_;  // filled by an observer of sim_; outlives it
  std::string backend_name_, log_path_;
  bool quiet_ = false;
  SystemState scratch_, final_state_;
  std::vector<Vec3d> final_forces_;
  Observables final_obs_;
  bool have_final_obs_ = false;
  RunResult last_;
  // The call in progress (see Busy); changed only with the GIL held.
  int busy_depth_ = 0;
  std::thread::id busy_thread_;
  std::string busy_what_;
};

// Registers pairmd.Simulation in `m`.
void define_simulation(py::module_& m);

}  // namespace pairmd::python
