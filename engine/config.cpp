#include "engine/config.h"

#include <sys/stat.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "engine/config_schema.h"

namespace pairmd {

namespace {

using config::Context;
using config::Map;

// yaml-cpp shares an aliased node (*name) instead of copying it, so a few lines of anchors can
// stand for billions of nodes, and every walk over the document would visit them all. Documents
// are walked once first, counting nodes as aliases expand them: a document without aliases has
// at most one node per byte of its text; aliases may add a million.
constexpr size_t kAliasNodes = 1000000;

// Counts the nodes of `n` (aliases expanded) against `left`; false when they run out.
bool count_nodes(const YAML::Node& n, size_t& left) {
  if (left == 0) return false;
  --left;
  if (n.IsSequence())
    for (const YAML::Node& item : n)
      if (!count_nodes(item, left)) return false;
  if (n.IsMap())
    for (auto it = n.begin(); it != n.end(); ++it)
      if (!count_nodes(it->first, left) || !count_nodes(it->second, left)) return false;
  return true;
}

// The message when `root` (of `bytes` of text) expands past the bound: "" when it does not, else
// "LINE:COLUMN: KEY: ..." of the top-level key where the count ran out (`what`: "document").
std::string alias_expansion(const YAML::Node& root, size_t bytes, const char* what) {
  const size_t limit = bytes + kAliasNodes;
  size_t left = limit;
  std::ostringstream s;
  const std::string why = std::string("YAML aliases (*name) expand the ") + what + " past " + std::to_string(limit) +
                          " nodes, more than a config has; pairmd refuses it (an alias bomb?)";
  if (!root.IsMap()) {
    if (count_nodes(root, left)) return "";
    s << root.Mark().line + 1 << ":" << root.Mark().column + 1 << ": " << why;
    return s.str();
  }
  for (auto it = root.begin(); it != root.end(); ++it) {
    if (count_nodes(it->first, left) && count_nodes(it->second, left)) continue;
    s << it->first.Mark().line + 1 << ":" << it->first.Mark().column + 1 << ": "
      << (it->first.IsScalar() ? printable(it->first.Scalar()) + ": " : "") << why;
    return s.str();
  }
  return "";
}

// Applies "a.b.c=value" to the document: maps are created on the way, list items are named by
// their index ("force_field.pair.0.cutoff=3").
void apply_override(YAML::Node& root, const std::string& spec, RunConfig& cfg) {
  const size_t eq = spec.find('=');
  if (eq == std::string::npos || eq == 0) throw ConfigError("--set " + spec + ": expected key.path=value");
  const std::string path = spec.substr(0, eq), value = spec.substr(eq + 1);
  YAML::Node parsed;
  try {
    parsed = YAML::Load(value);
  } catch (const YAML::Exception& e) {
    throw ConfigError("--set " + spec + ": the value is not valid YAML: " + printable(e.msg));
  }
  size_t left = value.size() + kAliasNodes;
  if (!count_nodes(parsed, left))
    throw ConfigError("--set " + spec + ": YAML aliases (*name) expand the value past " +
                      std::to_string(value.size() + kAliasNodes) +
                      " nodes, more than a config has; pairmd refuses it (an alias bomb?)");
  std::vector<std::string> parts;
  std::stringstream ss(path);
  for (std::string p; std::getline(ss, p, '.');) {
    if (p.empty()) throw ConfigError("--set " + spec + ": empty component in key path");
    parts.push_back(p);
  }
  YAML::Node cur;
  cur.reset(root);
  std::string display;  // the config path in the form messages use: force_field.pair[0].cutoff
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::string& p = parts[i];
    const bool last = i + 1 == parts.size();
    if (cur.IsSequence()) {
      char* end = nullptr;
      const long idx = std::strtol(p.c_str(), &end, 10);
      const std::string here = display.empty() ? "the document" : display;
      if (*end)
        throw ConfigError("--set " + spec + ": " + here + " is a list, not a mapping: it has no key '" + printable(p) +
                          "'");
      if (idx < 0 || static_cast<size_t>(idx) >= cur.size())
        throw ConfigError("--set " + spec + ": " + here + " is a list of " + std::to_string(cur.size()) +
                          " items: it has no item " + p);
      display += "[" + p + "]";
      if (last)
        cur[idx] = parsed;
      else {
        YAML::Node next = cur[idx];
        cur.reset(next);
      }
    } else {
      if (cur.IsDefined() && !cur.IsNull() && !cur.IsMap())
        throw ConfigError("--set " + spec + ": " + (display.empty() ? "the document" : display) + " is " +
                          config::describe(cur) + ", not a mapping: it has no key '" + printable(p) + "'");
      display += (display.empty() ? "" : ".") + p;
      if (last)
        cur[p] = parsed;
      else {
        YAML::Node next = cur[p];
        cur.reset(next);
      }
    }
  }
  cfg.overrides.emplace_back(display, value);
  cfg.override_specs.push_back(path + "=" + value);
}

// Compact text of a node for difference lines: scalars as they are, the rest as flow YAML.
std::string brief(const YAML::Node& n) {
  if (!n.IsDefined() || n.IsNull()) return "(not set)";
  if (n.IsScalar()) return n.Scalar();
  YAML::Emitter e;
  e << YAML::Flow << n;
  return e.c_str();
}

void differences(const YAML::Node& a, const YAML::Node& b, const std::string& path, std::vector<std::string>& out) {
  const bool a_set = a.IsDefined() && !a.IsNull(), b_set = b.IsDefined() && !b.IsNull();
  if (a_set && b_set && a.IsMap() && b.IsMap()) {
    std::vector<std::string> keys;
    for (const YAML::Node* m : {&a, &b})
      for (auto it = m->begin(); it != m->end(); ++it) {
        const std::string k = it->first.Scalar();
        if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
      }
    for (const std::string& k : keys) differences(a[k], b[k], path.empty() ? k : path + "." + k, out);
    return;
  }
  if (a_set && b_set && a.IsSequence() && b.IsSequence() && a.size() == b.size()) {
    for (size_t i = 0; i < a.size(); ++i) differences(a[i], b[i], path + "[" + std::to_string(i) + "]", out);
    return;
  }
  const std::string x = brief(a), y = brief(b);
  if (x != y) out.push_back((path.empty() ? std::string("(document)") : path) + ": " + x + " -> " + y);
}

YAML::Node document(const std::string& text, const std::vector<std::string>& overrides) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw ConfigError(std::string("YAML syntax error: ") + printable(e.msg));
  }
  const std::string bomb = alias_expansion(root, text.size(), "document");
  if (!bomb.empty()) throw ConfigError("line " + bomb);
  if (!root.IsDefined() || root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
  RunConfig scratch;
  for (const std::string& o : overrides) apply_override(root, o, scratch);
  return root;
}

