// The sections of what a run writes: `output` (thermo, trajectories, checkpoints) and
// `analysis` (potential maps).
#include "engine/config_schema.h"

#include "engine/map_registry.h"

namespace pairmd::config {

void read_output(const Map& root, RunConfig& cfg) {
  OutputSpec& o = cfg.output;
  if (!root.has("output")) return;
  Map m(root.ctx(), root.node("output"), "output",
        {"prefix", "thermo_every", "progress", "trajectory", "gsd", "checkpoint_every"});
  o.prefix = m.string("prefix", o.prefix);
  o.thermo_every = m.integer("thermo_every", o.thermo_every, 1, kMaxInt);
  o.progress = m.choice("progress", "auto", {"auto", "on", "off"});
  o.checkpoint_every = m.integer("checkpoint_every", 0, 0, kMaxInt);
  if (m.has("trajectory")) {
    Map t(root.ctx(), m.node("trajectory"), "output.trajectory",
          {"every", "velocities_every", "forces_every", "observables_every", "compression", "flush_seconds"});
    TrajectorySpec& tr = o.trajectory;
    tr.every = t.integer("every", 0, 0, kMaxInt);
    tr.velocities_every = t.integer("velocities_every", 0, 0, kMaxInt);
    tr.forces_every = t.integer("forces_every", 0, 0, kMaxInt);
    tr.observables_every = t.integer("observables_every", 0, 0, kMaxInt);
    tr.compression = static_cast<int>(t.integer("compression", 0, 0, 9));
    tr.flush_seconds = t.number("flush_seconds", 10.0, 0.0, kInf);
  }
  if (m.has("gsd")) {
    Map g(root.ctx(), m.node("gsd"), "output.gsd", {"every", "velocities", "flush_seconds"});
    o.gsd.every = g.integer_required("every", 1, kMaxInt);
    o.gsd.velocities = g.boolean("velocities", false);
    o.gsd.flush_seconds = g.number("flush_seconds", 10.0, 0.0, kInf);
  }
}

void read_analysis(const Map& root, RunConfig& cfg) {
  if (!root.has("analysis")) return;
  Map a(root.ctx(), root.node("analysis"), "analysis", {"potential_map"});
  if (!a.has("potential_map")) return;
  Map m(root.ctx(), a.node("potential_map"), "analysis.potential_map",
        {"every", "spacing", "region", "padding", "kernel", "min_distance", "method", "boundary", "msm_cutoff",
         "msm_grid_spacing", "msm_order", "error_samples"});
  PotentialMapSpec& spec = cfg.potential_map;
  MapSettings& p = spec.settings;
  spec.every = m.integer_required("every", 1, kMaxInt);
  p.spacing = m.number_required("spacing", 0.0, kInf, true, "a lattice spacing > 0");
  cfg.locations["analysis.potential_map.spacing"] = m.where("spacing");
  p.region = m.choice("region", "box", map_region_names());
  p.padding = m.number("padding", 5.0, 0.0, kInf);
  p.kernel = m.choice("kernel", "auto", map_kernel_names());
  p.min_distance = m.number("min_distance", 0.0, 0.0, kInf);
  p.method = m.choice("method", "exact", map_method_names());
  p.boundary = m.choice("boundary", "open", map_boundary_names());
  p.msm_cutoff = m.number("msm_cutoff", 0.0, 0.0, kInf);
  p.msm_grid_spacing = m.number("msm_grid_spacing", 0.0, 0.0, kInf);
  p.msm_order = static_cast<int>(m.integer("msm_order", 6, 4, 6));
  if (p.msm_order == 5)
    root.ctx().fail(m.node("msm_order"), m.sub("msm_order"), "expected 4 (cubic) or 6 (quintic), got 5");
  p.error_samples = static_cast<int>(m.integer("error_samples", 256, 0, 1000000));
  if (p.boundary == "periodic" && !cfg.system.periodic)
    root.ctx().fail(m.node("boundary"), m.sub("boundary"),
                    "periodic needs a periodic system (system.boundary is open)");
  if (p.boundary == "periodic" && p.method == "exact")
    root.ctx().fail(m.node(m.has("method") ? "method" : "boundary"), m.sub("method"),
                    "the exact sum counts no periodic images; boundary periodic needs method msm or auto");
}

}  // namespace pairmd::config
