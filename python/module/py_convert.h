// What the Python module takes from Python and gives back: configs from a path, YAML text or a
// dict; --set style overrides from a dict; NumPy arrays from and to the engine's vectors.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <string>
#include <vector>

#include "base/vec3.h"
#include "session/options.h"
#include "session/run_plan.h"

namespace pairmd::python {

namespace py = pybind11;

// Fills the request's config from `config`: a dict (as YAML text named "<dict>"), a path
// (os.PathLike, or a str without a newline that names a file or ends in .yaml/.yml), else YAML
// text (named "<string>"). None leaves it empty (a restart takes the checkpoint's).
void set_config(const py::object& config, RunRequest& r);

// Overrides as --set takes them: a dict {"integrator.dt": 0.002, ...} (values written as YAML)
// or a list of "key.path=value" strings. Throws TypeError for anything else.
std::vector<std::string> overrides_of(const py::object& overrides);

// A Python value as YAML text (a scalar, or a flow sequence/map).
std::string yaml_of(const py::handle& value);

// (N, 3) float64 arrays from and to Vec3d vectors, and (N, 3) int32 from Int3.
py::array_t<double> array_of(const std::vector<Vec3d>& v);
py::array_t<int32_t> array_of(const std::vector<Int3>& v);
// `what` names the array in messages (ValueError: wrong shape or non-finite values).
std::vector<Vec3d> vec3s_of(const py::handle& a, size_t n, const std::string& what);

// Arguments of the module's functions, checked as the CLI checks its options: a value of the
// wrong type raises TypeError, one out of range ValueError, each naming the argument (`what`,
// e.g. "pairmd.Simulation.run: steps") and the value given.
// An int (a Python int or a NumPy integer; not a bool, float or str) in [lo, hi].
int64_t int_arg(const py::handle& v, const std::string& what, int64_t lo, int64_t hi);
// A finite real number (int or float, NumPy's too; not a bool or str) >= lo (> lo if lo_open).
double number_arg(const py::handle& v, const std::string& what, double lo, bool lo_open);
// True or False (or a NumPy bool); not 0, 1, "no" or None.
bool bool_arg(const py::handle& v, const std::string& what);
// A str.
std::string str_arg(const py::handle& v, const std::string& what);
// A path: a str or an os.PathLike (pathlib.Path); not empty.
std::string path_arg(const py::handle& v, const std::string& what);
// None or a callable.
void check_callable(const py::handle& v, const std::string& what);

// An argument of an option both front ends have, checked by its rule (session/options.h), named
// `who` + its Python name: an int or a number in the rule's range; a str, one of its choices.
int64_t int_arg(const py::handle& v, const std::string& who, const OptionSpec& spec);
double number_arg(const py::handle& v, const std::string& who, const OptionSpec& spec);
std::string choice_arg(const py::handle& v, const std::string& who, const OptionSpec& spec);
// An argument that becomes a config override (backend, strategy): as choice_arg, but a name that
// is not one of the choices raises pairmd.ConfigError, as the config's own check of it would.
std::string override_choice_arg(const py::handle& v, const std::string& who, const OptionSpec& spec);

}  // namespace pairmd::python
