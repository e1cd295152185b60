#include "python/module/py_simulation.h"

#include <pybind11/stl.h>

#include <climits>
#include <cmath>
#include <iostream>
#include <set>
#include <sstream>

#include "io/thermo_log.h"
#include "potentials/registry.h"
#include "python/module/py_convert.h"
#include "python/module/py_errors.h"

namespace pairmd::python {

namespace {

// Every simulation still open, closed at interpreter exit (outputs finished and flushed).
std::set<PySimulation*>& open_simulations() {
  static std::set<PySimulation*> s;
  return s;
}

// Which family each observables term is of, for a run of `topology` (backends/backend.h).
std::vector<EnergyGroup> term_groups(const RunConfig& cfg, const Topology& topology) {
  Model m = cfg.model;
  m.topology = topology;
  return energy_groups(m);
}

// Records a thermo row every output.thermo_every steps (and at the start), as the CSV does.
class ThermoRecorder final : public RunObserver {
 public:
  ThermoRecorder(const RunConfig& cfg, double dof, std::shared_ptr<ThermoRows> rows)
      : cfg_(cfg), dof_(dof), rows_(std::move(rows)) {
    rows_->names = {"step", "time", "temperature", "potential_energy", "kinetic_energy", "total_energy", "pressure"};
    for (const EnergyColumn& c : energy_columns(cfg.model.force_field)) rows_->names.push_back(c.name);
    rows_->columns.resize(rows_->names.size());
  }
  int64_t next_step(int64_t step) const override { return next_multiple(step, cfg_.output.thermo_every); }
  void observe(const RunContext& ctx, const Frame& frame) override {
    const int64_t step = frame.state.step;
    if (!rows_->columns[0].empty() && rows_->columns[0].back() >= static_cast<double>(step)) return;
    const Observables& o = frame.observables;
    const double volume = frame.state.box.periodic ? frame.state.box.volume() : 0.0;
    std::vector<double> row = {static_cast<double>(step),
                               frame.time,
                               temperature(o, dof_, cfg_.model.units.kB),
                               o.potential,
                               o.kinetic,
                               o.total(),
                               cfg_.model.units.pressure_out * pressure(o, volume)};
    // The thermo CSV's energy columns (io/thermo_log.h): each pair term's, then each family's.
    if (groups_.empty()) groups_ = term_groups(cfg_, ctx.topology);
    for (double e : energy_column_values(energy_columns(cfg_.model.force_field), groups_, o)) row.push_back(e);
    for (size_t c = 0; c < row.size(); ++c) rows_->columns[c].push_back(row[c]);
  }

