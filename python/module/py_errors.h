// The module's exceptions: pairmd.ConfigError (a ValueError: bad input, with file, line and
// column where the message has them) and pairmd.SimulationError (a RuntimeError: the run blew up
// or an output could not be written; with the outcome and the last good step).
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>

namespace pairmd::python {

namespace py = pybind11;

// Defines the classes in `m` and translates C++ ConfigError into pairmd.ConfigError.
void define_errors(py::module_& m);

[[noreturn]] void raise_config_error(const std::string& message);
[[noreturn]] void raise_simulation_error(const std::string& message, const std::string& outcome, int64_t step);

}  // namespace pairmd::python
