#include "engine/config_schema.h"

namespace pairmd::config {

YAML::Node list_node(const Map& m, const char* key, bool required, const char* what) {
  if (!m.has(key)) {
    if (required) m.missing(key, what);
    return YAML::Node(YAML::NodeType::Sequence);
  }
  YAML::Node n = m.node(key);
  if (!n.IsSequence()) m.ctx().fail(n, m.sub(key), std::string("expected a list (") + what + "), got " + describe(n));
  return n;
}

int type_index(const Map& m, const char* key, const std::vector<TypeSpec>& types, int def) {
  if (!m.has(key)) {
    if (def >= 0) return def;
    m.missing(key, "a particle type name");
  }
  const std::string name = m.string(key, "");
  for (size_t i = 0; i < types.size(); ++i)
    if (types[i].name == name) return static_cast<int>(i);
  std::string names;
  for (const TypeSpec& t : types) names += (names.empty() ? "" : ", ") + t.name;
  m.ctx().fail(m.node(key), m.sub(key), "unknown particle type '" + name + "' (system.types has: " + names + ")");
}

}  // namespace pairmd::config
