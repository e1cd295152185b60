#include "backends/backend.h"

#include <algorithm>
#include <cmath>

#include "backends/cpu_backend.h"
#include "base/host_threads.h"

namespace pairmd {

#ifdef PAIRMD_HAVE_CUDA
// Defined in kernels/ (compiled by nvcc); declared here so the engine needs no CUDA headers.
std::unique_ptr<Backend> make_cuda_backend(const Model& model, const SystemState& initial);
bool cuda_device_present(std::string* reason);
bool cuda_device_free_memory(double* free_bytes, double* total_bytes);
std::pair<int, int> cuda_select_device(int local_rank);
#endif

void Backend::move_to(const std::vector<Vec3d>& position, const std::vector<Int3>& image) {
  SystemState s;
  get_state(s);
  s.position = position;
  s.image = image;
  set_state(s);
}

double pairs_per_particle(const PairTerm& term, double skin, const SystemSize& size) {
  const double n = static_cast<double>(size.particles);
  if (n <= 1) return 0;
  const double rl = term.max_cutoff() + skin;
  const double density = size.volume > 0 ? n / size.volume : 1.0;
  // (2 pi / 3) rl^3 rho partners j > i at the mean density; bonded systems have more of their
  // own chain nearby than the mean says.
  const double p = (2.0 * M_PI / 3.0) * rl * rl * rl * density + (size.bonds > 0 ? 5.0 : 0.0);
  return std::min(p, 0.5 * (n - 1));
}

namespace {

template <typename Terms, typename KindOf>
size_t kinds_in_use(const Terms& terms, KindOf kind_of) {
  std::vector<int> kinds;
  for (const auto& t : terms) {
    const int k = static_cast<int>(kind_of(t));
    if (std::find(kinds.begin(), kinds.end(), k) == kinds.end()) kinds.push_back(k);
  }
  return kinds.size();
}

}  // namespace

std::vector<EnergyGroup> energy_groups(const Model& model) {
  const ForceField& ff = model.force_field;
  const Topology& t = model.topology;
  std::vector<EnergyGroup> g(ff.pair_terms.size(), EnergyGroup::Pair);
  auto add = [&](size_t n, EnergyGroup group) { g.insert(g.end(), n, group); };
  add(kinds_in_use(t.bonds, [&](const Bond& b) { return ff.bond_types.at(b.type).kind; }), EnergyGroup::Bond);
  add(ff.pair_lists.size(), EnergyGroup::PairList);
  add(kinds_in_use(t.angles, [&](const Angle& a) { return ff.angle_types.at(a.type).kind; }), EnergyGroup::Angle);
  add(kinds_in_use(t.dihedrals, [&](const Dihedral& d) { return ff.dihedral_types.at(d.type).kind; }),
      EnergyGroup::Dihedral);
  add(kinds_in_use(t.impropers, [&](const Dihedral& d) { return ff.improper_types.at(d.type).kind; }),
      EnergyGroup::Improper);
  if (model.pulling.active()) g.push_back(EnergyGroup::Pulling);
  return g;
}

MemoryEstimate estimate_backend_memory(const std::string& backend, const Model& model, const SystemSize& size) {
  MemoryEstimate e;
  const double n = static_cast<double>(size.particles), bonds = static_cast<double>(size.bonds);
  const ForceField& ff = model.force_field;
  const double skin = model.neighbor.skin;
  double pairs = 0;
  for (const PairTerm& t : ff.pair_terms) pairs += pairs_per_particle(t, skin, size);
  // Excluded partners per particle: 2 per bond (1-2), about 3x that with 1-3 pairs too, 5x with 1-4.
  const int order = ff.special.max_order();
  const double excluded = order == 0 ? 0.0 : (order == 1 ? 2.0 : (order == 2 ? 6.0 : 10.0));
  const double per_bond = 12.0 + 4.0 * excluded;
  if (backend == "cuda") {
    // The default strategy (docs/gpu.md): ~220 bytes per particle (positions twice, velocities,
    // images, tags and ranks, cell order, forces), and per list entry 22 bytes (j, i as a byte
    // and its chunk's share, the slot, the column place and entry), the list allocated for 1.3
    // times the estimated pairs plus 8 per particle (room for the claims' pads too). Measured:
    // 1,619-1,627 bytes per particle on the LJ benchmark (docs/benchmarks.md, issue #12's sixth
    // round).
    e.device_bytes = n * (220.0 + 22.0 * (1.3 * pairs + 8.0)) + bonds * 48.0;
    e.host_bytes = n * 512.0 + bonds * per_bond;
    return e;
  }
  // CpuBackend: state (80 B), forces, 1/m, per-thread force buffers, exclusion rows.
  const double threads = host_threads_for_particles(static_cast<size_t>(std::max<int64_t>(0, size.particles)));
  e.host_bytes = n * (80.0 + 24.0 + 8.0 + 24.0 * threads + 24.0) + bonds * per_bond;
  for (const PairTerm& t : ff.pair_terms) {
    // Room for density fluctuations and clustering during the run: the list grows with them.
    const double p = std::min(1.5 * pairs_per_particle(t, skin, size), 0.5 * std::max(n - 1, 0.0));
    // VerletList: offsets, row starts, positions at build and in cell order, the cell list,
    // and the list itself twice (per-thread rows and the final rows).
    e.host_bytes += n * (4.0 + 4.0 + 24.0 + 24.0 + 12.0 + 8.0 * p);
    // The cell grid's stencils (~0.9 kB per cell), at most about 2 cells per particle.
    const double rl = t.max_cutoff() + skin;
    const double cells = std::min(size.volume > 0 ? size.volume / (rl * rl * rl) : n, 2.0 * n + 64.0);
    e.host_bytes += cells * 900.0;
    // Row offsets are int: a list of 2^31 pairs or more cannot be held at all.
    if (n * p / 1.5 >= 2147483647.0 && e.impossible.empty())
      e.impossible = "the CPU backend's neighbour list of pair term " + std::string(pair_kind_name(t.kind)) +
                     " would hold about " + std::to_string(static_cast<long long>(n * p / 1.5)) +
                     " pairs, more than the 2^31 it can index";
  }
  return e;
}

bool cuda_device_memory(double* free_bytes, double* total_bytes) {
#ifdef PAIRMD_HAVE_CUDA
  return cuda_device_free_memory(free_bytes, total_bytes);
#else
  (void)free_bytes;
  (void)total_bytes;
  return false;
#endif
}

std::pair<int, int> select_cuda_device(int local_rank) {
#ifdef PAIRMD_HAVE_CUDA
  return cuda_select_device(local_rank);
#else
  (void)local_rank;
  return {-1, 0};
#endif
}

bool cuda_available(std::string* reason) {
#ifdef PAIRMD_HAVE_CUDA
  return cuda_device_present(reason);
#else
  if (reason) *reason = "pairmd was built without CUDA";
  return false;
#endif
}

std::unique_ptr<Backend> make_backend(const std::string& name, const Model& model, const SystemState& initial,
                                      std::string* why) {
  std::string reason;
  if (name == "cpu") {
    if (why) *why = "cpu (asked for)";
    return std::make_unique<CpuBackend>(model, initial);
  }
  if (name != "cuda" && name != "auto") throw std::runtime_error("unknown backend '" + name + "' (cpu, cuda, auto)");
  const bool gpu = cuda_available(&reason);
  if (name == "cuda" && !gpu) throw std::runtime_error("backend cuda asked for, but " + reason);
#ifdef PAIRMD_HAVE_CUDA
  if (gpu) {
    if (why) *why = name == "cuda" ? "cuda (asked for; " + reason + ")" : "cuda (auto: " + reason + ")";
    return make_cuda_backend(model, initial);
  }
#endif
  if (why) *why = "cpu (auto: " + reason + ")";
  return std::make_unique<CpuBackend>(model, initial);
}

}  // namespace pairmd
