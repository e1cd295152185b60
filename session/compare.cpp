#include "session/compare.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "backends/cpu_backend.h"
#include "backends/strategies.h"
#include "backends/tuning.h"
#include "session/run_setup.h"

namespace pairmd {

namespace {

// The fp64 CPU reference's forces on the common start, and their RMS.
struct Reference {
  std::vector<Vec3d> forces;
  double rms = 0;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? NAN : v[v.size() / 2];
}

bool bitwise_equal(const SystemState& a, const SystemState& b) {
  return a.size() == b.size() && std::memcmp(a.position.data(), b.position.data(), a.size() * sizeof(Vec3d)) == 0 &&
         std::memcmp(a.velocity.data(), b.velocity.data(), a.size() * sizeof(Vec3d)) == 0;
}

// One common, equilibrated start for every strategy (warm-up with the first one).
SystemState equilibrated_start(const Model& model, const SystemState& built, const std::string& first, long warmup) {
  SystemState start = built;
  if (warmup > 0) {
    Model m = model;
    m.strategy = first == "cpu" ? strategy_name(kDefaultStrategy) : first;
    auto b = make_backend(first == "cpu" ? "cpu" : "cuda", m, start);
    b->advance(warmup);
    b->get_state(start);
  }
  return start;
}

Reference cpu_reference(const Model& model, const SystemState& start) {
  Reference r;
  CpuBackend cpu(model, start);
  r.forces = cpu.forces();
  for (const Vec3d& f : r.forces) r.rms += dot(f, f);
  r.rms = std::sqrt(r.rms / std::max<long>(1, static_cast<long>(start.size())));
  return r;
}

// Max and RMS of |F - F_ref| relative to the reference's RMS force.
void force_errors(Backend& b, const Reference& ref, long n, CompareRow& row) {
  const std::vector<Vec3d> f = b.forces();
  double mx = 0, ss = 0;
  for (long i = 0; i < n; ++i) {
    const Vec3d d = f[i] - ref.forces[i];
    mx = std::max(mx, std::sqrt(dot(d, d)));
    ss += dot(d, d);
  }
  row.max_err = mx / ref.rms;
  row.rms_err = std::sqrt(ss / n) / ref.rms;
}

// Speed: the median of the timed repeats after a short warm-up.
void time_steps(Backend& b, const CompareSettings& c, CompareRow& row) {
  b.advance(std::min(50L, c.steps));  // warm-up: first launches, list build
  std::vector<double> ms;
  for (long k = 0; k < c.repeats; ++k) {
    const auto t0 = std::chrono::steady_clock::now();
    b.advance(c.steps);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / c.steps);
  }
  row.ms_per_step = median(ms);
  row.spread = (*std::max_element(ms.begin(), ms.end()) - *std::min_element(ms.begin(), ms.end())) / row.ms_per_step;
  row.steps_per_s = 1000.0 / row.ms_per_step;
  row.detail = b.stats().detail;
}

// Time shares from a separate profiled run: GPU time between events around each phase.
void time_shares(Backend& b, const CompareSettings& c, long n, CompareRow& row) {
  const BackendStats before = b.stats();
  b.set_profiling(true);
  b.advance(c.steps);
  b.set_profiling(false);
  const BackendStats after = b.stats();
  const double f = after.seconds_force - before.seconds_force, l = after.seconds_list - before.seconds_list,
               in = after.seconds_integrate - before.seconds_integrate, tot = f + l + in;
  if (tot > 0) {
    row.share_force = f / tot;
    row.share_list = l / tot;
    row.share_integrate = in / tot;
  }
  row.builds_per_step = static_cast<double>(after.list_builds - before.list_builds) / c.steps;
  row.mib = after.device_bytes / 1048576.0;
  row.bytes_per_particle = static_cast<double>(after.device_bytes) / n;
}

// Reproducibility, measured: two fresh runs from the same state, compared bit for bit.
std::string reproducible(const std::string& backend_name, const Model& m, const SystemState& start, long steps) {
  const long rsteps = std::min(steps, 300L);
  SystemState s1, s2;
  auto r1 = make_backend(backend_name, m, start);
  r1->advance(rsteps);
  r1->get_state(s1);
  r1.reset();
  auto r2 = make_backend(backend_name, m, start);
  r2->advance(rsteps);
  r2->get_state(s2);
  return bitwise_equal(s1, s2) ? "yes" : "no";
}

// Everything compare measures of one strategy ("cpu": the reference backend) on the start.
CompareRow measure(const std::string& strategy, const Model& model, const SystemState& start, const CompareSettings& c,
                   const Reference* ref) {
  CompareRow row;
  row.n = static_cast<long>(start.size());
  row.strategy = strategy;
  Model m = model;
  if (strategy != "cpu") m.strategy = strategy;
  const std::string backend_name = strategy == "cpu" ? "cpu" : "cuda";
  try {
    auto b = make_backend(backend_name, m, start);
    if (ref) force_errors(*b, *ref, row.n, row);
    time_steps(*b, c, row);
    time_shares(*b, c, row.n, row);
    // The two reproducibility runs at the settings start-up tuning chose here (backends/tuning.h),
    // not tuned again each: that cost twice the timing's tuning, and the choice changes no bit.
    const BackendStats chosen = b->stats();
    if (!chosen.strategy.empty() && chosen.skin >= 0)
      m = with_tuned_settings(m, {parse_strategy(chosen.strategy), chosen.skin});
    b.reset();
    row.reproducible = reproducible(backend_name, m, start, c.steps);
  } catch (const std::exception& e) {
    row.error = e.what();
    row.reproducible = "error";
  }
  return row;
}

}  // namespace

