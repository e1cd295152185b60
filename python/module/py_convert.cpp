#include "python/module/py_convert.h"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <limits>
#include <sstream>

#include "engine/config.h"
#include "python/module/py_errors.h"

namespace pairmd::python {

namespace {

YAML::Node node_of(const py::handle& v) {
  if (v.is_none()) return YAML::Node(YAML::NodeType::Null);
  if (py::isinstance<py::bool_>(v)) return YAML::Node(v.cast<bool>() ? "true" : "false");
  if (py::isinstance<py::int_>(v)) return YAML::Node(py::str(v).cast<std::string>());
  if (py::isinstance<py::float_>(v)) return YAML::Node(py::repr(v).cast<std::string>());
  if (py::isinstance<py::str>(v)) return YAML::Node(v.cast<std::string>());
  if (py::isinstance<py::dict>(v)) {
    YAML::Node map(YAML::NodeType::Map);
    for (const auto& kv : v.cast<py::dict>()) map[py::str(kv.first).cast<std::string>()] = node_of(kv.second);
    return map;
  }
  if (py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v)) {
    YAML::Node seq(YAML::NodeType::Sequence);
    for (const auto& x : v) seq.push_back(node_of(x));
    return seq;
  }
  // NumPy scalars and arrays, os.PathLike.
  if (py::hasattr(v, "tolist")) return node_of(v.attr("tolist")());
  if (py::hasattr(v, "__fspath__")) return YAML::Node(py::str(v.attr("__fspath__")()).cast<std::string>());
  throw ConfigError("config: cannot write a " + py::str(py::type::handle_of(v).attr("__name__")).cast<std::string>() +
                    " (" + py::repr(v).cast<std::string>() + ") as YAML");
}

std::string emit(const YAML::Node& n, bool flow) {
  YAML::Emitter e;
  if (flow) e.SetMapFormat(YAML::Flow), e.SetSeqFormat(YAML::Flow);
  e << n;
  return e.c_str();
}

bool looks_like_path(const std::string& s) {
  if (s.find('\n') != std::string::npos) return false;
  if (py::module_::import("os.path").attr("isfile")(s).cast<bool>()) return true;
  auto ends = [&s](const std::string& x) {
    return s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0;
  };
  return ends(".yaml") || ends(".yml");
}

}  // namespace

std::string yaml_of(const py::handle& value) { return emit(node_of(value), true); }

void set_config(const py::object& config, RunRequest& r) {
  if (config.is_none()) return;
  if (py::isinstance<py::dict>(config)) {
    r.config_is_text = true;
    r.config_text = emit(node_of(config), false) + "\n";
    r.config_name = "<dict>";
    return;
  }
  if (py::hasattr(config, "__fspath__")) {
    r.config_path = py::str(config.attr("__fspath__")()).cast<std::string>();
    return;
  }
  if (!py::isinstance<py::str>(config))
    throw py::type_error("config: expected a path, YAML text or a dict, got " + py::repr(config).cast<std::string>() +
                         " (" + py::str(py::type::handle_of(config).attr("__name__")).cast<std::string>() + ")");
  const std::string s = config.cast<std::string>();
  if (looks_like_path(s)) {
    r.config_path = s;
  } else {
    r.config_is_text = true;
    r.config_text = s;
    r.config_name = "<string>";
  }
}

std::vector<std::string> overrides_of(const py::object& overrides) {
  std::vector<std::string> out;
  if (overrides.is_none()) return out;
  if (py::isinstance<py::dict>(overrides)) {
    for (const auto& kv : overrides.cast<py::dict>())
      out.push_back(py::str(kv.first).cast<std::string>() + "=" + yaml_of(kv.second));
    return out;
  }
  if (!py::isinstance<py::list>(overrides) && !py::isinstance<py::tuple>(overrides))
    throw py::type_error("overrides: expected a dict {\"key.path\": value} or a list of \"key.path=value\", got " +
                         py::repr(overrides).cast<std::string>());
  for (const auto& x : overrides) {
    if (!py::isinstance<py::str>(x))
      throw py::type_error("overrides: expected \"key.path=value\" strings, got " + py::repr(x).cast<std::string>());
    out.push_back(x.cast<std::string>());
  }
  return out;
}

py::array_t<double> array_of(const std::vector<Vec3d>& v) {
  py::array_t<double> a({static_cast<py::ssize_t>(v.size()), py::ssize_t(3)});
  auto w = a.mutable_unchecked<2>();
  for (size_t i = 0; i < v.size(); ++i) w(i, 0) = v[i].x, w(i, 1) = v[i].y, w(i, 2) = v[i].z;
  return a;
}

py::array_t<int32_t> array_of(const std::vector<Int3>& v) {
  py::array_t<int32_t> a({static_cast<py::ssize_t>(v.size()), py::ssize_t(3)});
  auto w = a.mutable_unchecked<2>();
  for (size_t i = 0; i < v.size(); ++i) w(i, 0) = v[i].x, w(i, 1) = v[i].y, w(i, 2) = v[i].z;
  return a;
}

std::vector<Vec3d> vec3s_of(const py::handle& obj, size_t n, const std::string& what) {
  const auto a = py::array_t<double, py::array::c_style | py::array::forcecast>::ensure(obj);
  if (!a || a.ndim() != 2 || a.shape(0) != static_cast<py::ssize_t>(n) || a.shape(1) != 3)
    throw py::value_error(what + ": expected an array of shape (" + std::to_string(n) + ", 3)");
  auto r = a.unchecked<2>();
  std::vector<Vec3d> v(n);
  for (size_t i = 0; i < n; ++i) {
    v[i] = {r(i, 0), r(i, 1), r(i, 2)};
    if (!std::isfinite(v[i].x) || !std::isfinite(v[i].y) || !std::isfinite(v[i].z))
      throw py::value_error(what + ": row " + std::to_string(i) + " is not finite");
  }
  return v;
}

