// The CUDA backend, set-up: the device side of a run (kernels/cuda_backend.cuh): a parameter
// table, a pair list and the exclusions (a table by tag) per pair term, bond terms and pair
// lists as static lists by tag, and the state.
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "kernels/cuda_backend.cuh"

namespace pairmd {

namespace {

// A whole number from the environment variable `name`, for measurements: in [lo, hi] and, with
// `ok`, one it accepts (0 where the variable is not set); anything else is an error naming the
// variable, the value and what was `expected`.
int env_int(const char* name, int lo, int hi, const char* expected, bool (*ok)(int) = nullptr) {
  const char* e = std::getenv(name);
  if (!e) return 0;
  char* end = nullptr;
  const long x = std::strtol(e, &end, 10);
  if (end == e || *end != '\0' || x < lo || x > hi || (ok && !ok(static_cast<int>(x))))
    throw std::runtime_error(std::string(name) + " must be " + expected + ", not '" + e + "'");
  return static_cast<int>(x);
}

// all_pairs' threads per particle, a power of two from 4 to 32: about 1,024 threads per
// multiprocessor in all, so that a small system alone splits each particle's partners over a
// warp (500 particles: 16 each) and an ensemble of many keeps a few lanes per particle.
// PAIRMD_ALL_PAIRS_LANES (a power of two, 1 to 32) fixes it, for measurements.
int all_pairs_lanes(int n, int sms) {
  if (const int v = env_int("PAIRMD_ALL_PAIRS_LANES", 1, 32, "a power of two from 1 to 32",
                            [](int x) { return (x & (x - 1)) == 0; }))
    return v;
  const long long want = (1024LL * sms + n - 1) / std::max(n, 1);
  int lanes = 4;
  while (lanes < 32 && lanes < want) lanes *= 2;
  return lanes;
}

// The list search's shape (neighbor/gpu_pair_list.cuh, SearchShape), chosen by the search unless
// PAIRMD_SEARCH_PARTS (4 or 16) or PAIRMD_SEARCH_SPLITS (blocks per cell) fix it, for measurements.
SearchShape search_shape_from_environment() {
  SearchShape shape;
  shape.parts = env_int("PAIRMD_SEARCH_PARTS", 4, 16, "4 or 16", [](int x) { return x == 4 || x == 16; });
  shape.splits = env_int("PAIRMD_SEARCH_SPLITS", 1, 64, "a whole number from 1 to 64");
  return shape;
}

}  // namespace

CudaBackend::CudaBackend(const Model& model, const SystemState& initial, Strategy strategy, int systems)
    : model_(model), strategy_(strategy), systems_(systems) {
  try {
    construct(initial);
  } catch (...) {  // a bad start state, no memory: the destructor will not run, so free here
    release();
    throw;
  }
}

void CudaBackend::construct(const SystemState& initial) {
  PAIRMD_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  // Mapped: with unified addressing the same pointer serves the device.
  PAIRMD_CUDA_CHECK(cudaHostAlloc(&host_state_, kChunksInFlight * sizeof(ChunkState), cudaHostAllocMapped));
  for (cudaEvent_t& e : chunk_done_) PAIRMD_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  state_.resize(1);
  sums_.resize(8);
  // Graphs need launches that neither synchronise nor change between chunks.
  use_graphs_ = !sync_launches();
  int device = 0, sms = 1;
  PAIRMD_CUDA_CHECK(cudaGetDevice(&device));
  PAIRMD_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  stride_blocks_ = 8 * sms;
  fused_wave_blocks_ = fused_blocks_per_sm(model_.barostat.active()) * sms;

  n_ = static_cast<int>(initial.size());
  if (systems_ < 1 || n_ % systems_ != 0)
    throw std::logic_error("CudaBackend: " + std::to_string(n_) + " particles are not " + std::to_string(systems_) +
                           " systems of equal size");
  system_size_ = std::max(1, n_ / systems_);
  c_ = make_step_constants<float>(model_.integrator, model_.units.kB, model_.units.force_to_accel);
  system_params_.assign(systems_, SystemParams{c_.kT_mvv, c_.seed});
  device_params_.resize(systems_);
  const float skin = static_cast<float>(model_.neighbor.skin);
  half_skin_sq_ = 0.25f * skin * skin;
  if (!has_lists()) {
    // all_pairs: no list, so nothing is ever due to be rebuilt, and the chunks run their longest.
    if (system_size_ > kAllPairsLargestSystem)
      throw std::runtime_error("force.strategy " + std::string(strategy_name(strategy_)) +
                               " evaluates every pair of a system at every step; a system of " +
                               std::to_string(system_size_) + " particles is above its limit of " +
                               std::to_string(kAllPairsLargestSystem) + " (use a strategy with a pair list)");
    half_skin_sq_ = INFINITY;
    rebuild_interval_ = 1e18;
    all_pairs_lanes_ = all_pairs_lanes(n_, sms);
  }
  pull_ = make_pull_params<float>(model_.pulling);
  make_pair_terms(initial);
  make_bond_terms();
  make_bonded_terms();
  setup_barostat(initial);
  set_state(initial);
}

// The barostat's stage (kernels/box_update.cuh): one box, so one system.
void CudaBackend::setup_barostat(const SystemState& initial) {
  barostat_ = model_.barostat.active();
  if (!barostat_) return;
  if (systems_ > 1)
    throw std::runtime_error(
        "a barostat in an ensemble of " + std::to_string(systems_) +
        " systems is not supported: the systems of a GPU ensemble share one box, and each would need its own "
        "(run the replicas under mpirun, one process each, or with backend: cpu)");
  if (!initial.box.periodic) throw std::runtime_error("a barostat needs a periodic box");
  stage_.settings = model_.barostat;
  stage_.force_to_accel = model_.units.force_to_accel;
  stage_.dt = model_.integrator.dt;
  double cutoff = 0, min_half = 0;
  for (const PairTerm& t : model_.force_field.pair_terms) cutoff = std::max(cutoff, t.max_cutoff());
  if (!model_.force_field.pair_terms.empty()) min_half = cutoff + model_.neighbor.skin;
  stage_.list_cutoff = static_cast<float>(cutoff);
  // all_pairs has no list: an infinite skin keeps its rebuild test from ever tripping, also
  // under scaling (rebuild_threshold_sq, box_update.cuh).
  stage_.list_skin = has_lists() ? static_cast<float>(model_.neighbor.skin) : INFINITY;
  // As the CPU backend (CpuBackend::check_box_size): half the smallest edge at least the largest
  // cutoff plus the skin, and max_step_displacement.
  stage_.min_half_edge = static_cast<float>(std::max(min_half, model_.max_step_displacement));
  box_sums_.resize(static_cast<size_t>(kBoxGroups) * kBoxWords);
  rescale_ticket_.resize(1);
}

namespace {

// A term's exclusions (pair_term_exclusions) as a fixed-width table by tag, -1 where a row is
// shorter; returns the width (0: nothing excluded, no table).
int upload_exclusions(const std::vector<std::vector<int>>& excl, DeviceBuffer<int>& out) {
  int width = 0;
  for (const auto& e : excl) width = std::max(width, static_cast<int>(e.size()));
  if (width > 0) {
    std::vector<int> table(excl.size() * static_cast<size_t>(width), -1);
    for (size_t i = 0; i < excl.size(); ++i)
      for (size_t k = 0; k < excl[i].size(); ++k) table[i * width + k] = excl[i][k];
    out.upload(table);
  }
  return width;
}

}  // namespace

// A parameter table and a list per pair term (half lists with columns for the slots, full for
// atom_gather). One cell grid serves every term: cells as wide as the list radius for which the
// search costs least (neighbor/cell_runs.h, shared_cell_width).
void CudaBackend::make_pair_terms(const SystemState& initial) {
  const ForceField& ff = model_.force_field;
  if (ff.pair_terms.size() > static_cast<size_t>(kMaxPairTerms))
    throw std::runtime_error("the CUDA backend supports at most " + std::to_string(kMaxPairTerms) + " pair terms");
  const double volume = initial.box.periodic ? initial.box.volume() : 0.0;
  const double density = volume > 0 ? system_size_ / volume : 1.0;  // every system fills the box
  const bool full = strategy_info(strategy_).full_list;
  std::vector<double> radii;
  for (const PairTerm& t : ff.pair_terms) {
    auto g = std::make_unique<GpuPairTerm>();
    g->kind = t.kind;
    g->ntypes = ff.ntypes;
    g->table =
        dispatch_pair<float>(t.kind, [&](auto eval) { return upload_table(make_pair_table<decltype(eval)>(t)); });
    const double rl = t.max_cutoff() + model_.neighbor.skin;
    // 1e-4 beyond the cutoff: the evaluators' own float comparison decides the pairs at it.
    g->skip_sq = static_cast<float>(1.0001 * t.max_cutoff() * t.max_cutoff());
    // A particle has no more partners than its system has particles (an open box's density of 1
    // per unit volume put 37,000 partners on a bead of a 98-bead protein with SOP's 20 A cutoff,
    // more than the search can stage); the list grows if a first guess is short.
    const double sphere = 1.3 * (4.0 / 3.0) * M_PI * rl * rl * rl * density * (full ? 1.0 : 0.5) + 8;
    const double per_particle = model_.neighbor.initial_capacity_per_particle > 0
                                    ? model_.neighbor.initial_capacity_per_particle
                                    : std::min(sphere, static_cast<double>(system_size_) + 8);
    if (has_lists())
      g->list =
          std::make_unique<GpuPairList>(static_cast<float>(t.max_cutoff()), static_cast<float>(model_.neighbor.skin),
                                        full, uses_slots(strategy_), per_particle, n_);
    if (g->list) g->list->set_shape(search_shape_from_environment());
    radii.push_back(rl);
    g->exclusion_width =
        upload_exclusions(pair_term_exclusions(ff, model_.topology, n_, pair_terms_.size()), g->exclusions);
    pair_terms_.push_back(std::move(g));
  }
  grid_width_ = radii.empty() ? 1.0 : shared_cell_width(radii.data(), static_cast<int>(radii.size()), density);
}

// Bond terms, one per bond kind in order of first appearance (as the CPU backend does).
namespace {

// A bond term's pairs in the layouts the kernels read, sorted by (i, j): per bond i, j and type;
// rows (the bonds of each i) and columns (of each j, with the bond and its partner), for the
// slot strategies' summation.
void upload_bond_rows_and_columns(GpuBondTerm& t, int n) {
  const int nb = static_cast<int>(t.bonds.size());
  std::vector<unsigned> bi(nb), bj(nb);
  std::vector<int> bt(nb), rs(n + 1, 0), rc(n, 0), cc(n, 0), cs(n + 1, 0);
  for (int k = 0; k < nb; ++k) {
    bi[k] = static_cast<unsigned>(t.bonds[k].i);
    bj[k] = static_cast<unsigned>(t.bonds[k].j);
    bt[k] = t.bonds[k].type;
    ++rc[t.bonds[k].i];
    ++cc[t.bonds[k].j];
  }
  for (int i = 0; i < n; ++i) {
    rs[i + 1] = rs[i] + rc[i];
    cs[i + 1] = cs[i] + cc[i];
  }
  std::vector<int> col_bond(nb), fill(cs.begin(), cs.end() - 1);
  std::vector<unsigned> col_partner(nb);
  for (int k = 0; k < nb; ++k) {
    const int e = fill[t.bonds[k].j]++;
    col_bond[e] = k;
    col_partner[e] = bi[k];
  }
  t.bi = upload_vector(bi);
  t.bj = upload_vector(bj);
  t.btype = upload_vector(bt);
  t.row_start = upload_vector(rs);
  t.row_count = upload_vector(rc);
  t.col_start = upload_vector(cs);
  t.col_count = upload_vector(cc);
  t.col_bond = upload_vector(col_bond);
  t.col_partner = upload_vector(col_partner);
  t.slots.resize(std::max(nb, 1));
}

// atom_gather's layout: every bond listed under both partners, by tag, sorted by (partner,
// type, bond).
void upload_bond_gather_rows(GpuBondTerm& t, int n) {
  const int nb = static_cast<int>(t.bonds.size());
  std::vector<std::vector<std::array<int, 3>>> rows(n);
  for (int k = 0; k < nb; ++k) {
    const Bond& b = t.bonds[k];
    rows[b.i].push_back(std::array<int, 3>{b.j, b.type, k});
    rows[b.j].push_back(std::array<int, 3>{b.i, b.type, k});
  }
  std::vector<int> gs(n + 1, 0), gt, gi;
  std::vector<unsigned> gp;
  for (int i = 0; i < n; ++i) {
    std::sort(rows[i].begin(), rows[i].end());
    for (const auto& r : rows[i]) {
      gp.push_back(static_cast<unsigned>(r[0]));
      gt.push_back(r[1]);
      gi.push_back(r[2]);
    }
    gs[i + 1] = static_cast<int>(gp.size());
  }
  t.g_start = upload_vector(gs);
  t.g_partner = upload_vector(gp);
  t.g_type = upload_vector(gt);
  t.g_index = upload_vector(gi);
}

}  // namespace

void CudaBackend::make_bond_terms() {
  const ForceField& ff = model_.force_field;
  for (const Bond& b : model_.topology.bonds) {
    const BondKind kind = ff.bond_types.at(b.type).kind;
    GpuBondTerm* term = nullptr;
    for (auto& t : bond_terms_)
      if (t->kind == kind) term = t.get();
    if (!term) {
      bond_terms_.push_back(std::make_unique<GpuBondTerm>());
      term = bond_terms_.back().get();
      term->kind = kind;
      term->table =
          dispatch_bond<float>(kind, [&](auto eval) { return upload_table(make_bond_table<decltype(eval)>(ff)); });
    }
    term->bonds.push_back({std::min(b.i, b.j), std::max(b.i, b.j), b.type});
  }
  // Then each pair list, in config order (as the CPU backend): its table per pair, each pair's
  // type its own index.
  for (const PairList& list : ff.pair_lists) {
    bond_terms_.push_back(std::make_unique<GpuBondTerm>());
    GpuBondTerm& term = *bond_terms_.back();
    term.kind = list.kind;
    term.table = dispatch_bond<float>(
        list.kind, [&](auto eval) { return upload_table(make_pair_list_table<decltype(eval)>(list)); });
    term.bonds.reserve(list.size());
    for (const Bond& b : list.data->pairs) term.bonds.push_back({std::min(b.i, b.j), std::max(b.i, b.j), b.type});
  }
  if (bond_terms_.size() > static_cast<size_t>(kMaxBondTerms))
    throw std::runtime_error("the CUDA backend supports at most " + std::to_string(kMaxBondTerms) +
                             " bond kinds and pair lists together, this run has " + std::to_string(bond_terms_.size()));
  for (auto& t : bond_terms_) {
    std::stable_sort(t->bonds.begin(), t->bonds.end(),
                     [](const Bond& a, const Bond& b) { return a.i != b.i ? a.i < b.i : a.j < b.j; });
    upload_bond_rows_and_columns(*t, n_);
    if (fixed_array_forces()) upload_bond_gather_rows(*t, n_);
  }
}

namespace {

// The terms of one family grouped by kind, in order of first appearance (as the CPU backend).
template <typename Kind, typename Term>
void add_bonded_terms(const std::vector<Term>& terms, const std::vector<BondedType<Kind>>& types,
                      GpuBondedTerm::Family family, std::vector<std::unique_ptr<GpuBondedTerm>>& out) {
  std::vector<Kind> kinds;
  for (const Term& t : terms)
    if (std::find(kinds.begin(), kinds.end(), types.at(t.type).kind) == kinds.end())
      kinds.push_back(types.at(t.type).kind);
  for (const Kind kind : kinds) {
    std::vector<uint4> atoms;
    std::vector<int> type;
    for (const Term& t : terms) {
      if (types[t.type].kind != kind) continue;
      if constexpr (std::is_same_v<Term, Angle>)
        atoms.push_back(make_uint4(t.i, t.j, t.k, 0));
      else
        atoms.push_back(make_uint4(t.i, t.j, t.k, t.l));
      type.push_back(t.type);
    }
    auto g = std::make_unique<GpuBondedTerm>();
    g->family = family;
    g->kind = static_cast<int>(kind);
    g->count = static_cast<int>(atoms.size());
    g->table = dispatch_bonded<float>(
        kind, [&](auto eval) { return upload_table(make_bonded_table<decltype(eval)>(types, kind)); });
    g->atoms = upload_vector(atoms);
    g->type = upload_vector(type);
    out.push_back(std::move(g));
  }
}

std::unique_ptr<GpuScaledPairs> upload_scaled_pairs(size_t term, const std::vector<ScaledPair>& pairs) {
  std::vector<unsigned> i, j;
  std::vector<float> w;
  for (const ScaledPair& p : pairs) {
    i.push_back(static_cast<unsigned>(p.i));
    j.push_back(static_cast<unsigned>(p.j));
    w.push_back(static_cast<float>(p.weight));
  }
  auto g = std::make_unique<GpuScaledPairs>();
  g->term = term;
  g->count = static_cast<int>(pairs.size());
  g->i = upload_vector(i);
  g->j = upload_vector(j);
  g->weight = upload_vector(w);
  return g;
}

}  // namespace

// Angles, dihedrals and impropers (one term per kind), the scaled pairs of each pair term, PME's
// excluded pairs, and the extra-force buffer they add to (kernels/bonded_kernels.cuh); nothing
// without them.
void CudaBackend::make_bonded_terms() {
  const ForceField& ff = model_.force_field;
  const Topology& top = model_.topology;
  add_bonded_terms(top.angles, ff.angle_types, GpuBondedTerm::kAngle, bonded_terms_);
  add_bonded_terms(top.dihedrals, ff.dihedral_types, GpuBondedTerm::kDihedral, bonded_terms_);
  add_bonded_terms(top.impropers, ff.improper_types, GpuBondedTerm::kImproper, bonded_terms_);
  for (size_t k = 0; k < ff.pair_terms.size(); ++k) {
    const std::vector<ScaledPair> pairs = pair_term_scaled_pairs(ff, top, n_, k);
    if (!pairs.empty()) scaled_pairs_.push_back(upload_scaled_pairs(k, pairs));
  }
  const PmeSettings& e = model_.electrostatics;
  if (e.enabled) {
    const std::vector<ScaledPair> pairs = pme_excluded_pairs(ff, top, n_, e.term);
    if (!pairs.empty()) pme_excluded_ = upload_scaled_pairs(e.term, pairs);
  }
  if (!bonded_terms_.empty() || !scaled_pairs_.empty() || e.enabled) extra_force_.resize(std::max(n_, 1));
}

CudaBackend::~CudaBackend() { release(); }

// The handles that are not DeviceBuffers (those free themselves); any of them may be unset.
void CudaBackend::release() {
  if (stream_) cudaStreamSynchronize(stream_);
  graphs_.clear();
  if (host_state_) cudaFreeHost(host_state_);
  host_state_ = nullptr;
  for (cudaEvent_t& e : chunk_done_) {
    if (e) cudaEventDestroy(e);
    e = nullptr;
  }
  for (cudaEvent_t e : events_) cudaEventDestroy(e);
  events_.clear();
  if (stream_) cudaStreamDestroy(stream_);
  stream_ = nullptr;
}

void CudaBackend::set_temperature(double temperature) {
  wait();  // the steps asked for before run at the old temperature
  model_.integrator.temperature = temperature;
  c_ = make_step_constants<float>(model_.integrator, model_.units.kB, model_.units.force_to_accel);
  for (SystemParams& p : system_params_) p.kT_mvv = c_.kT_mvv;
  upload_system_params();
}

void CudaBackend::set_system_temperature(int k, double temperature) {
  change_system_temperatures({TemperatureChange{k, temperature, 1.0}});
}

namespace {

// v times f in double, rounded to float: what the host's download, scale and upload give. With
// `factors`, particle p's system's factor (a factor of 1 leaves its velocities as they are).
__global__ void scale_velocities_kernel(float4* vel, const unsigned* tag, int n, int system_size, const double* factors,
                                        double f) {
  const int p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p >= n) return;
  if (factors) f = factors[tag[p] / static_cast<unsigned>(system_size)];
  if (f == 1.0) return;
  float4 v = vel[p];
  v.x = static_cast<float>(static_cast<double>(v.x) * f);
  v.y = static_cast<float>(static_cast<double>(v.y) * f);
  v.z = static_cast<float>(static_cast<double>(v.z) * f);
  vel[p] = v;  // w, the mass, stays
}

}  // namespace

