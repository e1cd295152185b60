#include "python/module/py_convert.h"

#include <yaml-cpp/yaml.h>

#include <cmath>

#include "engine/config.h"

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
    throw ConfigError("config: expected a path, YAML text or a dict, got a " +
                      py::str(py::type::handle_of(config).attr("__name__")).cast<std::string>());
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
  if (py::isinstance<py::str>(overrides))
    throw ConfigError("overrides: expected a dict {\"key.path\": value} or a list of \"key.path=value\", got a str");
  for (const auto& x : overrides) {
    if (!py::isinstance<py::str>(x))
      throw ConfigError("overrides: expected \"key.path=value\" strings, got " + py::repr(x).cast<std::string>());
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

}  // namespace pairmd::python
