// The `pulling` section: a force ramp or a constant force on one particle (potentials/pulling.h).
#include "engine/config_schema.h"

namespace pairmd::config {

// `pulling`: a tethered and a pulled particle, a force ramp or a constant force (potentials/pulling.h).
void read_pulling(const Map& root, RunConfig& cfg) {
  if (!root.has("pulling")) return;
  Map m(root.ctx(), root.node("pulling"), "pulling",
        {"mode", "pulled", "tethered", "spring", "speed", "force", "direction", "anchor", "tether_spring",
         "tether_position", "start_step", "every"});
  PullSpec& p = cfg.pulling;
  const std::string mode = m.choice("mode", "", {"ramp", "constant"});
  if (mode.empty())
    m.missing("mode", "ramp (a spring whose anchor moves at constant speed) or constant (a constant force)");
  p.mode = mode == "ramp" ? PullMode::Ramp : PullMode::Constant;
  p.pulled = m.integer_required("pulled", 0, kMaxParticles - 1);
  cfg.locations["pulling.pulled"] = m.where("pulled");
  if (p.mode == PullMode::Ramp) {
    p.spring = m.number_required("spring", 0.0, kInf, true, "the spring constant k_s > 0 (energy/length^2)");
    p.speed = m.number_required("speed", -kInf, kInf, false, "the anchor's speed (length/time)");
    for (const char* k : {"force"})
      if (m.has(k)) root.ctx().fail(m.node(k), m.sub(k), "force is for mode constant; a ramp takes spring and speed");
  } else {
    p.force = m.number_required("force", -kInf, kInf, false, "the force f (energy/length) along direction");
    for (const char* k : {"spring", "speed"})
      if (m.has(k))
        root.ctx().fail(m.node(k), m.sub(k), std::string(k) + " is for mode ramp; a constant force takes force");
  }
  auto vector = [&](const char* key, Vec3d& v) {
    if (!m.has(key)) return false;
    const YAML::Node x = m.node(key);
    if (!x.IsSequence() || x.size() != 3) root.ctx().fail(x, m.sub(key), "expected [x, y, z], got " + describe(x));
    v = {m.to_number(x[0], m.sub(key), -kInf, kInf, false, "a number"),
         m.to_number(x[1], m.sub(key), -kInf, kInf, false, "a number"),
         m.to_number(x[2], m.sub(key), -kInf, kInf, false, "a number")};
    return true;
  };
  p.has_direction = vector("direction", p.direction);
  if (p.has_direction && !(dot(p.direction, p.direction) > 0))
    root.ctx().fail(m.node("direction"), m.sub("direction"), "expected a non-zero vector");
  p.has_anchor = vector("anchor", p.anchor);
  if (m.has("tethered")) {
    p.tethered = m.integer("tethered", -1, 0, kMaxParticles - 1);
    if (p.tethered == p.pulled)
      root.ctx().fail(m.node("tethered"), m.sub("tethered"), "the tethered particle must not be the pulled one");
    p.tether_spring =
        m.number_required("tether_spring", 0.0, kInf, true, "the tether's spring constant k_t > 0 (energy/length^2)");
    p.has_tether_position = vector("tether_position", p.tether_position);
    cfg.locations["pulling.tethered"] = m.where("tethered");
  } else {
    for (const char* k : {"tether_spring", "tether_position"})
      if (m.has(k))
        root.ctx().fail(m.node(k), m.sub(k), std::string(k) + " needs a tethered particle (pulling.tethered)");
    if (!p.has_direction)
      root.ctx().fail(m.self(), "pulling",
                      "without a tethered particle the direction must be given (pulling.direction)");
  }
  p.start_step = m.integer("start_step", 0, 0, kMaxInt);
  p.every = m.integer("every", 0, 0, kMaxInt);
}

}  // namespace pairmd::config
