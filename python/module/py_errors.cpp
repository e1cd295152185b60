#include "python/module/py_errors.h"

#include <pybind11/eval.h>

#include "engine/config.h"

namespace pairmd::python {

namespace {

// The classes, defined in Python so that their attributes are plain Python.
const char* kErrors = R"PY(
import re as _re

class ConfigError(ValueError):
    """Bad input: a config, an override, a start file or a checkpoint that cannot be used.

    The message is the one `pairmd run` prints (exit code 2). ``file``, ``line`` and ``column``
    say where the problem is, when the message names a place (else None)."""

    def __init__(self, message):
        super().__init__(message)
        m = _re.match(r"^(.+?):(\d+)(?::(\d+))?: ", str(message))
        self.file = m.group(1) if m else None
        self.line = int(m.group(2)) if m else None
        self.column = int(m.group(3)) if m and m.group(3) else None


class SimulationError(RuntimeError):
    """The run cannot go on: it blew up, or an output could not be written.

    ``outcome`` is "blew_up" or "failed"; ``step`` is the last good step, whose state the
    simulation keeps (and its checkpoint holds, with output files)."""

    def __init__(self, message, outcome=None, step=None):
        super().__init__(message)
        self.outcome = outcome
        self.step = step
)PY";

// Kept for the life of the process (never released: the interpreter may be gone at exit).
PyObject* g_config_error = nullptr;
PyObject* g_simulation_error = nullptr;

}  // namespace

void define_errors(py::module_& m) {
  py::dict scope;
  scope["__builtins__"] = py::module_::import("builtins");
  scope["__name__"] = "pairmd";
  py::exec(kErrors, scope);
  g_config_error = py::object(scope["ConfigError"]).release().ptr();
  g_simulation_error = py::object(scope["SimulationError"]).release().ptr();
  m.attr("ConfigError") = py::handle(g_config_error);
  m.attr("SimulationError") = py::handle(g_simulation_error);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const ConfigError& e) {
      PyErr_SetObject(g_config_error, py::str(e.what()).ptr());
    }
  });
}

void raise_config_error(const std::string& message) {
  PyErr_SetObject(g_config_error, py::str(message).ptr());
  throw py::error_already_set();
}

void raise_simulation_error(const std::string& message, const std::string& outcome, int64_t step) {
  py::object e = py::handle(g_simulation_error)(message, outcome, step);
  PyErr_SetObject(g_simulation_error, e.ptr());
  throw py::error_already_set();
}

}  // namespace pairmd::python
