#include "io/sop_files.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include "backends/cpu_backend.h"
#include "engine/config.h"
#include "engine/pair_list_file.h"
#include "io/h5md_writer.h"

namespace pairmd {

namespace {

// The beads as a start state: positions, type CA, the model's box.
SystemState bead_state(const SopModel& m, const SopParameters& p) {
  SystemState s;
  s.box = m.box;
  s.type_names = {"CA"};
  for (const Vec3d& x : m.x) {
    s.position.push_back(x);
    s.velocity.push_back({0, 0, 0});
    s.image.push_back({0, 0, 0});
    s.type.push_back(0);
    s.mass.push_back(p.mass);
    s.charge.push_back(0.0);
  }
  return s;
}

// One H5MD frame of the beads, written by the trajectory writer.
void write_start_file(const std::string& path, const RunConfig& run_cfg, const SystemState& state) {
  std::remove(path.c_str());
  RunConfig cfg = run_cfg;
  cfg.output.trajectory = TrajectorySpec{};
  cfg.output.trajectory.every = 1;  // one frame of positions, whatever the run writes
  Model nothing;
  nothing.units = cfg.model.units;
  CpuBackend backend(nothing, state);  // the writer's context wants a backend; it reads nothing of it here
  const Topology topology;
  H5mdWriter w(path, cfg, state, topology, 3.0 * static_cast<double>(state.size()));
  const RunContext ctx{cfg, topology, backend, 0, 0};
  const Observables none;
  w.finish(ctx, Frame{state, none, 0.0});
  if (w.failed()) throw std::runtime_error("cannot write the start file '" + path + "'");
}

}  // namespace

SopFiles sop_file_names(const std::string& out_yaml) {
  std::string stem = out_yaml;
  for (const char* ext : {".yaml", ".yml"}) {
    const size_t n = std::strlen(ext);
    if (stem.size() > n && stem.compare(stem.size() - n, n, ext) == 0) stem.resize(stem.size() - n);
  }
  return {stem + ".start.h5", stem + ".backbone.pairs", stem + ".native.pairs"};
}

std::string write_sop_system(const SopModel& m, const SopParameters& p, const std::string& out_yaml,
                             const std::string& title, const std::vector<std::string>& header,
                             const std::string& source) {
  const SopFiles files = sop_file_names(out_yaml);
  std::vector<std::string> pair_header = {
      "pairmd sop-build " + source,
      "covalent bonds (the backbone, then disulfide bridges): FENE about the native distance r0",
      "i j r0 (A); particle indices from 0"};
  write_pair_table(files.backbone, pair_header, m.backbone, m.backbone_r0, 1);
  pair_header[1] = "native contacts: eps_h [(r0/r)^12 - 2 (r0/r)^6] with r0 the native distance";
  write_pair_table(files.native, pair_header, m.native, m.native_r0, 1);
  const std::string config = sop_config_text(m, p, files, title, header);
  {
    std::ofstream out(out_yaml, std::ios::trunc);
    out << config;
    out.close();
    if (!out) throw std::runtime_error("cannot write '" + out_yaml + "': " + std::strerror(errno));
  }
  write_start_file(files.start, parse_config(config, out_yaml), bead_state(m, p));
  return config;
}

}  // namespace pairmd