void CudaBackend::scale_system_velocities(int k, double f) {
  if (k >= systems_) throw std::out_of_range("no system " + std::to_string(k) + " in the ensemble");
  if (k >= 0) return change_system_temperatures({TemperatureChange{k, std::nan(""), f}});
  complete_step();  // the velocities of the step, not of its half
  Launcher(stream_).kernel(PAIRMD_HERE, scale_velocities_kernel, blocks_for(n_), kBlockSize, 0, particles_.vel(),
                           particles_.tag(), n_, system_size_, static_cast<const double*>(nullptr), f);
  PAIRMD_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

// The temperatures first (the step left pending ends with a half kick, which does not read
// k_B T), then every scaled system's velocities in one kernel: one upload of each kind and one
// wait, however many systems change (a meeting of 64 replicas made two of each per replica).
void CudaBackend::change_system_temperatures(const std::vector<TemperatureChange>& changes) {
  std::vector<double> factors(systems_, 1.0);
  bool temperatures = false, scaled = false;
  std::vector<char> seen(systems_, 0);
  for (const TemperatureChange& c : changes) {
    if (c.system < 0 || c.system >= systems_)
      throw std::out_of_range("no system " + std::to_string(c.system) + " in the ensemble");
    if (seen[c.system]++)  // two factors would be two roundings: the caller's order decides them
      throw std::invalid_argument("system " + std::to_string(c.system) + " changes twice in one batch");
  }
  wait();  // the steps asked for before run at the old temperatures
  for (const TemperatureChange& c : changes) {
    if (!std::isnan(c.temperature)) {
      IntegratorSettings s = model_.integrator;
      s.temperature = c.temperature;
      system_params_[c.system].kT_mvv =
          make_step_constants<float>(s, model_.units.kB, model_.units.force_to_accel).kT_mvv;
      temperatures = true;
    }
    if (c.velocity_factor != 1.0) {
      factors[c.system] = c.velocity_factor;
      scaled = true;
    }
  }
  Launcher now(stream_);
  if (temperatures)
    now.copy(PAIRMD_HERE, device_params_.data(), system_params_.data(), system_params_.size() * sizeof(SystemParams),
             cudaMemcpyHostToDevice);
  if (scaled) {
    complete_step();  // the velocities of the step, not of its half
    velocity_factors_.reserve_grow(factors.size());
    now.copy(PAIRMD_HERE, velocity_factors_.data(), factors.data(), factors.size() * sizeof(double),
             cudaMemcpyHostToDevice);
    now.kernel(PAIRMD_HERE, scale_velocities_kernel, blocks_for(n_), kBlockSize, 0, particles_.vel(), particles_.tag(),
               n_, system_size_, static_cast<const double*>(velocity_factors_.data()), 1.0);
  }
  // The host copies may change again once this returns.
  if (temperatures || scaled) PAIRMD_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void CudaBackend::set_system_seed(int k, uint64_t seed) {
  wait();
  system_params_.at(k).seed = seed;
  upload_system_params();
}

// The integrate kernels read each system's k_B T and seed from device memory, so the step graphs
// stay valid. On the backend's stream, so the next step's kernels see it (a plain cudaMemcpy runs
// on the legacy stream, which the non-blocking stream_ does not wait for); waited for, so the
// host copy may change again.
void CudaBackend::upload_system_params() {
  Launcher(stream_).copy(PAIRMD_HERE, device_params_.data(), system_params_.data(),
                         system_params_.size() * sizeof(SystemParams), cudaMemcpyHostToDevice);
  PAIRMD_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

// PME for the state's box and charges (a new solver, with its cuFFT plans, only when the box
// changed). One system only: the grid is the box's; fp32 forces cannot meet accuracies finer
// than kPmeMinAccuracyFp32.
void CudaBackend::make_pme(const SystemState& s) {
  const PmeSettings& e = model_.electrostatics;
  if (!e.enabled) return;
  if (systems_ != 1)
    throw std::invalid_argument("particle-mesh Ewald runs one system per CUDA backend, not an ensemble of " +
                                std::to_string(systems_));
  if (e.accuracy < kPmeMinAccuracyFp32) {
    std::ostringstream m;
    m << "electrostatics.accuracy " << e.accuracy << " is finer than the CUDA backend's fp32 forces can meet ("
      << kPmeMinAccuracyFp32 << "); use backend: cpu, or accuracy >= " << kPmeMinAccuracyFp32;
    throw std::invalid_argument(m.str());
  }
  const PmeParams params = resolve_pme(e, s.box);
  if (!pme_ || !pme_->fits(params, s.box)) pme_ = std::make_unique<PmeGpu>(params, s.box);
  pme_->set_charges(s.charge);
}

void CudaBackend::set_state(const SystemState& s) {
  host_ = s;
  n_ = static_cast<int>(s.size());
  box_.lo = {static_cast<float>(s.box.lo.x), static_cast<float>(s.box.lo.y), static_cast<float>(s.box.lo.z)};
  box_.L = {static_cast<float>(s.box.L.x), static_cast<float>(s.box.L.y), static_cast<float>(s.box.L.z)};
  box_.periodic = s.box.periodic;
  PAIRMD_CUDA_CHECK(cudaStreamSynchronize(stream_));
  in_flight_.clear();  // whatever they did is replaced
  queued_ = 0;
  steps_seen_ = 0;
  particles_.upload(s);
  if (systems_ == 1)
    system_size_ = std::max(1, n_);
  else if (n_ != systems_ * system_size_)
    throw std::logic_error("CudaBackend: a state of " + std::to_string(n_) + " particles for " +
                           std::to_string(systems_) + " systems of " + std::to_string(system_size_));
  ChunkState init{};
  init.ctrl.step = static_cast<unsigned long long>(s.step);
  init.box.box = box_;
  for (int d = 0; d < 3; ++d) {
    init.box.L[d] = (&s.box.L.x)[d];
    init.box.mu[d] = 1.0;
  }
  init.box.rebuild_sq = half_skin_sq_;
  init.box.scale_since_build = 1.f;
  if (barostat_) {
    PAIRMD_CUDA_CHECK(cudaMemset(box_sums_.data(), 0, box_sums_.size() * sizeof(unsigned long long)));
    PAIRMD_CUDA_CHECK(cudaMemset(rescale_ticket_.data(), 0, sizeof(unsigned)));
  }
  PAIRMD_CUDA_CHECK(cudaMemcpy(state_.data(), &init, sizeof init, cudaMemcpyHostToDevice));
  PAIRMD_CUDA_CHECK(cudaMemcpy(device_params_.data(), system_params_.data(),
                               system_params_.size() * sizeof(SystemParams), cudaMemcpyHostToDevice));
  // Enough first-level tickets for the integrate kernel with the most blocks.
  const unsigned most_blocks =
      static_cast<unsigned>(std::max((n_ + kSumParticles - 1) / kSumParticles, blocks_for(n_)));
  tickets_.resize(ticket_words(most_blocks));
  PAIRMD_CUDA_CHECK(cudaMemset(tickets_.data(), 0, tickets_.size() * sizeof(unsigned)));
  PAIRMD_CUDA_CHECK(cudaDeviceSynchronize());  // the uploads above ran on the default stream
  pending_finish_ = false;
  steps_since_build_ = 0;
  make_pme(s);
  rebuild_lists(true);
  Launcher now(stream_);
  enqueue_forces(now, particles_.current());
  read_chunk_state();
  // A huge force is reported by the first step (every strategy alike); a broken bond now.
  const DeviceFlags f = host_state_->flags;
  if (f.broken_bond != 0) throw_blowup(f, s.step);
}

}  // namespace pairmd