 private:
  const RunConfig& cfg_;
  double dof_;
  std::shared_ptr<ThermoRows> rows_;
  std::vector<EnergyGroup> groups_;
};

std::string outcome_name(RunOutcome o) {
  switch (o) {
    case RunOutcome::Completed:
      return "completed";
    case RunOutcome::Interrupted:
      return "interrupted";
    case RunOutcome::BlewUp:
      return "blew_up";
    case RunOutcome::Failed:
      return "failed";
  }
  return "failed";
}

std::string number_text(double x) {
  std::ostringstream s;
  s << x;
  return s.str();
}

// Puts particle i's position into the box, counting the crossings in its image, so that the
// unwrapped position stays where it was. A position so far out that the image would not fit the
// int counter is refused (ValueError naming the particle).
void wrap_into_box(const Box& b, size_t i, Vec3d& r, Int3& image) {
  const double L[3] = {b.L.x, b.L.y, b.L.z}, lo[3] = {b.lo.x, b.lo.y, b.lo.z};
  double* x[3] = {&r.x, &r.y, &r.z};
  int* im[3] = {&image.x, &image.y, &image.z};
  for (int d = 0; d < 3; ++d) {
    const double k = std::floor((*x[d] - lo[d]) / L[d]);
    const double crossed = static_cast<double>(*im[d]) + k;
    if (!(std::fabs(crossed) <= INT_MAX))
      throw py::value_error("pairmd.Simulation.positions: particle " + std::to_string(i) + ": " + "xyz"[d] + " = " +
                            number_text(*x[d]) + " is " + number_text(k) + " box lengths from the box: its image " +
                            "count would overflow (at most " + std::to_string(INT_MAX) + " crossings)");
    *x[d] -= k * L[d];
    *im[d] = static_cast<int>(crossed);
    if (*x[d] >= lo[d] + L[d] || *x[d] < lo[d]) *x[d] = lo[d];  // rounding
  }
}

// The request, as `pairmd run` makes it from its command line; every argument checked.
RunRequest request_of(const py::object& config, const py::object& overrides, const py::object& backend,
                      const py::object& strategy, const py::object& output, const py::object& overwrite,
                      const py::object& restart) {
  const std::string who = "pairmd.Simulation: ";
  RunRequest r;
  const std::string backend_name = override_choice_arg(backend, who, kBackendOption);
  const std::string strategy_name = override_choice_arg(strategy, who, kStrategyOption);
  r.overwrite = bool_arg(overwrite, who + "overwrite");
  if (!restart.is_none()) r.restart = path_arg(restart, who + "restart");
  if (output.is_none() || (py::isinstance<py::bool_>(output) && !output.cast<bool>())) {
    r.no_files = true;
  } else if (!py::isinstance<py::bool_>(output)) {
    if (py::isinstance<py::str>(output) && output.cast<std::string>().empty())
      raise_config_error("pairmd.Simulation: output: an empty prefix (None: no files)");
    r.output = path_arg(output, who + "output");
  }
  set_config(config, r);
  r.overrides = overrides_of(overrides);
  if (!backend_name.empty()) r.overrides.push_back("backend=" + backend_name);
  if (!strategy_name.empty()) r.overrides.push_back("force.strategy=" + strategy_name);
  if (r.config_path.empty() && !r.config_is_text && r.restart.empty())
    raise_config_error("pairmd.Simulation: give a config (a path, YAML text or a dict) or restart=CHECKPOINT");
  return r;
}

std::string config_word(const RunRequest& r) { return !r.config_path.empty() ? "'" + r.config_path + "'" : "config"; }

// How pairmd's messages name the module's arguments.
FrontEnd python_front_end(const RunRequest& r) {
  FrontEnd fe;
  fe.who = "pairmd.Simulation";
  fe.overwrite = "overwrite=True";
  fe.output = "output=";
  fe.output_example = "output='PREFIX'";
  fe.restart = "restart=";
  fe.set = "overrides";
  fe.steps = "run(steps)";
  fe.continue_with = [word = config_word(r)](const std::string& ck) {
    return "pairmd.Simulation(" + word + ", restart='" + ck + "')";
  };
  return fe;
}

// The call as the log records it.
std::string command_of(const RunRequest& r) {
  std::string command = "pairmd.Simulation(" + (r.config_is_text ? r.config_name : config_word(r));
  for (const std::string& s : r.overrides) command += ", " + s;
  if (!r.restart.empty()) command += ", restart='" + r.restart + "'";
  return command + ") from Python " + py::module_::import("platform").attr("python_version")().cast<std::string>();
}

}  // namespace

PySimulation::Busy::Busy(PySimulation& s, const std::string& what, const std::string& doing) : s_(s) {
  if (s.busy_elsewhere())
    throw std::runtime_error("pairmd.Simulation." + what + ": refused: " + s.busy_what_ +
                             " is running on this simulation in another thread, and a simulation takes one call at "
                             "a time (wait for it to return; other simulations can run meanwhile)");
  if (s.busy_depth_++ == 0) {
    s.busy_thread_ = std::this_thread::get_id();
    s.busy_what_ = doing.empty() ? what : doing;
  }
}

PySimulation::Busy::~Busy() {
  if (--s_.busy_depth_ == 0) {
    s_.busy_thread_ = std::thread::id();
    s_.busy_what_.clear();
  }
}

PySimulation::PySimulation(const py::object& config, const py::object& overrides, const py::object& backend,
                           const py::object& strategy, const py::object& output, const py::object& overwrite,
                           const py::object& restart, const py::object& quiet)
    : request_(request_of(config, overrides, backend, strategy, output, overwrite, restart)),
      fe_(python_front_end(request_)),
      rows_(std::make_shared<ThermoRows>()),
      quiet_(bool_arg(quiet, "pairmd.Simulation: quiet")) {
  const std::string command = command_of(request_);

  log_ = std::make_unique<RunLog>(false, !quiet_);
  // Warnings go into the log and to Python's warnings.
  std::ostringstream warnings;
  auto warn = [&]() {
    std::string line;
    std::istringstream in(warnings.str());
    while (std::getline(in, line))
      if (!line.empty()) {
        say() << line << "\n";
        if (PyErr_WarnEx(PyExc_UserWarning, line.c_str(), 1) != 0) throw py::error_already_set();
      }
    warnings.str("");
  };
  try {
    prepare_run(request_, fe_, run_, warnings);
  } catch (const std::runtime_error& e) {
    if (dynamic_cast<const ConfigError*>(&e)) throw;
    throw std::runtime_error(fe_.who + ": " + e.what());
  }
  warn();
  describe_start(request_, fe_, run_, say(), warnings);
  warn();
  RunPlan& p = run_.plan;
  RunConfig& cfg = p.cfg;
  if (cfg.output.progress == "auto") cfg.output.progress = "off";  // no live line under Python
  backend_name_ = run_.backend->name();

  std::unique_ptr<PotentialMapObserver> potential_map;
  if (cfg.potential_map.every > 0 && !request_.no_files) {
    try {
      potential_map = make_potential_map_observer(p);
    } catch (const std::exception& e) {
      raise_config_error(fe_.who + ": analysis.potential_map: " + e.what());
    }
    say() << "potential map: every " << cfg.potential_map.every << " steps, kernel "
          << potential_map->series().kernel_description() << ", average -> " << potential_map->dx_path() << "\n";
  } else if (cfg.potential_map.every > 0) {
    say() << "potential map: not made (no output files; pairmd.potential_map(sim) maps the current state)\n";
  }
  sim_ = std::make_unique<Simulation>(cfg, p.sys.topology, std::move(run_.backend));
  if (request_.no_files) {
    sim_->add_observer(
        std::make_unique<ThermoLog>(cfg, "", false, degrees_of_freedom(cfg, p.sys.state.size()), false, say()));
  } else {
    open_outputs(request_, fe_, p, std::move(potential_map), *sim_, out_, *log_, command);
    log_path_ = log_->path();
  }
  sim_->add_observer(std::make_unique<ThermoRecorder>(cfg, degrees_of_freedom(cfg, p.sys.state.size()), rows_));
  say().flush();
  open_simulations().insert(this);
}

PySimulation::~PySimulation() {
  open_simulations().erase(this);
  try {
    close(true);
  } catch (...) {
    // Nothing may escape a destructor; close(true) has said what went wrong in the log.
  }
}

void PySimulation::close_all() {
  const std::set<PySimulation*> all = open_simulations();
  for (PySimulation* s : all) {
    try {
      s->close(true);
    } catch (...) {
    }
  }
}

void PySimulation::require_open(const char* what) const {
  if (!sim_)
    throw std::runtime_error(std::string("pairmd.Simulation.") + what +
                             ": the simulation is closed (its run ended at step " +
                             std::to_string(last_.last_good_step) + "); its state can still be read");
}

// The run's last steps may still be running (Simulation::advance_to leaves them to the GPU):
// wait for them before the backend's state is read; a blow-up in them ends the run here.
void PySimulation::settle() {
  if (!sim_ || !sim_->begun() || sim_->ended()) return;
  RunResult r;
  {
    py::gil_scoped_release nogil;
    r = sim_->settle();
  }
  if (sim_->ended()) ended(r);
}

const SystemState& PySimulation::state() {
  Busy busy(*this, "state");
  return current();
}

const SystemState& PySimulation::current() {
  if (!sim_) return final_state_;
  settle();
  sim_->backend().get_state(scratch_);
  return scratch_;
}

int64_t PySimulation::step() {
  Busy busy(*this, "step");
  if (!sim_) return final_state_.step;
  return sim_->begun() ? sim_->step() : run_.plan.first;
}

// The last lines of the run, as `pairmd run` prints them: where the last good state went.
void PySimulation::report(const RunResult& r) {
  const BackendStats st = sim_->backend().stats();
  say() << "performance: " << st.steps << " steps in " << st.seconds_total << " s";
  if (st.seconds_total > 0) say() << " = " << st.steps / st.seconds_total << " steps/s";
  say() << ", " << st.list_builds << " neighbour-list builds\n";
  for (const std::string& e : r.finish_errors) say() << fe_.who << ": error: " << e << "\n";
  std::string saved = "no output files";
  if (const CheckpointWriter* ck = out_.checkpoints) {
    if (ck->last_written_step() == r.last_good_step)
      saved = "checkpoint written to " + ck->path() + " (step " + std::to_string(r.last_good_step) + ")";
    else if (!ck->error().empty())
      saved = "no checkpoint of step " + std::to_string(r.last_good_step) + ": " + ck->error();
    else
      saved = "no checkpoint of step " + std::to_string(r.last_good_step);
  }
  switch (r.outcome) {
    case RunOutcome::Completed:
      say() << "done: step " << r.last_good_step << "; " << saved << "\n";
      break;
    case RunOutcome::Interrupted:
      say() << fe_.who << ": interrupted (" << r.message << ") at step " << r.last_good_step << ", " << saved
            << ", output flushed\n";
      if (out_.checkpoints) say() << "  continue with: " << fe_.continue_with(out_.checkpoints->path()) << "\n";
      break;
    case RunOutcome::BlewUp:
    case RunOutcome::Failed:
      say() << fe_.who << ": error: " << r.message << "\n  the last good state is step " << r.last_good_step << "; "
            << saved << "\n";
      break;
  }
  say().flush();
}

// The run has ended (its observers finished): keep its last state, let go of everything else.
void PySimulation::finish_run() {
  final_state_ = sim_->begun() ? sim_->last_good_state() : current();
  if (last_.outcome != RunOutcome::BlewUp) {
    try {
      if (final_state_.step != current().step) sim_->backend().set_state(final_state_);
      final_forces_ = sim_->backend().forces();
      final_obs_ = sim_->backend().observables();
      have_final_obs_ = true;
    } catch (const std::exception&) {
      final_forces_.clear();
    }
  }
  open_simulations().erase(this);
  sim_.reset();
  out_ = Outputs();
  log_.reset();
  run_.claim.reset();
}

void PySimulation::ended(const RunResult& r) {
  last_ = r;
  report(r);
  finish_run();
  std::string msg = r.message + "; the last good state is step " + std::to_string(r.last_good_step);
  raise_simulation_error(msg, outcome_name(r.outcome), r.last_good_step);
}

// Ctrl-C: the run ends as `pairmd run` ends on SIGINT; the caller raises the KeyboardInterrupt.
void PySimulation::interrupted() {
  RunResult r;
  {
    py::gil_scoped_release nogil;
    r = sim_->interrupt("KeyboardInterrupt at step " + std::to_string(sim_->step()));
  }
  last_ = r;
  report(r);
  finish_run();
}

void PySimulation::run(const py::object& steps, const py::object& callback, const py::object& every_arg) {
  Busy busy(*this, "run", "run(" + (steps.is_none() ? std::string() : py::repr(steps).cast<std::string>()) + ")");
  require_open("run");
  const std::string who = "pairmd.Simulation.run: ";
  check_callable(callback, who + "callback");
  int64_t every = int_arg(every_arg, who + "every", 0, kLastStep);
  const bool call = !callback.is_none();
  if (call && every == 0) every = run_.plan.cfg.output.thermo_every > 0 ? run_.plan.cfg.output.thermo_every : 1;
  const int64_t from = step();
  int64_t target = run_.plan.last;
  if (!steps.is_none()) {
    try {
      target = from + int_arg(steps, who + "steps", 0, std::max<int64_t>(0, kLastStep - from));
    } catch (const py::value_error& e) {
      throw py::value_error(std::string(e.what()) + " (the step counter goes up to " + std::to_string(kLastStep) +
                            "; the simulation is at step " + std::to_string(from) + ")");
    }
  }
  if (!sim_->begun()) {
    RunResult r;
    {
      py::gil_scoped_release nogil;
      r = sim_->begin(std::max(target, from));
    }
    if (sim_->ended()) ended(r);
  }
  const py::object self = py::cast(this, py::return_value_policy::reference);
  while (sim_->step() < target) {
    const int64_t next = call ? std::min(target, next_multiple(sim_->step(), every)) : target;
    RunResult r;
    {
      py::gil_scoped_release nogil;
      // Back every 0.2 s at most, to look for Ctrl-C.
      r = sim_->advance_to(next, 0.2);
    }
    if (sim_->ended()) ended(r);
    if (PyErr_CheckSignals() != 0) {
      py::error_already_set e;
      interrupted();
      throw e;
    }
    if (call && sim_->step() == next && next % every == 0) {
      try {
        callback(self);
      } catch (py::error_already_set& e) {
        if (e.matches(PyExc_KeyboardInterrupt) && sim_) interrupted();
        throw;
      }
      if (!sim_) return;  // the callback closed the simulation
    }
  }
  say().flush();
  std::cout.flush();
}

void PySimulation::close(bool quiet_errors) {
  Busy busy(*this, "close");
  if (!sim_) return;
  RunResult r;
  {
    py::gil_scoped_release nogil;
    if (!sim_->begun()) r = sim_->begin(run_.plan.first);
    if (!sim_->ended()) r = sim_->end();
  }
  last_ = r;
  report(r);
  finish_run();
  if (!quiet_errors && r.outcome != RunOutcome::Completed)
    raise_simulation_error(r.message, outcome_name(r.outcome), r.last_good_step);
}

std::string PySimulation::write_checkpoint(const py::object& path) {
  Busy busy(*this, "write_checkpoint");
  require_open("write_checkpoint");
  std::string where;
  if (!path.is_none())
    where = path_arg(path, "pairmd.Simulation.write_checkpoint: path");
  else if (!request_.no_files)
    where = run_.plan.files.checkpoint();
  else
    throw py::value_error("write_checkpoint: this simulation writes no files (output=None): give a path");
  const RunPlan& p = run_.plan;
  SystemState s;
  settle();
  {
    py::gil_scoped_release nogil;
    sim_->backend().get_state(s);
    if (out_.writer) out_.writer->flush();  // the trajectory on disk covers the checkpoint's step
    pairmd::write_checkpoint(where, s, sim_->topology(), p.cfg, p.restart ? p.ck.first_step : p.first,
                             sim_->backend().name(), request_.no_files ? "" : p.files.prefix, p.last);
  }
  return where;
}

void PySimulation::set_state(const std::vector<Vec3d>& v, bool positions) {
  SystemState s = current();
  if (positions) {
    for (size_t i = 0; i < v.size(); ++i) {
      s.position[i] = v[i];
      if (s.box.periodic) wrap_into_box(s.box, i, s.position[i], s.image[i]);
    }
  } else {
    s.velocity = v;
  }
  py::gil_scoped_release nogil;
  sim_->backend().set_state(s);
  if (sim_->begun()) sim_->state_replaced();
}

py::array_t<double> PySimulation::positions() {
  Busy busy(*this, "positions");
  return array_of(current().position);
}

py::array_t<double> PySimulation::velocities() {
  Busy busy(*this, "velocities");
  return array_of(current().velocity);
}

py::array_t<int32_t> PySimulation::images() {
  Busy busy(*this, "images");
  return array_of(current().image);
}

void PySimulation::set_positions(const py::object& a) {
  Busy busy(*this, "positions");
  require_open("positions");
  set_state(vec3s_of(a, size(), "positions"), true);
}

void PySimulation::set_velocities(const py::object& a) {
  Busy busy(*this, "velocities");
  require_open("velocities");
  set_state(vec3s_of(a, size(), "velocities"), false);
}

py::array_t<double> PySimulation::forces() {
  Busy busy(*this, "forces");
  if (!sim_) {
    if (final_forces_.empty())
      throw std::runtime_error("pairmd.Simulation.forces: the run blew up; no forces of its last good state");
    return array_of(final_forces_);
  }
  std::vector<Vec3d> f;
  settle();
  {
    py::gil_scoped_release nogil;
    f = sim_->backend().forces();
  }
  return array_of(f);
}

py::array_t<int32_t> PySimulation::types() {
  Busy busy(*this, "types");
  const std::vector<int>& t = current().type;
  return py::array_t<int32_t>(static_cast<py::ssize_t>(t.size()), t.data());
}

py::array_t<double> PySimulation::charges() {
  Busy busy(*this, "charges");
  const std::vector<double>& q = current().charge;
  return py::array_t<double>(static_cast<py::ssize_t>(q.size()), q.data());
}

py::array_t<double> PySimulation::masses() {
  Busy busy(*this, "masses");
  const std::vector<double>& m = current().mass;
  return py::array_t<double>(static_cast<py::ssize_t>(m.size()), m.data());
}

py::list PySimulation::type_names() {
  Busy busy(*this, "type_names");
  return py::cast(current().type_names);
}

py::dict PySimulation::box() {
  const Box& b = run_.plan.sys.state.box;
  py::dict d;
  d["lo"] = py::array_t<double>(3, &b.lo.x);
  d["lengths"] = py::array_t<double>(3, &b.L.x);
  d["periodic"] = b.periodic;
  return d;
}

py::array_t<double> PySimulation::dimensions() {
  const Box& b = run_.plan.sys.state.box;
  const double d[6] = {b.L.x, b.L.y, b.L.z, 90, 90, 90};
  return py::array_t<double>(6, d);
}

py::dict PySimulation::thermo() {
  Busy busy(*this, "thermo");
  Observables o;
  const SystemState& s = current();
  if (sim_) {
    py::gil_scoped_release nogil;
    o = sim_->backend().observables();
  } else if (have_final_obs_) {
    o = final_obs_;
  } else {
    throw std::runtime_error("pairmd.Simulation.thermo: the run blew up; see thermo_table for its rows");
  }
  const RunConfig& cfg = run_.plan.cfg;
  py::dict d;
  d["step"] = s.step;
  d["time"] = static_cast<double>(s.step) * cfg.model.integrator.dt;
  d["temperature"] = temperature(o, degrees_of_freedom(cfg, s.size()), cfg.model.units.kB);
  d["potential_energy"] = o.potential;
  d["kinetic_energy"] = o.kinetic;
  d["total_energy"] = o.total();
  d["pressure"] = cfg.model.units.pressure_out * pressure(o, s.box.periodic ? s.box.volume() : 0.0);
  const std::vector<EnergyColumn> columns = energy_columns(cfg.model.force_field);
  const std::vector<double> values = energy_column_values(columns, term_groups(cfg, run_.plan.sys.topology), o);
  for (size_t c = 0; c < columns.size(); ++c) d[py::str(columns[c].name)] = values[c];
  return d;
}

py::dict PySimulation::thermo_table() {
  Busy busy(*this, "thermo_table");  // the run's observer appends to the rows
  py::dict d;
  for (size_t c = 0; c < rows_->names.size(); ++c) {
    const std::vector<double>& col = rows_->columns[c];
    if (c == 0) {
      py::array_t<int64_t> steps(static_cast<py::ssize_t>(col.size()));
      for (size_t i = 0; i < col.size(); ++i) steps.mutable_at(i) = static_cast<int64_t>(col[i]);
      d["step"] = steps;
    } else {
      d[py::str(rows_->names[c])] = py::array_t<double>(static_cast<py::ssize_t>(col.size()), col.data());
    }
  }
  return d;
}

py::dict PySimulation::thermo_units() const {
  const Units& u = run_.plan.cfg.model.units;
  py::dict d;
  d["step"] = "";
  d["time"] = u.time_unit();
  d["temperature"] = u.temperature_unit();
  for (const char* k : {"potential_energy", "kinetic_energy", "total_energy"}) d[k] = u.energy_unit();
  d["pressure"] = u.pressure_unit();
  for (const EnergyColumn& c : energy_columns(run_.plan.cfg.model.force_field)) d[py::str(c.name)] = u.energy_unit();
  return d;
}

py::object PySimulation::files() const {
  if (request_.no_files) return py::none();
  const OutputFiles& f = run_.plan.files;
  py::dict d;
  d["prefix"] = f.prefix;
  d["log"] = f.log();
  d["thermo"] = f.thermo();
  d["checkpoint"] = f.checkpoint();
  const TrajectorySpec& ts = run_.plan.cfg.output.trajectory;
  if (ts.every > 0 || ts.velocities_every > 0 || ts.forces_every > 0 || ts.observables_every > 0)
    d["trajectory"] = f.trajectory();
  if (run_.plan.cfg.output.gsd.every > 0) d["gsd"] = f.gsd();
  if (run_.plan.cfg.potential_map.every > 0) d["potential_map"] = f.potential_map();
  return d;
}

std::string PySimulation::repr() const {
  std::ostringstream s;
  s << "<pairmd.Simulation " << size() << " particles, backend " << backend_name_;
  if (busy_elsewhere())
    s << ", busy: " << busy_what_ << " in another thread";
  else
    s << ", step " << (sim_ ? (sim_->begun() ? sim_->step() : run_.plan.first) : final_state_.step);
  s << (request_.no_files ? ", no files" : ", output " + run_.plan.files.prefix + ".*") << (sim_ ? "" : ", closed")
    << ">";
  return s.str();
}

void define_simulation(py::module_& m) {
  py::class_<PySimulation>(m, "Simulation", R"doc(
A pairmd run driven from Python (docs/python.md).

Simulation(config=None, *, overrides=None, backend="", strategy="", output=True,
           overwrite=False, restart=None, quiet=False)

config: a YAML file (str or os.PathLike), YAML text, or a dict with the same keys
    (docs/config.md). Validated as `pairmd run` validates it: problems raise
    pairmd.ConfigError (a ValueError) with file, line and column where there is one.
overrides: {"integrator.dt": 0.002, ...} or ["integrator.dt=0.002", ...], as --set.
backend: "cpu", "cuda" or "auto" (default: the config's); strategy: the GPU strategy.
output: True: the config's output prefix (output.prefix, else the config file's name);
    a str: that prefix; None or False: no files at all. Files follow `pairmd run`'s rules:
    an earlier run's files are replaced only with overwrite=True.
restart: a checkpoint to continue (config may then be left out).
quiet: print nothing (the log file, if any, still gets everything).
)doc")
      .def(py::init<const py::object&, const py::object&, const py::object&, const py::object&, const py::object&,
                    const py::object&, const py::object&, const py::object&>(),
           py::arg("config") = py::none(), py::kw_only(), py::arg("overrides") = py::none(), py::arg("backend") = "",
           py::arg("strategy") = "", py::arg("output") = true, py::arg("overwrite") = false,
           py::arg("restart") = py::none(), py::arg("quiet") = false)
      .def("run", &PySimulation::run, py::arg("steps") = py::none(), py::arg("callback") = py::none(),
           py::arg("every") = 0,
           "Advance `steps` steps (None: to the end the config's `steps` sets, counted from the run's first step);\n"
           "steps is an int in [0, 9e15 - the current step]. callback(sim) runs at every multiple of `every` steps\n"
           "(default output.thermo_every). The GIL is released while the engine runs; a call on this simulation\n"
           "from another thread meanwhile raises RuntimeError. Ctrl-C ends the run as `pairmd run` ends on SIGINT\n"
           "(outputs flushed, checkpoint written) and the KeyboardInterrupt goes on. A blow-up or an output that\n"
           "cannot be written raises pairmd.SimulationError; the simulation then holds its last good state.")
      .def(
          "close", [](PySimulation& s) { s.close(false); },
          "End the run: the last frame, thermo row and checkpoint are written, the files closed and the\n"
          "output prefix given up. The state can still be read.")
      .def("write_checkpoint", &PySimulation::write_checkpoint, py::arg("path") = py::none(),
           "Write a checkpoint of the current state (default: the run's PREFIX.checkpoint.h5); returns its path.\n"
           "Simulation(config, restart=path) continues from it.")
      .def(
          "__enter__", [](PySimulation& s) -> PySimulation& { return s; }, py::return_value_policy::reference)
      .def("__exit__", [](PySimulation& s, const py::object&, const py::object&, const py::object&) { s.close(false); })
      .def("__repr__", &PySimulation::repr)
      .def("__len__", &PySimulation::size)
      .def_property("positions", &PySimulation::positions, &PySimulation::set_positions,
                    "(N, 3) float64, wrapped into the box, in the order the particles were created")
      .def_property("velocities", &PySimulation::velocities, &PySimulation::set_velocities, "(N, 3) float64")
      .def_property_readonly("forces", &PySimulation::forces, "(N, 3) float64 forces on the current state")
      .def_property_readonly("images", &PySimulation::images,
                             "(N, 3) int32 box crossings: unwrapped = positions + images * L")
      .def_property_readonly("types", &PySimulation::types, "(N,) int32 indices into type_names")
      .def_property_readonly("type_names", &PySimulation::type_names)
      .def_property_readonly("charges", &PySimulation::charges, "(N,) float64")
      .def_property_readonly("masses", &PySimulation::masses, "(N,) float64")
      .def_property_readonly("box", &PySimulation::box, "{'lo': (3,), 'lengths': (3,), 'periodic': bool}")
      .def_property_readonly("dimensions", &PySimulation::dimensions, "[Lx, Ly, Lz, 90, 90, 90] (MDAnalysis)")
      .def_property_readonly("step", &PySimulation::step)
      .def_property_readonly("time", &PySimulation::time)
      .def_property_readonly("dt", &PySimulation::dt)
      .def_property_readonly("thermo", &PySimulation::thermo, "the current state's observables, as a dict")
      .def_property_readonly("thermo_table", &PySimulation::thermo_table,
                             "every thermo row so far (each output.thermo_every steps), as a dict of NumPy columns:\n"
                             "pandas.DataFrame(sim.thermo_table)")
      .def_property_readonly("thermo_units", &PySimulation::thermo_units)
      .def_property_readonly("backend", &PySimulation::backend_name)
      .def_property_readonly("files", &PySimulation::files, "the output files (dict), or None")
      .def_property_readonly("closed", &PySimulation::closed)
      .def_property_readonly("config_text", &PySimulation::config_text);
}

}  // namespace pairmd::python