namespace {

std::string type_name(const py::handle& v) { return py::str(py::type::handle_of(v).attr("__name__")); }

// "1.5 (float)": the value as Python shows it (long reprs shortened), and its type.
std::string shown(const py::handle& v) {
  std::string r = py::repr(v).cast<std::string>();
  if (r.size() > 60) r = r.substr(0, 57) + "...";
  return r + " (" + type_name(v) + ")";
}

bool is_bool(const py::handle& v) {
  if (py::isinstance<py::bool_>(v)) return true;
  const py::module_ numpy = py::module_::import("numpy");
  return py::isinstance(v, numpy.attr("bool_"));
}

[[noreturn]] void wrong_type(const std::string& what, const std::string& expected, const py::handle& v) {
  throw py::type_error(what + ": expected " + expected + ", got " + shown(v));
}

std::string range_text(int64_t lo, int64_t hi) {
  if (hi == std::numeric_limits<int64_t>::max()) return "an int >= " + std::to_string(lo);
  return "an int in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
}

}  // namespace

int64_t int_arg(const py::handle& v, const std::string& what, int64_t lo, int64_t hi) {
  // operator.index() takes ints and NumPy integers and refuses floats and strings; bool is an
  // int to Python but never meant as a count.
  if (is_bool(v) || !PyIndex_Check(v.ptr())) wrong_type(what, range_text(lo, hi), v);
  const py::object index = py::reinterpret_steal<py::object>(PyNumber_Index(v.ptr()));
  if (!index) throw py::error_already_set();
  int overflow = 0;
  const long long x = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
  if (overflow == 0 && x == -1 && PyErr_Occurred()) throw py::error_already_set();
  if (overflow != 0 || x < lo || x > hi)
    throw py::value_error(what + ": expected " + range_text(lo, hi) + ", got " + shown(v));
  return x;
}

double number_arg(const py::handle& v, const std::string& what, double lo, bool lo_open) {
  std::ostringstream expected;
  expected << "a number " << (lo_open ? "> " : ">= ") << lo;
  const bool real = !is_bool(v) && !py::isinstance<py::str>(v) &&
                    (PyFloat_Check(v.ptr()) || PyIndex_Check(v.ptr()) || py::hasattr(v, "__float__"));
  if (!real) wrong_type(what, expected.str(), v);
  const double x = PyFloat_AsDouble(v.ptr());
  if (x == -1.0 && PyErr_Occurred()) {
    PyErr_Clear();
    throw py::value_error(what + ": expected " + expected.str() + ", got " + shown(v));
  }
  if (!std::isfinite(x) || x < lo || (lo_open && x == lo))
    throw py::value_error(what + ": expected " + expected.str() + ", got " + shown(v));
  return x;
}

bool bool_arg(const py::handle& v, const std::string& what) {
  if (!is_bool(v)) wrong_type(what, "True or False", v);
  return PyObject_IsTrue(v.ptr()) == 1;
}

std::string str_arg(const py::handle& v, const std::string& what) {
  if (!py::isinstance<py::str>(v)) wrong_type(what, "a str", v);
  return v.cast<std::string>();
}

std::string path_arg(const py::handle& v, const std::string& what) {
  std::string s;
  if (py::isinstance<py::str>(v))
    s = v.cast<std::string>();
  else if (py::hasattr(v, "__fspath__") && py::isinstance<py::str>(v.attr("__fspath__")()))
    s = v.attr("__fspath__")().cast<std::string>();
  else
    wrong_type(what, "a path (a str or an os.PathLike)", v);
  if (s.empty()) throw py::value_error(what + ": an empty path");
  return s;
}

void check_callable(const py::handle& v, const std::string& what) {
  if (!v.is_none() && !PyCallable_Check(v.ptr())) wrong_type(what, "a callable or None", v);
}

int64_t int_arg(const py::handle& v, const std::string& who, const OptionSpec& spec) {
  // A rule without an upper bound: the largest int64 (messages then say "an int >= lo").
  const int64_t hi =
      spec.number.hi >= 9.2e18 ? std::numeric_limits<int64_t>::max() : static_cast<int64_t>(spec.number.hi);
  return int_arg(v, who + spec.python, static_cast<int64_t>(spec.number.lo), hi);
}

double number_arg(const py::handle& v, const std::string& who, const OptionSpec& spec) {
  return number_arg(v, who + spec.python, spec.number.lo, spec.number.lo_open);
}

std::string choice_arg(const py::handle& v, const std::string& who, const OptionSpec& spec) {
  const std::string s = str_arg(v, who + spec.python);
  try {
    if (!s.empty()) spec.checked(s, FrontEndKind::Python);
  } catch (const std::invalid_argument& e) {
    throw py::value_error(who + e.what());
  }
  return s;
}

std::string override_choice_arg(const py::handle& v, const std::string& who, const OptionSpec& spec) {
  const std::string s = str_arg(v, who + spec.python);
  try {
    if (!s.empty()) spec.checked(s, FrontEndKind::Python);
  } catch (const std::invalid_argument& e) {
    raise_config_error(who + e.what());
  }
  return s;
}

}  // namespace pairmd::python
