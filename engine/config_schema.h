// The schema layer of the config: where a node came from (file:line:column, or the --set that
// gave it), and Map, a mapping being read with its allowed keys, duplicate-key check and typed,
// range-checked values. Every section reader (engine/config_*.cpp, one file per section of
// docs/config.md) reads through it, so every message names the place and what was expected.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "base/text.h"
#include "engine/config.h"

namespace pairmd::config {

// Where a node came from, for messages: "file:line:column", or "--set a.b=v" for overrides.
struct Context {
  std::string file;
  std::vector<std::pair<std::string, std::string>> overrides;

  std::string where(const YAML::Node& node, const std::string& path) const {
    for (const auto& [key, value] : overrides)
      if (key == path || path.rfind(key + ".", 0) == 0 || path.rfind(key + "[", 0) == 0)
        return "--set " + key + "=" + value;
    std::ostringstream s;
    s << file;
    if (node.IsDefined() && node.Mark().line >= 0) s << ":" << node.Mark().line + 1 << ":" << node.Mark().column + 1;
    return s.str();
  }

  [[noreturn]] void fail(const YAML::Node& node, const std::string& path, const std::string& what) const {
    throw ConfigError(where(node, path) + ": " + (path.empty() ? "" : path + ": ") + what);
  }
};

inline std::string describe(const YAML::Node& n) {
  if (!n.IsDefined() || n.IsNull()) return "nothing";
  if (n.IsScalar()) return "'" + printable(n.Scalar()) + "'";
  if (n.IsSequence()) return "a list";
  return "a mapping";
}

inline std::string join(const std::vector<const char*>& items) {
  std::string s;
  for (const char* i : items) s += (s.empty() ? "" : ", ") + std::string(i);
  return s;
}

// "a, b and c" ("a or b" with `last` = " or "): names from a registry, for messages.
inline std::string join_names(const std::vector<std::string>& names, const char* last = " and ") {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i) s += (i == 0 ? "" : i + 1 == names.size() ? last : ", ") + names[i];
  return s;
}

template <typename Registry, typename Keep>
std::vector<std::string> names_of(const Registry& registry, Keep keep) {
  std::vector<std::string> names;
  for (const auto& entry : registry)
    if (keep(entry)) names.push_back(entry.name);
  return names;
}

template <typename Registry>
std::vector<std::string> names_of(const Registry& registry) {
  return names_of(registry, [](const auto&) { return true; });
}

// A mapping being read: knows its allowed keys (anything else is an error, reported first),
// and reads typed, range-checked values with defaults.
class Map {
 public:
  Map(const Context& ctx, YAML::Node node, std::string path, std::initializer_list<const char*> keys)
      : Map(ctx, std::move(node), std::move(path), std::vector<const char*>(keys)) {}
  Map(const Context& ctx, YAML::Node node, std::string path, const std::vector<const char*>& keys)
      : ctx_(ctx), node_(node), path_(std::move(path)) {
    if (!node_.IsMap())
      ctx_.fail(node_, path_, "expected a mapping with keys " + join(keys) + ", got " + describe(node_));
    // yaml-cpp keeps both entries of a repeated key and reads the first: a second `dt:` further
    // down would be silently ignored, so it is an error here.
    std::map<std::string, int> line_of;
    for (auto it = node_.begin(); it != node_.end(); ++it) {
      if (!it->first.IsScalar()) ctx_.fail(it->first, path_, "expected a key name, got " + describe(it->first));
      const std::string k = it->first.Scalar();
      bool ok = false;
      for (const char* a : keys) ok = ok || k == a;
      if (!ok) ctx_.fail(it->first, sub(printable(k)), "unknown key (expected one of: " + join(keys) + ")");
      const auto [first, fresh] = line_of.emplace(k, it->first.Mark().line + 1);
      if (!fresh)
        ctx_.fail(it->first, sub(k), "duplicate key (already given at line " + std::to_string(first->second) + ")");
    }
  }

  const Context& ctx() const { return ctx_; }
  const std::string& path() const { return path_; }
  std::string sub(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }
  bool has(const char* key) const { return static_cast<bool>(node_[key]); }
  YAML::Node node(const char* key) const { return node_[key]; }
  YAML::Node self() const { return node_; }
  std::string where(const char* key) const { return ctx_.where(has(key) ? node_[key] : node_, sub(key)); }

  [[noreturn]] void missing(const char* key, const std::string& what) const {
    ctx_.fail(node_, path_.empty() ? std::string(key) : path_,
              "missing required key '" + std::string(key) + "' (" + what + ")");
  }