// yaml-cpp 0.7 accepts a quoted string that is never closed: it runs to the end of the file and
// swallows every key after it (`title: "abc` leaves nothing but a title). Each quoted scalar of
// the document (keys too) must find its closing quote in the text.
void check_quotes_closed(const YAML::Node& node, const std::string& text, const std::string& name) {
  auto check = [&](const YAML::Node& n) {
    if (!n.IsScalar() || n.Mark().pos < 0) return;
    size_t p = static_cast<size_t>(n.Mark().pos);
    // Skip a tag or anchor in front of the value (`!!str "abc`, `&a 'x`).
    while (p < text.size() && (text[p] == '!' || text[p] == '&')) {
      while (p < text.size() && text[p] != ' ' && text[p] != '\t' && text[p] != '\n') ++p;
      while (p < text.size() && (text[p] == ' ' || text[p] == '\t')) ++p;
    }
    if (p >= text.size() || (text[p] != '"' && text[p] != '\'')) return;
    const char q = text[p];
    for (size_t k = p + 1; k < text.size(); ++k) {
      if (q == '"' && text[k] == '\\') {
        ++k;  // an escape: \" does not close the string
      } else if (text[k] == q) {
        if (q == '\'' && k + 1 < text.size() && text[k + 1] == '\'') {
          ++k;  // '' is a quote inside a single-quoted string
          continue;
        }
        return;
      }
    }
    std::ostringstream s;
    s << name << ":" << n.Mark().line + 1 << ":" << n.Mark().column + 1 << ": YAML syntax error: the string opened by "
      << (q == '"' ? "\"" : "'") << " here is never closed";
    throw ConfigError(s.str());
  };
  if (node.IsScalar()) check(node);
  if (node.IsSequence())
    for (const YAML::Node& item : node) check_quotes_closed(item, text, name);
  if (node.IsMap())
    for (auto it = node.begin(); it != node.end(); ++it) {
      check(it->first);
      check_quotes_closed(it->second, text, name);
    }
}

