#include "analysis/potential_map.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "analysis/msm.h"
#include "engine/resources.h"
#include "kernels/dcs/dcs_launch.h"

namespace pairmd {

ChargeList charged_particles(const SystemState& s) {
  ChargeList c;
  for (size_t i = 0; i < s.size(); ++i)
    if (s.charge[i] != 0.0) c.add(s.position[i].x, s.position[i].y, s.position[i].z, s.charge[i]);
  return c;
}

namespace {

// What `auto` picks on a GPU: the fastest kernel measured (docs/benchmarks.md).
constexpr MapKernel kBestGpuKernel = MapKernel::GatherCoalesced;

// The launcher of each GPU kernel of the registry (engine/map_registry.h).
dcs::GpuKernel gpu_kernel(MapKernel k) {
  switch (k) {
    case MapKernel::Scatter:
      return dcs::GpuKernel::Scatter;
    case MapKernel::Gather:
      return dcs::GpuKernel::Gather;
    case MapKernel::GatherCoarsened:
      return dcs::GpuKernel::GatherCoarsened;
    case MapKernel::GatherCoalesced:
      return dcs::GpuKernel::GatherCoalesced;
    case MapKernel::Auto:
    case MapKernel::Cpu:
      break;
  }
  throw std::invalid_argument(std::string("potential map: '") + map_kernel_name(k) + "' is not a GPU kernel");
}

}  // namespace

MapKernel resolve_map_kernel(MapKernel requested, std::string* why) {
  std::string gpu;
  const bool have_gpu = dcs::gpu_available(&gpu);
  if (requested == MapKernel::Cpu) {
    if (why) *why = "cpu (double-precision reference, OpenMP)";
    return MapKernel::Cpu;
  }
  if (requested == MapKernel::Auto) {
    const MapKernel k = have_gpu ? kBestGpuKernel : MapKernel::Cpu;
    if (why) *why = std::string(map_kernel_name(k)) + " (auto; " + gpu + ")";
    return k;
  }
  if (!have_gpu)
    throw std::runtime_error(std::string("potential-map kernel '") + map_kernel_name(requested) +
                             "' runs on a GPU, but " + gpu + " (use kernel: cpu or auto)");
  if (why) *why = std::string(map_kernel_name(requested)) + " (" + gpu + ")";
  return requested;
}

std::string potential_unit(const Units& units) { return std::string(units.energy_unit()) + "/" + units.charge_unit(); }

Grid3 map_lattice(const SystemState& s, const MapSettings& settings, const Units& units) {
  const double h = settings.spacing;
  if (!(h > 0) || !std::isfinite(h)) throw std::invalid_argument("potential map: the spacing must be > 0");
  double lo[3], hi[3];
  if (settings.region == "box") {
    lo[0] = s.box.lo.x, lo[1] = s.box.lo.y, lo[2] = s.box.lo.z;
    hi[0] = lo[0] + s.box.L.x, hi[1] = lo[1] + s.box.L.y, hi[2] = lo[2] + s.box.L.z;
  } else if (settings.region == "particles") {
    if (s.size() == 0) throw std::invalid_argument("potential map: region 'particles' needs at least one particle");
    if (!(settings.padding >= 0)) throw std::invalid_argument("potential map: the padding must be >= 0");
    for (int d = 0; d < 3; ++d) lo[d] = std::numeric_limits<double>::infinity(), hi[d] = -lo[d];
    for (const Vec3d& p : s.position) {
      const double c[3] = {p.x, p.y, p.z};
      for (int d = 0; d < 3; ++d) lo[d] = std::min(lo[d], c[d]), hi[d] = std::max(hi[d], c[d]);
    }
    for (int d = 0; d < 3; ++d) lo[d] -= settings.padding, hi[d] += settings.padding;
  } else {
    throw std::invalid_argument("potential map: unknown region '" + settings.region + "' (expected box or particles)");
  }
  Grid3 g;
  double points = 1;
  for (int d = 0; d < 3; ++d) {
    const double extent = hi[d] - lo[d];
    if (!std::isfinite(extent) || extent < 0) throw std::invalid_argument("potential map: the region is not finite");
    // The small tolerance keeps an extent of exactly n spacings at n + 1 points.
    const double n = std::ceil(extent / h - 1e-9) + 1;
    points *= n;
    if (points > static_cast<double>(kMaxMapPoints)) {
      std::ostringstream m;
      m << "potential map: a spacing of " << h << " over the region " << hi[0] - lo[0] << " x " << hi[1] - lo[1]
        << " x " << hi[2] - lo[2] << " gives more than " << kMaxMapPoints << " lattice points; use a larger spacing";
      throw std::invalid_argument(m.str());
    }
    g.dims[d] = static_cast<int>(n);
    g.origin[d] = lo[d];
    g.spacing[d] = h;
  }
  // The map, the sum over frames and their mean (8 bytes a point each), before they are allocated.
  const std::string room = room_for(points, static_cast<double>(kMaxMapPoints), 24, "points");
  if (!room.empty())
    throw std::invalid_argument("potential map: a lattice of " + std::to_string(g.dims[0]) + " x " +
                                std::to_string(g.dims[1]) + " x " + std::to_string(g.dims[2]) + ": " + room +
                                "; use a larger spacing");
  g.values.assign(g.size(), 0.0);
  g.unit = potential_unit(units);
  return g;
}

void potential_cpu(const ChargeList& c, double k_e, double floor, Grid3& g) {
  const int nx = g.dims[0], ny = g.dims[1], nz = g.dims[2];
  g.values.assign(g.size(), 0.0);
  const long n = static_cast<long>(c.size());
  if (n == 0 || g.size() == 0) return;
  const double floor2 = floor * floor;
  const double* ax = c.x.data();
  const double* aq = c.q.data();
  // Atoms in blocks whose x, q and dy^2 + dz^2 (24 kB) stay in L1 while a whole row runs over them.
  constexpr long kBlock = 1024;
#pragma omp parallel
  {
    std::vector<double> dyz2(n), row(nx);
#pragma omp for schedule(dynamic, 1)
    for (long r = 0; r < static_cast<long>(ny) * nz; ++r) {
      const int j = static_cast<int>(r % ny), k = static_cast<int>(r / ny);
      const double y = g.origin[1] + j * g.spacing[1], z = g.origin[2] + k * g.spacing[2];
      for (long a = 0; a < n; ++a) {
        const double dy = y - c.y[a], dz = z - c.z[a];
        dyz2[a] = dy * dy + dz * dz;
      }
      std::fill(row.begin(), row.end(), 0.0);
      for (long a0 = 0; a0 < n; a0 += kBlock) {
        const long a1 = std::min(n, a0 + kBlock);
        for (int i = 0; i < nx; ++i) {
          const double x = g.origin[0] + i * g.spacing[0];
          double v = 0;
#pragma omp simd reduction(+ : v)
          for (long a = a0; a < a1; ++a) {
            const double dx = x - ax[a];
            v += aq[a] / std::sqrt(std::max(dx * dx + dyz2[a], floor2));
          }
          row[i] += v;
        }
      }
      double* out = g.values.data() + static_cast<size_t>(r) * nx;
      for (int i = 0; i < nx; ++i) out[i] = k_e * row[i];
    }
  }
}

double compute_potential(MapKernel kernel, const ChargeList& c, double k_e, double floor, Grid3& g, int coarsen) {
  if (!(floor > 0)) throw std::invalid_argument("potential map: the distance floor must be > 0");
  if (kernel == MapKernel::Cpu) {
    const auto t0 = std::chrono::steady_clock::now();
    potential_cpu(c, k_e, floor, g);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  const dcs::GpuKernel gk = gpu_kernel(kernel);
  // Float coordinates relative to lattice point (0,0,0): their rounding is relative to the
  // lattice extent, not to where the box happens to sit.
  std::vector<float> xyzq(4 * c.size());
  for (size_t a = 0; a < c.size(); ++a) {
    xyzq[4 * a + 0] = static_cast<float>(c.x[a] - g.origin[0]);
    xyzq[4 * a + 1] = static_cast<float>(c.y[a] - g.origin[1]);
    xyzq[4 * a + 2] = static_cast<float>(c.z[a] - g.origin[2]);
    xyzq[4 * a + 3] = static_cast<float>(c.q[a]);
  }
  dcs::GpuLattice lat;
  lat.nx = g.dims[0], lat.ny = g.dims[1], lat.nz = g.dims[2];
  lat.hx = static_cast<float>(g.spacing[0]), lat.hy = static_cast<float>(g.spacing[1]),
  lat.hz = static_cast<float>(g.spacing[2]);
  dcs::GpuOptions opt;
  opt.floor2 = static_cast<float>(floor * floor);
  opt.coarsen = coarsen;
  std::vector<float> out(g.size());
  const double ms = dcs::gpu_potential(gk, lat, xyzq.data(), c.size(), out.data(), opt);
  g.values.resize(g.size());
  for (size_t p = 0; p < out.size(); ++p) g.values[p] = k_e * static_cast<double>(out[p]);
  return 1e-3 * ms;
}

PotentialMapSeries::PotentialMapSeries(const MapSettings& settings, const Units& units)
    : settings_(settings), units_(units) {
  if (!(settings.spacing > 0)) throw std::invalid_argument("potential map: the spacing must be > 0");
  if (settings.coarsen != 4 && settings.coarsen != 8 && settings.coarsen != 16)
    throw std::invalid_argument("potential map: coarsen must be 4, 8 or 16");
  method_ = parse_map_method(settings.method);
  if (settings.boundary != "open" && settings.boundary != "periodic")
    throw std::invalid_argument("potential map: unknown boundary '" + settings.boundary +
                                "' (expected open or periodic)");
  if (settings.boundary == "periodic" && method_ == MapMethod::Exact)
    throw std::invalid_argument(
        "potential map: the exact sum counts no periodic images; boundary periodic needs method msm or auto");
  if (settings.msm_order != 4 && settings.msm_order != 6)
    throw std::invalid_argument("potential map: msm_order must be 4 (cubic) or 6 (quintic)");
  if (!(settings.msm_cutoff >= 0) || !(settings.msm_grid_spacing >= 0) || settings.error_samples < 0)
    throw std::invalid_argument("potential map: msm_cutoff, msm_grid_spacing and error_samples must be >= 0");
  kernel_ = resolve_map_kernel(parse_map_kernel(settings.kernel), &why_);
  method_why_ = map_method_name(method_);
}

namespace {

MsmParams msm_params(const MapSettings& m, bool gpu) {
  MsmParams p;
  p.cutoff = m.msm_cutoff;
  p.grid_spacing = m.msm_grid_spacing;
  p.order = m.msm_order;
  p.periodic = m.boundary == "periodic";
  p.gpu = gpu;
  return p;
}

std::string seconds_text(double s) {
  char b[32];
  std::snprintf(b, sizeof b, s < 1e-2 ? "%.2g s" : "%.3g s", s);
  return b;
}

}  // namespace

// What `auto` picks: msm when its estimated time is under a quarter of the exact sum's (the
// exact sum has no approximation error, so it keeps small maps), and always in a periodic map.
MapMethod choose_map_method(const ChargeList& charges, const Grid3& lattice, const MapSettings& settings,
                            const Box& box, bool gpu, std::string* why) {
  if (settings.boundary == "periodic") {
    if (why) *why = "auto: msm (boundary periodic: the exact sum counts no images)";
    return MapMethod::Msm;
  }
  const MsmPlan plan = make_msm_plan(charges, lattice, msm_params(settings, gpu), settings.floor(), &box);
  const MapCost cost = estimate_map_cost(plan, charges.size(), gpu);
  const MapMethod m = 4 * cost.msm < cost.exact ? MapMethod::Msm : MapMethod::Exact;
  if (why)
    *why = std::string("auto: ") + map_method_name(m) + " (estimated " + seconds_text(cost.msm) + " for msm, " +
           seconds_text(cost.exact) + " for the exact sum, on the " + (gpu ? "GPU" : "CPU") + ")";
  return m;
}

void PotentialMapSeries::resolve_method(const ChargeList& charges, const Box& box) {
  if (settings_.boundary == "periodic" && !box.periodic)
    throw std::invalid_argument("potential map: boundary periodic needs a periodic simulation box");
  const bool gpu = kernel_ != MapKernel::Cpu;
  if (method_ == MapMethod::Auto)
    method_ = choose_map_method(charges, last_, settings_, box, gpu, &method_why_);
  else
    method_why_ = map_method_name(method_);
  if (method_ == MapMethod::Msm) {
    // Kernel names other than cpu and auto belong to the exact sum; msm has one GPU path.
    why_ = gpu ? "msm GPU kernels (" + why_ + ")" : std::string("msm CPU reference (double precision, OpenMP)");
  }
}

double PotentialMapSeries::compute_msm(const ChargeList& charges, const Box& box) {
  const bool gpu = kernel_ != MapKernel::Cpu;
  const MsmParams params = msm_params(settings_, gpu);
  const MsmPlan plan = make_msm_plan(charges, last_, params, settings_.floor(), &box);
  const double s = compute_msm_potential(plan, charges, units_.coulomb, gpu, last_);
  if (frames_ == 0) {
    // Later frames keep a and h (the grids follow the atoms, the approximation stays the same).
    settings_.msm_cutoff = plan.a;
    settings_.msm_grid_spacing = plan.h_target;
    method_why_ += "; " + plan.describe();
    if (settings_.error_samples > 0) {
      try {
        accuracy_ = sampled_accuracy(charges, units_.coulomb, settings_.floor(), plan.periodic ? &box : nullptr, last_,
                                     settings_.error_samples);
      } catch (const std::invalid_argument& e) {
        method_why_ += std::string("; no accuracy check: ") + e.what();  // e.g. a floor of half the box
      }
    }
  }
  return s;
}

std::string PotentialMapSeries::summary() const {
  if (method_ != MapMethod::Msm) return "Direct Coulomb Summation";
  std::ostringstream s;
  s << "multilevel summation"
    << (settings_.boundary == "periodic" ? ", periodic (every image, neutralising background)" : "");
  if (accuracy_.samples > 0) {
    char b[64];
    std::snprintf(b, sizeof b, "%.2e", accuracy_.rel_rms);
    s << ", estimated relative RMS error " << b << " (against the exact sum at " << accuracy_.samples
      << " sampled lattice points of the first map)";
  }
  return s.str();
}

const Grid3& PotentialMapSeries::add(const SystemState& s) {
  if (frames_ == 0) {
    last_ = map_lattice(s, settings_, units_);
    sum_.assign(last_.size(), 0.0);
  }
  const ChargeList charges = charged_particles(s);
  if (frames_ == 0) resolve_method(charges, s.box);
  if (method_ == MapMethod::Msm)
    seconds_ += compute_msm(charges, s.box);
  else
    seconds_ += compute_potential(kernel_, charges, units_.coulomb, settings_.floor(), last_, settings_.coarsen);
  evaluations_ += static_cast<double>(charges.size()) * static_cast<double>(last_.size());
  for (size_t p = 0; p < sum_.size(); ++p) sum_[p] += last_.values[p];
  ++frames_;
  return last_;
}

Grid3 PotentialMapSeries::average() const {
  Grid3 g = last_;
  g.values.assign(sum_.size(), 0.0);
  if (frames_ > 0)
    for (size_t p = 0; p < sum_.size(); ++p) g.values[p] = sum_[p] / static_cast<double>(frames_);
  return g;
}

FrameRange parse_frame_range(const std::string& text) {
  auto bad = [&](const std::string& why) {
    return std::invalid_argument("--frames '" + text + "': " + why + " (expected a:b:s, a:b, a:, a or -1)");
  };
  auto number = [&](const std::string& t, int64_t def) -> int64_t {
    if (t.empty()) return def;
    size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(t, &used);
    } catch (const std::exception&) {
      throw bad("'" + t + "' is not an integer");
    }
    if (used != t.size()) throw bad("'" + t + "' is not an integer");
    return v;
  };
  FrameRange r;
  std::vector<std::string> parts;
  size_t b = 0;
  for (size_t c; (c = text.find(':', b)) != std::string::npos; b = c + 1) parts.push_back(text.substr(b, c - b));
  parts.push_back(text.substr(b));
  if (parts.size() > 3 || text.empty()) throw bad("malformed");
  if (parts.size() == 1) {
    r.start = number(parts[0], 0);
    r.single = true;
    if (r.start < -1) throw bad("only -1 (the last frame) may be negative");
    return r;
  }
  r.start = number(parts[0], 0);
  r.stop = number(parts[1], -1);
  r.step = parts.size() == 3 ? number(parts[2], 1) : 1;
  if (r.start < 0) throw bad("the first frame must be >= 0");
  if (!parts[1].empty() && r.stop < r.start) throw bad("the end must not precede the start");
  if (r.step < 1) throw bad("the stride must be >= 1");
  return r;
}

int64_t map_frames(const std::function<SystemState(int64_t)>& read, const FrameRange& range, PotentialMapSeries& series,
                   std::string* note) {
  if (range.single) {
    series.add(read(range.start));
    return 1;
  }
  int64_t added = 0;
  for (int64_t f = range.start; range.stop < 0 || f < range.stop; f += range.step) {
    SystemState s;
    try {
      s = read(f);
    } catch (const std::exception& e) {
      if (range.stop >= 0 || added == 0) throw;
      if (note) *note = "frames end at " + std::to_string(f) + " (" + e.what() + ")";
      break;
    }
    series.add(s);
    ++added;
  }
  return added;
}

}  // namespace pairmd
