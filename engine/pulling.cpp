#include "engine/pulling.h"

#include <cmath>
#include <sstream>

namespace pairmd {

namespace {

std::string where(const RunConfig& cfg, const std::string& key) {
  auto it = cfg.locations.find(key);
  return it != cfg.locations.end() ? it->second : cfg.path;
}

}  // namespace

bool pulling_needs_start(const RunConfig& cfg) {
  const PullSpec& p = cfg.pulling;
  if (p.mode == PullMode::None) return false;
  return !p.has_anchor || !p.has_direction || (p.tethered >= 0 && !p.has_tether_position);
}

PullSettings resolve_pulling(const RunConfig& cfg, const SystemState& start) {
  const PullSpec& p = cfg.pulling;
  PullSettings s;
  if (p.mode == PullMode::None) return s;
  const int64_t n = static_cast<int64_t>(start.size());
  for (const auto& [key, index] :
       {std::pair<const char*, int64_t>{"pulling.pulled", p.pulled}, {"pulling.tethered", p.tethered}})
    if (index >= n)
      throw ConfigError(where(cfg, key) + ": " + key + ": particle " + std::to_string(index) +
                        " does not exist (the system has " + std::to_string(n) + " particles, 0 to " +
                        std::to_string(n - 1) + ")");
  s.mode = p.mode;
  s.pulled = p.pulled;
  s.tethered = p.tethered;
  s.spring = p.spring;
  s.speed = p.speed;
  s.force = p.force;
  s.tether_spring = p.tether_spring;
  s.start_step = p.start_step;
  s.dt = cfg.model.integrator.dt;
  const Vec3d xp = start.unwrapped(static_cast<size_t>(p.pulled));
  s.anchor = p.has_anchor ? p.anchor : xp;
  if (p.tethered >= 0)
    s.tether = p.has_tether_position ? p.tether_position : start.unwrapped(static_cast<size_t>(p.tethered));
  Vec3d d = p.direction;
  if (!p.has_direction) d = xp - start.unwrapped(static_cast<size_t>(p.tethered));
  const double len = std::sqrt(dot(d, d));
  if (!(len > 0)) {
    std::ostringstream m;
    m << where(cfg, "pulling.pulled") << ": pulling.direction: the tethered particle " << p.tethered
      << " and the pulled particle " << p.pulled << " are at the same place; give pulling.direction";
    throw ConfigError(m.str());
  }
  s.direction = (1.0 / len) * d;
  return s;
}

PullReading read_pull(const PullSettings& pull, const SystemState& state) {
  PullReading r;
  if (!pull.active()) return r;
  const PullParams<double> p = make_pull_params<double>(pull);
  const Vec3d xp = state.unwrapped(static_cast<size_t>(pull.pulled));
  const Vec3d origin = pull.tethered >= 0 ? state.unwrapped(static_cast<size_t>(pull.tethered)) : pull.anchor;
  const Vec3d d = xp - origin;
  if (pull.mode == PullMode::Ramp) r.anchor_shift = p.step_length * static_cast<double>(state.step - pull.start_step);
  r.end_to_end = std::sqrt(dot(d, d));
  r.extension = dot(d, pull.direction);
  r.force = pull_force_along(p, xp, state.step);
  return r;
}

}  // namespace pairmd
