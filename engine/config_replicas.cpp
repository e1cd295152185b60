// The `replicas` section: K replicas, independent or temperature replica exchange over a
// ladder (docs/replicas.md).
#include "engine/config_schema.h"

#include "engine/ladder.h"

namespace pairmd::config {

void read_replicas(const Map& root, RunConfig& cfg) {
  if (!root.has("replicas")) return;
  Map m(root.ctx(), root.node("replicas"), "replicas",
        {"count", "mode", "temperatures", "min_temperature", "max_temperature", "exchange_every", "seed"});
  ReplicaSpec& r = cfg.replicas;
  cfg.locations["replicas.count"] = m.where(m.has("count") ? "count" : "temperatures");
  r.exchange = m.choice("mode", "exchange", {"independent", "exchange"}) == "exchange";
  r.exchange_every = m.integer("exchange_every", 1000, 1, kMaxInt);
  r.seed = static_cast<uint64_t>(m.integer("seed", 0, 0, kMaxInt));
  const bool listed = m.has("temperatures"), range = m.has("min_temperature") || m.has("max_temperature");
  if (!r.exchange) {
    for (const char* k : {"temperatures", "min_temperature", "max_temperature"})
      if (m.has(k))
        m.ctx().fail(m.node(k), m.sub(k),
                     "independent replicas all run at integrator.temperature (a ladder needs mode: exchange)");
    r.count = static_cast<int>(m.integer_required("count", 1, 1 << 20));
    return;
  }
  if (cfg.model.integrator.kind == IntegratorKind::VelocityVerlet)
    m.ctx().fail(m.has("mode") ? m.node("mode") : m.self(), m.sub("mode"),
                 "temperature replica exchange needs a thermostat (integrator.kind langevin or brownian), not NVE");
  if (listed && range)
    m.ctx().fail(
        m.node("temperatures"), m.sub("temperatures"),
        "give either temperatures (a list) or min_temperature and max_temperature (a geometric ladder), not both");
  if (listed) {
    const YAML::Node t = m.node("temperatures");
    if (!t.IsSequence() || t.size() == 0)
      m.ctx().fail(t, m.sub("temperatures"), "expected a list of temperatures in increasing order, got " + describe(t));
    for (size_t k = 0; k < t.size(); ++k) {
      const std::string path = m.sub("temperatures") + "[" + std::to_string(k) + "]";
      const double v = m.to_number(t[k], path, 0.0, kInf, true, nullptr);
      if (k > 0 && !(v > r.temperatures.back()))
        m.ctx().fail(t[k], path,
                     "the ladder must increase: " + t[k].Scalar() + " is not above temperatures[" +
                         std::to_string(k - 1) + "] = " + t[k - 1].Scalar());
      r.temperatures.push_back(v);
    }
    r.count = static_cast<int>(m.integer("count", static_cast<int64_t>(t.size()), 1, 1 << 20));
    if (r.count != static_cast<int>(t.size()))
      m.ctx().fail(m.node("count"), m.sub("count"),
                   "count is " + std::to_string(r.count) + " but temperatures lists " + std::to_string(t.size()));
    return;
  }
  if (!m.has("min_temperature") || !m.has("max_temperature"))
    m.missing(m.has("min_temperature") ? "max_temperature" : "min_temperature",
              "a ladder: temperatures [T0, T1, ...] or min_temperature and max_temperature (geometric)");
  r.count = static_cast<int>(m.integer_required("count", 1, 1 << 20));
  const double lo = m.number_required("min_temperature", 0.0, kInf, true, nullptr);
  const double hi = m.number("max_temperature", lo, 0.0, kInf, true);
  if (r.count > 1 && !(hi > lo))
    m.ctx().fail(m.node("max_temperature"), m.sub("max_temperature"),
                 "expected a number above min_temperature (" + m.node("min_temperature").Scalar() + "), got " +
                     m.node("max_temperature").Scalar());
  r.temperatures = geometric_ladder(lo, hi, r.count);
  r.geometric = true;
}

}  // namespace pairmd::config