  // A number; `lo`/`hi` bound it, strictly where `open` says so.
  double number(const char* key, double def, double lo, double hi, bool lo_open = false,
                const char* expected = nullptr) const {
    if (!has(key)) return def;
    return to_number(node_[key], sub(key), lo, hi, lo_open, expected);
  }
  double number_required(const char* key, double lo, double hi, bool lo_open, const char* expected) const {
    if (!has(key)) missing(key, expected);
    return to_number(node_[key], sub(key), lo, hi, lo_open, expected);
  }
  int64_t integer(const char* key, int64_t def, int64_t lo, int64_t hi) const {
    if (!has(key)) return def;
    return to_integer(node_[key], sub(key), lo, hi);
  }
  int64_t integer_required(const char* key, int64_t lo, int64_t hi) const {
    if (!has(key)) missing(key, range_text(lo, hi));
    return to_integer(node_[key], sub(key), lo, hi);
  }
  bool boolean(const char* key, bool def) const {
    if (!has(key)) return def;
    const YAML::Node n = node_[key];
    bool b;
    if (!n.IsScalar() || !YAML::convert<bool>::decode(n, b))
      ctx_.fail(n, sub(key), "expected true or false, got " + describe(n));
    return b;
  }
  std::string string(const char* key, const std::string& def) const {
    if (!has(key)) return def;
    const YAML::Node n = node_[key];
    if (!n.IsScalar()) ctx_.fail(n, sub(key), "expected a string, got " + describe(n));
    return n.Scalar();
  }
  std::string choice(const char* key, const std::string& def, std::initializer_list<const char*> choices) const {
    return choice(key, def, std::vector<std::string>(choices.begin(), choices.end()));
  }
  // One of the names of a registry (names_of), in its order.
  std::string choice(const char* key, const std::string& def, const std::vector<std::string>& choices) const {
    if (!has(key)) return def;
    const YAML::Node n = node_[key];
    if (n.IsScalar())
      for (const std::string& c : choices)
        if (n.Scalar() == c) return c;
    ctx_.fail(n, sub(key), "expected one of " + join_names(choices, ", ") + ", got " + describe(n));
  }

  static std::string range_text(int64_t lo, int64_t hi) {
    std::ostringstream s;
    s << "an integer";
    if (hi == std::numeric_limits<int64_t>::max())
      s << " >= " << lo;
    else
      s << " in [" << lo << ", " << hi << "]";
    return s.str();
  }

  double to_number(const YAML::Node& n, const std::string& path, double lo, double hi, bool lo_open,
                   const char* expected) const {
    std::ostringstream want;
    if (expected)
      want << expected;
    else {
      want << "a number";
      const double inf = std::numeric_limits<double>::infinity();
      if (hi == inf && lo != -inf)
        want << (lo_open ? " > " : " >= ") << lo;
      else if (lo == -inf && hi != inf)
        want << " <= " << hi;
      else if (lo != -inf)
        want << " in " << (lo_open ? "(" : "[") << lo << ", " << hi << "]";
    }
    double v;
    if (!n.IsScalar() || !YAML::convert<double>::decode(n, v) || !std::isfinite(v))
      ctx_.fail(n, path, "expected " + want.str() + ", got " + describe(n));
    if (v < lo || (lo_open && v == lo) || v > hi) ctx_.fail(n, path, "expected " + want.str() + ", got " + n.Scalar());
    return v;
  }
  int64_t to_integer(const YAML::Node& n, const std::string& path, int64_t lo, int64_t hi) const {
    double v;
    // Accept 1e6 and 1000000 alike, but not 1.5 or 'ten'.
    if (!n.IsScalar() || !YAML::convert<double>::decode(n, v) || !std::isfinite(v) || v != std::floor(v) ||
        std::fabs(v) > 9.0e15)
      ctx_.fail(n, path, "expected " + range_text(lo, hi) + ", got " + describe(n));
    const int64_t i = static_cast<int64_t>(v);
    if (i < lo || i > hi) ctx_.fail(n, path, "expected " + range_text(lo, hi) + ", got " + n.Scalar());
    return i;
  }

 private:
  const Context& ctx_;
  YAML::Node node_;
  std::string path_;
};

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int64_t kMaxInt = std::numeric_limits<int64_t>::max();

// A list under `key` (an empty one when it is absent and not required).
YAML::Node list_node(const Map& m, const char* key, bool required, const char* what);
// The index in `types` of the type named under `key` (`def` when absent; def < 0: required).
int type_index(const Map& m, const char* key, const std::vector<TypeSpec>& types, int def);

// The section readers, one per top-level key (engine/config.cpp reads them in its table's order).
void read_system(const Map& root, RunConfig& cfg);
void read_force_field(const Map& root, RunConfig& cfg);
// Parts of force_field (engine/config_bonded.cpp): the angle, dihedral and improper types, and
// the weights of the pair terms on bonded neighbours (exclusions, special_bonds).
void read_bonded_types(const Map& force_field, RunConfig& cfg);
void read_special_bonds(const Map& force_field, RunConfig& cfg);
void read_integrator(const Map& root, RunConfig& cfg);
void read_force(const Map& root, RunConfig& cfg);
void read_neighbor(const Map& root, RunConfig& cfg);
void read_output(const Map& root, RunConfig& cfg);
void read_analysis(const Map& root, RunConfig& cfg);
void read_replicas(const Map& root, RunConfig& cfg);
void read_pulling(const Map& root, RunConfig& cfg);
void read_electrostatics(const Map& root, RunConfig& cfg);
void read_barostat(const Map& root, RunConfig& cfg);
void read_minimize(const Map& root, RunConfig& cfg);

}  // namespace pairmd::config