std::vector<std::string> size_overrides(const RunConfig& cfg, long n) {
  if (cfg.system.source == SystemSource::Lattice) {
    const int basis = cfg.system.lattice.kind == LatticeKind::Fcc ? 4 : 1;
    const long c = std::max(1L, std::lround(std::cbrt(static_cast<double>(n) / basis)));
    return {"system.lattice.cells=" + std::to_string(c)};
  }
  if (cfg.system.source == SystemSource::Chains) {
    // A chain's beads and, where the chains bring counterions, its share of them.
    const ChainsSpec& c = cfg.system.chains;
    double per_chain = c.length;
    if (c.counterion_type >= 0) {
      const double charged = c.charged_every == 0 ? c.length : std::ceil(double(c.length) / c.charged_every);
      const double qm = cfg.system.types[c.monomer_type].charge, qc = cfg.system.types[c.counterion_type].charge;
      if (qc != 0) per_chain += std::max(0.0, -qm * charged / qc);
    }
    const long count = static_cast<long>(static_cast<double>(n) / std::max(1.0, per_chain) + 1e-9);
    return {"system.chains.count=" + std::to_string(std::max(1L, count))};
  }
  throw std::runtime_error("sizes need a lattice or chains system");
}

void resolve_compare(CompareSettings& c, FrontEndKind k) {
  kCompareStepsOption.checked(static_cast<double>(c.steps), k);
  kCompareRepeatsOption.checked(static_cast<double>(c.repeats), k);
  kCompareWarmupOption.checked(static_cast<double>(c.warmup), k);
  for (long s : c.sizes) kCompareSizesOption.checked(static_cast<double>(s), k);
  if (c.strategies.empty()) c.strategies = strategy_names();
  c.gpu = cuda_available(&c.why);
  for (const std::string& s : c.strategies) {
    kCompareStrategiesOption.checked(s, k);
    if (s != "cpu" && !c.gpu)
      throw std::invalid_argument("strategy " + s + " needs a GPU, and " + c.why + " (use " +
                                  kCompareStrategiesOption.name(k) + " cpu)");
  }
}

std::vector<CompareRow> compare_strategies(const std::function<RunConfig(const std::vector<std::string>&)>& load,
                                           const CompareSettings& c, const std::function<void(long)>& on_size,
                                           const std::function<void(const CompareRow&)>& on_row) {
  const RunConfig base = load({});
  std::vector<long> sizes = c.sizes;
  if (sizes.empty()) sizes.push_back(0);  // the config's own size
  std::vector<CompareRow> rows;
  for (long size : sizes) {
    const RunConfig cfg = size > 0 ? load(size_overrides(base, size)) : base;
    check_build_memory(cfg, c.strategies[0] == "cpu" ? "cpu" : "cuda");
    const BuiltSystem sys = build_system(cfg);
    const Model model = make_model(cfg, sys);
    const SystemState start = equilibrated_start(model, sys.state, c.strategies[0], c.warmup);
    Reference ref;
    if (c.reference) ref = cpu_reference(model, start);
    if (on_size) on_size(static_cast<long>(start.size()));
    for (const std::string& strategy : c.strategies) {
      rows.push_back(measure(strategy, model, start, c, c.reference ? &ref : nullptr));
      if (on_row) on_row(rows.back());
    }
  }
  return rows;
}

}  // namespace pairmd