// The sections of the top level, in reading order (the integrator's temperature and the system's
// types come before the terms that use them). A section's reader and its spec belong to its
// feature; this table is the one place that names them all.
struct Section {
  const char* key;
  void (*read)(const Map& root, RunConfig& cfg);
};
constexpr Section kSections[] = {
    {"integrator", config::read_integrator},   {"system", config::read_system},
    {"force_field", config::read_force_field}, {"force", config::read_force},
    {"neighbor", config::read_neighbor},       {"output", config::read_output},
    {"analysis", config::read_analysis},       {"replicas", config::read_replicas},
    {"pulling", config::read_pulling},         {"minimize", config::read_minimize},
    {"barostat", config::read_barostat},       {"electrostatics", config::read_electrostatics},
};

}  // namespace

RunConfig parse_config(const std::string& text, const std::string& name, const std::vector<std::string>& overrides) {
  RunConfig cfg;
  cfg.path = name;
  cfg.text = text;
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    std::ostringstream s;
    s << name << ":" << e.mark.line + 1 << ":" << e.mark.column + 1 << ": YAML syntax error: " << printable(e.msg);
    throw ConfigError(s.str());
  }
  const std::string bomb = alias_expansion(root, text.size(), "document");
  if (!bomb.empty()) throw ConfigError(name + ":" + bomb);
  check_quotes_closed(root, text, name);
  if (!root.IsDefined() || root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
  for (const std::string& o : overrides) apply_override(root, o, cfg);

  Context ctx{name, cfg.overrides};
  try {
    std::vector<const char*> keys = {"title", "units", "backend", "steps"};
    for (const Section& s : kSections) keys.push_back(s.key);
    Map m(ctx, root, "", keys);
    cfg.title = m.string("title", "");
    cfg.model.units = m.choice("units", "lj", unit_system_names()) == "lj" ? Units::lj() : Units::real();
    cfg.backend = m.choice("backend", "auto", backend_names());
    cfg.steps = m.integer("steps", 0, 0, config::kMaxInt);
    for (const Section& s : kSections) s.read(m, cfg);
    const ForceField& ff = cfg.model.force_field;
    if (ff.pair_terms.empty() && ff.bond_types.empty() && ff.pair_lists.empty() && ff.angle_types.empty() &&
        ff.dihedral_types.empty() && ff.improper_types.empty())
      ctx.fail(m.node("force_field"), "force_field", "expected at least one pair term, bond type or pair list");
  } catch (const YAML::Exception& e) {
    // yaml-cpp conversion errors that slipped past the checks above still get a location.
    std::ostringstream s;
    s << name << ":" << e.mark.line + 1 << ":" << e.mark.column + 1 << ": " << printable(e.msg);
    throw ConfigError(s.str());
  }
  return cfg;
}

std::string override_spec(const std::string& spec) {
  const size_t eq = spec.find('=');
  std::string key = spec.substr(0, eq), rest = eq == std::string::npos ? "" : spec.substr(eq);
  std::string raw;
  for (char c : key) {
    if (c == '[')
      raw += '.';
    else if (c != ']')
      raw += c;
  }
  return raw + rest;
}

std::vector<std::string> merge_overrides(const std::vector<std::string>& earlier,
                                         const std::vector<std::string>& later) {
  auto key = [](const std::string& spec) {
    const std::string s = override_spec(spec);
    return s.substr(0, s.find('='));
  };
  std::vector<std::string> out;
  for (const std::string& e : earlier) {
    bool replaced = false;
    for (const std::string& l : later) replaced = replaced || key(l) == key(e);
    if (!replaced) out.push_back(override_spec(e));
  }
  for (const std::string& l : later) out.push_back(override_spec(l));
  return out;
}

std::vector<std::string> config_differences(const std::string& text_a, const std::vector<std::string>& overrides_a,
                                            const std::string& text_b, const std::vector<std::string>& overrides_b,
                                            size_t max_lines) {
  std::vector<std::string> out;
  differences(document(text_a, overrides_a), document(text_b, overrides_b), "", out);
  if (out.size() > max_lines) {
    const size_t more = out.size() - max_lines;
    out.resize(max_lines);
    out.push_back("... and " + std::to_string(more) + " more");
  }
  return out;
}

RunConfig load_config(const std::string& path, const std::vector<std::string>& overrides) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0)
    throw ConfigError("cannot open config file '" + path + "': " + std::strerror(errno));
  // A directory opens and reads as empty on Linux, which would read as a config with no keys.
  if (S_ISDIR(st.st_mode)) throw ConfigError("cannot read config file '" + path + "': it is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError("cannot open config file '" + path + "': " + std::strerror(errno));
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw ConfigError("cannot read config file '" + path + "': " + std::strerror(errno));
  return parse_config(ss.str(), path, overrides);
}

}  // namespace pairmd
