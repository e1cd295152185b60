#include "analysis/msm.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <random>
#include <sstream>
#include <stdexcept>

#include "analysis/ewald.h"
#include "kernels/dcs/dcs_launch.h"
#include "kernels/dcs/msm_bins.h"
#include "kernels/dcs/msm_launch.h"
#include "potentials/msm.h"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace pairmd {

namespace {

constexpr int kMaxLevels = 24;
// Finest grid: at most this many points (2 GiB of doubles for the CPU's grid work).
constexpr double kMaxGridPoints = 1 << 28;
// Lattice points per tile edge of the short-range part.
constexpr int kTile = 8;

int ceil_div(int a, int b) { return -msm::floor_div(-a, b); }

int split_order(int P) { return P / 2; }  // C2 softening for cubic, C3 for quintic

// a / h of the automatic grid spacing: the accuracy is set by a / h (and the order), hardly by a
// itself. Measured (docs/potential_maps.md): relative RMS error 2e-4..6e-4 for quintic at a/h = 5
// and for cubic at a/h = 7 on open maps. A periodic map's V is smaller (the background removes
// its large-scale part), so the same absolute error is a larger share: 9e-4 at a/h = 5 for the
// polyelectrolyte example, 1.7e-4 at 6; periodic maps get a finer grid.
double default_ratio(int P, bool periodic) {
  if (periodic) return P == 4 ? 8.0 : 6.0;
  return P == 4 ? 7.0 : 5.0;
}

struct Extent {
  double lo[3], hi[3];
};

// Bounding box of the atoms (relative to the lattice origin).
Extent atom_extent(const ChargeList& c, const Grid3& g) {
  Extent e;
  for (int d = 0; d < 3; ++d) e.lo[d] = std::numeric_limits<double>::infinity(), e.hi[d] = -e.lo[d];
  const std::vector<double>* xs[3] = {&c.x, &c.y, &c.z};
  for (int d = 0; d < 3; ++d)
    for (double v : *xs[d]) e.lo[d] = std::min(e.lo[d], v - g.origin[d]), e.hi[d] = std::max(e.hi[d], v - g.origin[d]);
  return e;
}

// The geometry of the levels for a given a and h (no tables): what the cost model needs.
std::vector<MsmLevel> level_geometry(bool periodic, int P, double h, const Extent& atoms, const Grid3& g,
                                     const std::array<double, 3>& box, std::array<double, 3>* grid_origin,
                                     int stencil_points) {
  std::vector<MsmLevel> levels;
  MsmLevel l1;
  if (periodic) {
    // M_d = c_d 2^k with the same k in every direction, c_d >= 4 where the box allows it: k
    // coarsenings down to a top grid of 4..7 points along the shortest edge.
    const double Lmin = std::min({box[0], box[1], box[2]});
    int k = 0;
    while (k < kMaxLevels - 1 && Lmin / (h * std::ldexp(1.0, k + 1)) >= 4.0) ++k;
    for (int d = 0; d < 3; ++d) {
      const int c = std::max(1, static_cast<int>(std::ceil(box[d] / (h * std::ldexp(1.0, k)) - 1e-9)));
      const double M = std::ldexp(static_cast<double>(c), k);
      if (M > 1 << 20) throw std::invalid_argument("msm: the grid spacing is too small for the box");
      l1.dims[d] = static_cast<int>(M);
      l1.h[d] = box[d] / M;
    }
    levels.push_back(l1);
    for (int l = 1; l <= k; ++l) {
      MsmLevel c;
      for (int d = 0; d < 3; ++d) c.dims[d] = levels.back().dims[d] / 2, c.h[d] = 2 * levels.back().h[d];
      levels.push_back(c);
    }
    return levels;
  }
  // Open: grid index 0 at lattice point (0,0,0); the finest grid covers the P-point stencils of
  // every atom and lattice point.
  *grid_origin = {0, 0, 0};
  for (int d = 0; d < 3; ++d) {
    const double lat_hi = (g.dims[d] - 1) * g.spacing[d];
    const double lo = std::min(0.0, atoms.lo[d]), hi = std::max(lat_hi, atoms.hi[d]);
    if ((hi - lo) / h > 1e7) throw std::invalid_argument("msm: the atoms and the lattice span too many grid spacings");
    l1.lo[d] = static_cast<int>(std::floor(lo / h)) - (P / 2 - 1);
    l1.dims[d] = static_cast<int>(std::floor(hi / h)) + P / 2 - l1.lo[d] + 1;
    l1.h[d] = h;
  }
  levels.push_back(l1);
  // Coarser levels while the level is larger than one stencil (below that, summing the top level
  // over all pairs costs less than another level's stencil sums).
  while (static_cast<int>(levels.size()) < kMaxLevels && levels.back().size() > static_cast<size_t>(stencil_points)) {
    const MsmLevel& f = levels.back();
    MsmLevel c;
    for (int d = 0; d < 3; ++d) {
      c.lo[d] = ceil_div(f.lo[d] - (P - 1), 2);
      const int hi = msm::floor_div(f.lo[d] + f.dims[d] - 1 + (P - 1), 2);
      c.dims[d] = hi - c.lo[d] + 1;
      c.h[d] = 2 * f.h[d];
    }
    if (2 * c.size() > f.size()) break;  // the margins of the stencils dominate: no gain
    levels.push_back(c);
  }
  return levels;
}

// Points of the level stencil with a nonzero weight: |s h| < 2a.
int stencil_points(const std::array<double, 3>& h, double a) {
  int R[3], n = 0;
  for (int d = 0; d < 3; ++d) R[d] = static_cast<int>(std::ceil(2 * a / h[d]));
  for (int z = -R[2]; z <= R[2]; ++z)
    for (int y = -R[1]; y <= R[1]; ++y)
      for (int x = -R[0]; x <= R[0]; ++x) {
        const double r2 = x * x * h[0] * h[0] + y * y * h[1] * h[1] + z * z * h[2] * h[2];
        n += r2 < 4 * a * a;
      }
  return n;
}

// Work of each step, in units that the per-backend rates of estimate_map_cost turn into seconds.
struct Work {
  double exact = 0;         // atom-point evaluations of the exact sum
  double short_visits = 0;  // atom-point pairs the short-range tiles visit
  double grid = 0;          // grid multiply-adds: level stencils, top level, restriction, prolongation
  double points = 0;        // lattice points (interpolation)
  double atoms = 0;         // atoms (binning, anterpolation)
};

Work work_of(const std::vector<MsmLevel>& levels, int S, int P, double a, size_t natoms, double atom_volume,
             const Grid3& g) {
  Work w;
  const double points = static_cast<double>(g.size());
  w.exact = points * static_cast<double>(natoms);
  // The atoms a tile's rows hold: a ball of radius a grown by half the tile's extent and one cell.
  double t = 0, hmax = 0;
  for (int d = 0; d < 3; ++d)
    t += (std::min(g.dims[d], kTile) - 1) * g.spacing[d] / 3, hmax = std::max(hmax, levels[0].h[d]);
  const double reach = a + 0.5 * t + hmax;
  const double density = static_cast<double>(natoms) / std::max(atom_volume, 1e-300);
  w.short_visits = points * std::min(static_cast<double>(natoms), density * 4.18879 * reach * reach * reach);
  for (size_t l = 0; l + 1 < levels.size(); ++l)
    w.grid += static_cast<double>(levels[l].size()) * (S + 2 * std::pow(P + 1.0, 3) / 8);
  w.grid += std::pow(static_cast<double>(levels.back().size()), 2);
  w.points = points;
  w.atoms = static_cast<double>(natoms);
  return w;
}

double atom_volume(const Extent& e, bool periodic, const std::array<double, 3>& box, double a) {
  double v = 1;
  for (int d = 0; d < 3; ++d) v *= periodic ? box[d] : std::max(e.hi[d] - e.lo[d], a);
  return v;
}

// Seconds per unit of work (docs/potential_maps.md says where they come from).
struct Rates {
  double exact, short_visit, grid, point, atom;
};
Rates rates(bool gpu) {
  if (gpu) return {1 / 3.8e12, 1 / 1.2e12, 1 / 2e12, 1 / 2e10, 1 / 2e9};
  // Per core of the development VM (GCC 12 -O3, AVX2 doubles); divided by the threads.
  double threads = 1;
#ifdef _OPENMP
  threads = omp_get_max_threads();
#endif
  return {1 / (1.2e8 * threads), 1 / (1.3e8 * threads), 1 / (1.0e9 * threads), 1 / (1e8 * threads), 1 / 2e7};
}

double seconds_of(const Work& w, const Rates& r) {
  return w.short_visits * r.short_visit + w.grid * r.grid + w.points * r.point + w.atoms * r.atom;
}

// The automatic splitting distance: the a (on a geometric ladder from the smallest allowed)
// that minimises the estimated cost.
double choose_cutoff(const MsmParams& p, double floor, const Extent& atoms, const Grid3& g,
                     const std::array<double, 3>& box, size_t natoms, bool gpu) {
  double smax = std::max({g.spacing[0], g.spacing[1], g.spacing[2]});
  const double a_min = std::max(4 * floor, 2 * smax);
  double a_max = 0;
  for (int d = 0; d < 3; ++d)
    a_max = std::max(a_max, p.periodic ? box[d] : std::max(atoms.hi[d] - atoms.lo[d], g.dims[d] * g.spacing[d]));
  a_max = std::max(a_min, 0.5 * a_max);
  const double ratio = default_ratio(p.order, p.periodic);
  double best_a = a_min, best = std::numeric_limits<double>::infinity();
  for (double a = a_min; a <= a_max * 1.0001; a *= 1.12) {
    const double h = p.grid_spacing > 0 ? p.grid_spacing : a / ratio;
    if (2 * a / h > 64) break;  // make_msm_plan's limit; larger a only grow the stencil
    std::array<double, 3> origin{};
    std::vector<MsmLevel> levels;
    try {
      levels = level_geometry(p.periodic, p.order, h, atoms, g, box, &origin, 0);
    } catch (const std::invalid_argument&) {
      continue;
    }
    if (levels[0].size() > kMaxGridPoints) continue;
    const int S = stencil_points(levels[0].h, a);
    levels = level_geometry(p.periodic, p.order, h, atoms, g, box, &origin, S);
    const double s =
        seconds_of(work_of(levels, S, p.order, a, natoms, atom_volume(atoms, p.periodic, box, a), g), rates(gpu));
    if (s < best) best = s, best_a = a;
  }
  return best_a;
}

template <int P>
void fill_interp(MsmPlan& plan) {
  const MsmLevel& l = plan.levels[0];
  for (int d = 0; d < 3; ++d) {
    const int n = plan.lattice_dims[d];
    plan.interp_index[d].resize(static_cast<size_t>(n) * P);
    plan.interp_weight[d].resize(static_cast<size_t>(n) * P);
    for (int i = 0; i < n; ++i) {
      double w[P];
      const double u = (i * plan.lattice_spacing[d] - plan.grid_origin[d]) / l.h[d];
      const int first = msm::stencil_weights<P>(u, w);
      for (int k = 0; k < P; ++k) {
        const int m = first + k;
        int idx = plan.periodic ? msm::wrap_index(m, l.dims[d]) : m - l.lo[d];
        if (idx < 0 || idx >= l.dims[d]) throw std::logic_error("msm: a lattice point's stencil leaves the grid");
        plan.interp_index[d][static_cast<size_t>(i) * P + k] = idx;
        plan.interp_weight[d][static_cast<size_t>(i) * P + k] = w[k];
      }
    }
  }
}

void fill_stencil(MsmPlan& plan) {
  const std::array<double, 3>& h = plan.levels[0].h;
  const double a = plan.a;
  double c2[5];
  msm::softening_polynomial(plan.split, 2 * a, c2);
  int R[3];
  for (int d = 0; d < 3; ++d) R[d] = plan.radius[d] = static_cast<int>(std::ceil(2 * a / h[d]));
  const int wx = 2 * R[0] + 1, wy = 2 * R[1] + 1, wz = 2 * R[2] + 1;
  plan.stencil.assign(static_cast<size_t>(wx) * wy * wz, 0.0);
  plan.row_reach.assign(static_cast<size_t>(wy) * wz, -1);
  for (int z = -R[2]; z <= R[2]; ++z)
    for (int y = -R[1]; y <= R[1]; ++y)
      for (int x = -R[0]; x <= R[0]; ++x) {
        const double r = std::sqrt(x * x * h[0] * h[0] + y * y * h[1] * h[1] + z * z * h[2] * h[2]);
        if (!(r < 2 * a)) continue;
        const double w = msm::softened(plan.coef.data(), plan.split, a, r) - msm::softened(c2, plan.split, 2 * a, r);
        plan.stencil[(static_cast<size_t>(z + R[2]) * wy + (y + R[1])) * wx + (x + R[0])] = w;
        int& reach = plan.row_reach[static_cast<size_t>(z + R[2]) * wy + (y + R[1])];
        reach = std::max(reach, std::abs(x));
      }
}

void fill_top(MsmPlan& plan) {
  const MsmLevel& t = plan.levels.back();
  const double aL = std::ldexp(plan.a, static_cast<int>(plan.levels.size()) - 1);
  double c[5];
  msm::softening_polynomial(plan.split, aL, c);
  if (!plan.periodic) {
    const int wx = 2 * t.dims[0] - 1, wy = 2 * t.dims[1] - 1, wz = 2 * t.dims[2] - 1;
    plan.top.assign(static_cast<size_t>(wx) * wy * wz, 0.0);
    for (int z = 0; z < wz; ++z)
      for (int y = 0; y < wy; ++y)
        for (int x = 0; x < wx; ++x) {
          const double dx = (x - t.dims[0] + 1) * t.h[0], dy = (y - t.dims[1] + 1) * t.h[1],
                       dz = (z - t.dims[2] + 1) * t.h[2];
          plan.top[(static_cast<size_t>(z) * wy + y) * wx + x] =
              msm::softened(c, plan.split, aL, std::sqrt(dx * dx + dy * dy + dz * dz));
        }
    return;
  }
  // Periodic: K(d) = sum over images n of g_{a_L}(|d + nL|) with the neutralising background
  //   = phi_E(d) - sum_{|d + nL| < a_L} (1/|d + nL| - g_{a_L}(|d + nL|)),
  // phi_E the Ewald potential; the n = 0 term at d = 0 is taken with phi_E's regular part.
  const EwaldKernel ewald(plan.box);
  const double* L = plan.box.data();
  int n[3];
  for (int d = 0; d < 3; ++d) n[d] = static_cast<int>(std::ceil(aL / L[d])) + 1;
  plan.top.assign(t.size(), 0.0);
  for (int z = 0; z < t.dims[2]; ++z)
    for (int y = 0; y < t.dims[1]; ++y)
      for (int x = 0; x < t.dims[0]; ++x) {
        const double d[3] = {x * t.h[0], y * t.h[1], z * t.h[2]};
        double k = ewald.regular(d[0], d[1], d[2]);
        for (int iz = -n[2]; iz <= n[2]; ++iz)
          for (int iy = -n[1]; iy <= n[1]; ++iy)
            for (int ix = -n[0]; ix <= n[0]; ++ix) {
              const double e[3] = {d[0] + ix * L[0], d[1] + iy * L[1], d[2] + iz * L[2]};
              const double r = std::sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2]);
              const bool self = ix == 0 && iy == 0 && iz == 0;
              if (self)
                k += r < aL ? msm::softened(c, plan.split, aL, r) : 1.0 / r;
              else if (r < aL)
                k -= 1.0 / r - msm::softened(c, plan.split, aL, r);
            }
        plan.top[(static_cast<size_t>(z) * t.dims[1] + y) * t.dims[0] + x] = k;
      }
}

}  // namespace

std::string MsmPlan::describe() const {
  std::ostringstream s;
  s << "msm: a = " << a << ", h = " << levels[0].h[0];
  if (levels[0].h[1] != levels[0].h[0] || levels[0].h[2] != levels[0].h[0])
    s << " x " << levels[0].h[1] << " x " << levels[0].h[2];
  s << ", " << (order == 4 ? "cubic" : "quintic") << ", " << (periodic ? "periodic" : "open") << ", " << levels.size()
    << " level(s):";
  for (const MsmLevel& l : levels) s << " " << l.dims[0] << "x" << l.dims[1] << "x" << l.dims[2];
  return s.str();
}

MsmPlan make_msm_plan(const ChargeList& c, const Grid3& g, const MsmParams& p, double floor, const Box* box) {
  if (p.order != 4 && p.order != 6)
    throw std::invalid_argument("msm: the interpolation order must be 4 (cubic) or 6 (quintic)");
  if (!(floor > 0)) throw std::invalid_argument("msm: the distance floor must be > 0");
  if (!(p.cutoff >= 0) || !(p.grid_spacing >= 0))
    throw std::invalid_argument("msm: cutoff and grid spacing must be >= 0");
  if (g.size() == 0) throw std::invalid_argument("msm: empty lattice");
  MsmPlan plan;
  plan.periodic = p.periodic;
  plan.order = p.order;
  plan.split = split_order(p.order);
  plan.floor = floor;
  plan.lattice_dims = g.dims;
  plan.lattice_spacing = g.spacing;
  if (p.periodic) {
    if (!box || !box->periodic)
      throw std::invalid_argument("potential map: boundary periodic needs a periodic simulation box");
    plan.box = {box->L.x, box->L.y, box->L.z};
    plan.grid_origin = {box->lo.x - g.origin[0], box->lo.y - g.origin[1], box->lo.z - g.origin[2]};
  }
  const Extent atoms = c.size() ? atom_extent(c, g) : Extent{{0, 0, 0}, {0, 0, 0}};
  plan.a = p.cutoff > 0 ? p.cutoff : choose_cutoff(p, floor, atoms, g, plan.box, c.size(), p.gpu);
  plan.atom_volume = atom_volume(atoms, p.periodic, plan.box, plan.a);
  if (!(plan.a > floor))
    throw std::invalid_argument("msm: the cutoff (splitting distance) must be larger than the distance floor");
  const double h = p.grid_spacing > 0 ? p.grid_spacing : plan.a / default_ratio(p.order, p.periodic);
  plan.h_target = h;
  if (2 * plan.a / h > 64) throw std::invalid_argument("msm: cutoff / grid spacing must be at most 32");
  msm::softening_polynomial(plan.split, plan.a, plan.coef.data());
  std::array<double, 3> origin = plan.grid_origin;
  std::vector<MsmLevel> levels = level_geometry(p.periodic, p.order, h, atoms, g, plan.box, &origin, 0);
  if (static_cast<double>(levels[0].size()) > kMaxGridPoints)
    throw std::invalid_argument("msm: the finest grid would have more than 2^28 points; use a larger grid spacing");
  const int S = stencil_points(levels[0].h, plan.a);
  plan.levels = level_geometry(p.periodic, p.order, h, atoms, g, plan.box, &origin, S);
  plan.grid_origin = origin;
  if (plan.levels.size() > 1) fill_stencil(plan);
  fill_top(plan);
  if (p.order == 4)
    fill_interp<4>(plan);
  else
    fill_interp<6>(plan);
  return plan;
}

MsmAtoms msm_atoms(const MsmPlan& plan, const ChargeList& c, const Grid3& g) {
  MsmAtoms a;
  a.x.resize(c.size()), a.y.resize(c.size()), a.z.resize(c.size());
  a.q = c.q;
  std::vector<double>* out[3] = {&a.x, &a.y, &a.z};
  const std::vector<double>* in[3] = {&c.x, &c.y, &c.z};
  for (int d = 0; d < 3; ++d)
    for (size_t i = 0; i < c.size(); ++i) {
      double x = (*in[d])[i] - g.origin[d] - plan.grid_origin[d];
      if (plan.periodic) {
        const double L = plan.box[d];
        x -= L * std::floor(x / L);
        if (x >= L || x < 0) x = 0;  // x a hair below a multiple of L rounded up to it
      }
      (*out[d])[i] = x;
    }
  return a;
}

namespace {

msm::BinGrid<double> bin_grid(const MsmPlan& plan) {
  msm::BinGrid<double> b{};
  const MsmLevel& l = plan.levels[0];
  for (int d = 0; d < 3; ++d) {
    b.nb[d] = l.dims[d];
    b.lo[d] = plan.periodic ? 0 : l.lo[d];
    b.h[d] = l.h[d];
    b.L[d] = plan.periodic ? plan.box[d] : 0;
  }
  b.periodic = plan.periodic;
  return b;
}

// Counting sort of the atoms into bins (stable: by atom index within a bin).
struct Binned {
  std::vector<int> start;  // bins + 1
  std::vector<double> x, y, z, q;
};

Binned bin_atoms(const msm::BinGrid<double>& b, const MsmAtoms& a) {
  const size_t nbins = static_cast<size_t>(b.nb[0]) * b.nb[1] * b.nb[2], n = a.q.size();
  Binned out;
  out.start.assign(nbins + 1, 0);
  std::vector<int> bin(n);
  for (size_t i = 0; i < n; ++i) {
    const double x[3] = {a.x[i], a.y[i], a.z[i]};
    bin[i] = msm::bin_of(b, x);
    ++out.start[bin[i] + 1];
  }
  for (size_t k = 0; k < nbins; ++k) out.start[k + 1] += out.start[k];
  std::vector<int> cursor(out.start.begin(), out.start.end() - 1);
  out.x.resize(n), out.y.resize(n), out.z.resize(n), out.q.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const int s = cursor[bin[i]]++;
    out.x[s] = a.x[i], out.y[s] = a.y[i], out.z[s] = a.z[i], out.q[s] = a.q[i];
  }
  return out;
}

template <int K>
void short_range_tiles(const MsmPlan& plan, const Binned& bins, const msm::BinGrid<double>& bg,
                       std::vector<double>& out) {
  const int nx = plan.lattice_dims[0], ny = plan.lattice_dims[1], nz = plan.lattice_dims[2];
  const int tx = (nx + kTile - 1) / kTile, ty = (ny + kTile - 1) / kTile, tz = (nz + kTile - 1) / kTile;
  const double a = plan.a, a2 = a * a, floor2 = plan.floor * plan.floor;
  const double* coef = plan.coef.data();
  const double* s = plan.lattice_spacing.data();
  const double* G = plan.grid_origin.data();
#pragma omp parallel
  {
    std::vector<double> cx, cy, cz, cq;
#pragma omp for schedule(dynamic, 1)
    for (long t = 0; t < static_cast<long>(tx) * ty * tz; ++t) {
      const int i0 = static_cast<int>(t % tx) * kTile, j0 = static_cast<int>((t / tx) % ty) * kTile,
                k0 = static_cast<int>(t / (static_cast<long>(tx) * ty)) * kTile;
      const int i1 = std::min(nx, i0 + kTile), j1 = std::min(ny, j0 + kTile), k1 = std::min(nz, k0 + kTile);
      const double bmin[3] = {i0 * s[0] - G[0], j0 * s[1] - G[1], k0 * s[2] - G[2]};
      const double bmax[3] = {(i1 - 1) * s[0] - G[0], (j1 - 1) * s[1] - G[1], (k1 - 1) * s[2] - G[2]};
      const msm::TileRows rows = msm::tile_rows(bg, bmin, bmax, a);
      cx.clear(), cy.clear(), cz.clear(), cq.clear();
      for (int r = 0; r < rows.count(); ++r) {
        msm::RowSegment<double> seg;
        if (!msm::tile_row(bg, rows, bmin, bmax, a, r, seg)) continue;
        for (int i = bins.start[seg.first]; i < bins.start[seg.last + 1]; ++i) {
          cx.push_back(bins.x[i] + seg.shift[0]);
          cy.push_back(bins.y[i] + seg.shift[1]);
          cz.push_back(bins.z[i] + seg.shift[2]);
          cq.push_back(bins.q[i]);
        }
      }
      const long nc = static_cast<long>(cq.size());
      const double *ax = cx.data(), *ay = cy.data(), *az = cz.data(), *aq = cq.data();
      for (int k = k0; k < k1; ++k)
        for (int j = j0; j < j1; ++j)
          for (int i = i0; i < i1; ++i) {
            const double px = i * s[0] - G[0], py = j * s[1] - G[1], pz = k * s[2] - G[2];
            double v = 0;
#pragma omp simd reduction(+ : v)
            for (long c = 0; c < nc; ++c) {
              const double dx = px - ax[c], dy = py - ay[c], dz = pz - az[c];
              const double r2 = dx * dx + dy * dy + dz * dz;
              const double rf2 = r2 > floor2 ? r2 : floor2;
              const double term = 1.0 / std::sqrt(rf2) - msm::softening_poly<K>(coef, r2);
              v += r2 < a2 ? aq[c] * term : 0.0;
            }
            out[(static_cast<size_t>(k) * ny + j) * nx + i] = v;
          }
    }
  }
}

// Level storage index of absolute point m (open) or wrapped m (periodic); -1 outside an open grid.
inline int level_index(const MsmLevel& l, int d, int m, bool periodic) {
  if (periodic) return msm::wrap_index(m, l.dims[d]);
  const int i = m - l.lo[d];
  return (i >= 0 && i < l.dims[d]) ? i : -1;
}

template <int P>
void anterpolate(const MsmPlan& plan, const MsmAtoms& a, std::vector<double>& q1) {
  const MsmLevel& l = plan.levels[0];
  q1.assign(l.size(), 0.0);
  for (size_t i = 0; i < a.q.size(); ++i) {
    double w[3][P];
    int first[3];
    const double x[3] = {a.x[i], a.y[i], a.z[i]};
    for (int d = 0; d < 3; ++d) first[d] = msm::stencil_weights<P>(x[d] / l.h[d], w[d]);
    int idx[3][P];
    for (int d = 0; d < 3; ++d)
      for (int k = 0; k < P; ++k) {
        idx[d][k] = level_index(l, d, first[d] + k, plan.periodic);
        if (idx[d][k] < 0) throw std::logic_error("msm: an atom's stencil leaves the grid");
      }
    for (int c = 0; c < P; ++c)
      for (int b = 0; b < P; ++b) {
        const double qw = a.q[i] * w[2][c] * w[1][b];
        double* row = q1.data() + (static_cast<size_t>(idx[2][c]) * l.dims[1] + idx[1][b]) * l.dims[0];
        for (int k = 0; k < P; ++k) row[idx[0][k]] += qw * w[0][k];
      }
  }
}

// Coarse point n gathers fine points 2n + d, |d| <= P - 1, with weight Phi(d/2) per direction.
template <int P>
void restrict_level(const MsmLevel& f, const MsmLevel& c, bool periodic, const std::vector<double>& qf,
                    std::vector<double>& qc) {
  double w[2 * P - 1];
  for (int d = 0; d < 2 * P - 1; ++d) w[d] = msm::restriction_weight<P>(d - (P - 1));
  qc.assign(c.size(), 0.0);
#pragma omp parallel for schedule(static)
  for (int z = 0; z < c.dims[2]; ++z)
    for (int y = 0; y < c.dims[1]; ++y)
      for (int x = 0; x < c.dims[0]; ++x) {
        const int n[3] = {x + c.lo[0], y + c.lo[1], z + c.lo[2]};
        double sum = 0;
        for (int dz = 0; dz < 2 * P - 1; ++dz) {
          if (w[dz] == 0) continue;
          const int iz = level_index(f, 2, 2 * n[2] + dz - (P - 1), periodic);
          if (iz < 0) continue;
          for (int dy = 0; dy < 2 * P - 1; ++dy) {
            if (w[dy] == 0) continue;
            const int iy = level_index(f, 1, 2 * n[1] + dy - (P - 1), periodic);
            if (iy < 0) continue;
            const double* row = qf.data() + (static_cast<size_t>(iz) * f.dims[1] + iy) * f.dims[0];
            for (int dx = 0; dx < 2 * P - 1; ++dx) {
              if (w[dx] == 0) continue;
              const int ix = level_index(f, 0, 2 * n[0] + dx - (P - 1), periodic);
              if (ix >= 0) sum += w[dz] * w[dy] * w[dx] * row[ix];
            }
          }
        }
        qc[(static_cast<size_t>(z) * c.dims[1] + y) * c.dims[0] + x] = sum;
      }
}

// Fine point m adds coarse points n with |m - 2n| <= P - 1, weight Phi((m - 2n)/2) per direction.
template <int P>
void prolong_level(const MsmLevel& f, const MsmLevel& c, bool periodic, const std::vector<double>& ec,
                   std::vector<double>& ef) {
#pragma omp parallel for schedule(static)
  for (int z = 0; z < f.dims[2]; ++z)
    for (int y = 0; y < f.dims[1]; ++y)
      for (int x = 0; x < f.dims[0]; ++x) {
        const int m[3] = {x + f.lo[0], y + f.lo[1], z + f.lo[2]};
        int n0[3], cnt[3];
        for (int d = 0; d < 3; ++d) {
          n0[d] = ceil_div(m[d] - (P - 1), 2);
          cnt[d] = msm::floor_div(m[d] + (P - 1), 2) - n0[d] + 1;
        }
        double sum = 0;
        for (int kz = 0; kz < cnt[2]; ++kz) {
          const int nz = n0[2] + kz;
          const double wz = msm::restriction_weight<P>(m[2] - 2 * nz);
          const int iz = level_index(c, 2, nz, periodic);
          if (wz == 0 || iz < 0) continue;
          for (int ky = 0; ky < cnt[1]; ++ky) {
            const int ny = n0[1] + ky;
            const double wy = msm::restriction_weight<P>(m[1] - 2 * ny);
            const int iy = level_index(c, 1, ny, periodic);
            if (wy == 0 || iy < 0) continue;
            for (int kx = 0; kx < cnt[0]; ++kx) {
              const int nx = n0[0] + kx;
              const double wx = msm::restriction_weight<P>(m[0] - 2 * nx);
              const int ix = level_index(c, 0, nx, periodic);
              if (wx == 0 || ix < 0) continue;
              sum += wz * wy * wx * ec[(static_cast<size_t>(iz) * c.dims[1] + iy) * c.dims[0] + ix];
            }
          }
        }
        ef[(static_cast<size_t>(z) * f.dims[1] + y) * f.dims[0] + x] += sum;
      }
}

// e = scale * (stencil * q) on level l: q padded by the stencil radius (zeros, or wrapped copies
// where periodic), then rows of the output accumulate shifted rows of the padded input.
void level_sum(const MsmPlan& plan, const MsmLevel& l, double scale, const std::vector<double>& q,
               std::vector<double>& e) {
  const int* R = plan.radius.data();
  const int px = l.dims[0] + 2 * R[0], py = l.dims[1] + 2 * R[1], pz = l.dims[2] + 2 * R[2];
  std::vector<double> pad(static_cast<size_t>(px) * py * pz, 0.0);
  for (int z = 0; z < pz; ++z)
    for (int y = 0; y < py; ++y)
      for (int x = 0; x < px; ++x) {
        int s[3] = {x - R[0], y - R[1], z - R[2]};
        bool inside = true;
        for (int d = 0; d < 3; ++d) {
          if (plan.periodic)
            s[d] = msm::wrap_index(s[d], l.dims[d]);
          else
            inside = inside && s[d] >= 0 && s[d] < l.dims[d];
        }
        if (inside)
          pad[(static_cast<size_t>(z) * py + y) * px + x] =
              q[(static_cast<size_t>(s[2]) * l.dims[1] + s[1]) * l.dims[0] + s[0]];
      }
  const int wx = 2 * R[0] + 1, wy = 2 * R[1] + 1;
  e.assign(l.size(), 0.0);
#pragma omp parallel for schedule(dynamic, 1)
  for (long r = 0; r < static_cast<long>(l.dims[1]) * l.dims[2]; ++r) {
    const int y = static_cast<int>(r % l.dims[1]), z = static_cast<int>(r / l.dims[1]);
    double* out = e.data() + static_cast<size_t>(r) * l.dims[0];
    for (int sz = -R[2]; sz <= R[2]; ++sz)
      for (int sy = -R[1]; sy <= R[1]; ++sy) {
        const int reach = plan.row_reach[static_cast<size_t>(sz + R[2]) * wy + sy + R[1]];
        if (reach < 0) continue;
        const double* in = pad.data() + (static_cast<size_t>(z + R[2] + sz) * py + (y + R[1] + sy)) * px + R[0];
        const double* w = plan.stencil.data() + (static_cast<size_t>(sz + R[2]) * wy + sy + R[1]) * wx + R[0];
        for (int sx = -reach; sx <= reach; ++sx) {
          const double ws = scale * w[sx];
          const double* src = in + sx;
#pragma omp simd
          for (int x = 0; x < l.dims[0]; ++x) out[x] += ws * src[x];
        }
      }
  }
}

void top_sum(const MsmPlan& plan, const std::vector<double>& q, std::vector<double>& e) {
  const MsmLevel& t = plan.levels.back();
  const int D[3] = {t.dims[0], t.dims[1], t.dims[2]};
  e.assign(t.size(), 0.0);
  const long n = static_cast<long>(t.size());
#pragma omp parallel for schedule(static)
  for (long m = 0; m < n; ++m) {
    const int mx = static_cast<int>(m % D[0]), my = static_cast<int>((m / D[0]) % D[1]),
              mz = static_cast<int>(m / (static_cast<long>(D[0]) * D[1]));
    double sum = 0;
    for (int z = 0; z < D[2]; ++z)
      for (int y = 0; y < D[1]; ++y) {
        const double* qrow = q.data() + (static_cast<size_t>(z) * D[1] + y) * D[0];
        if (plan.periodic) {
          const double* krow =
              plan.top.data() +
              (static_cast<size_t>(msm::wrap_index(mz - z, D[2])) * D[1] + msm::wrap_index(my - y, D[1])) * D[0];
          for (int x = 0; x < D[0]; ++x) sum += krow[msm::wrap_index(mx - x, D[0])] * qrow[x];
        } else {
          const int wx = 2 * D[0] - 1, wy = 2 * D[1] - 1;
          const double* krow = plan.top.data() +
                               (static_cast<size_t>(mz - z + D[2] - 1) * wy + (my - y + D[1] - 1)) * wx + mx + D[0] - 1;
          for (int x = 0; x < D[0]; ++x) sum += krow[-x] * qrow[x];
        }
      }
    e[m] = sum;
  }
}

template <int P>
std::vector<double> grid_potential(const MsmPlan& plan, const MsmAtoms& atoms) {
  const size_t L = plan.levels.size();
  std::vector<std::vector<double>> q(L), e(L);
  anterpolate<P>(plan, atoms, q[0]);
  for (size_t l = 0; l + 1 < L; ++l)
    restrict_level<P>(plan.levels[l], plan.levels[l + 1], plan.periodic, q[l], q[l + 1]);
  for (size_t l = 0; l + 1 < L; ++l) level_sum(plan, plan.levels[l], std::ldexp(1.0, -static_cast<int>(l)), q[l], e[l]);
  top_sum(plan, q[L - 1], e[L - 1]);
  for (size_t l = L - 1; l > 0; --l)
    prolong_level<P>(plan.levels[l - 1], plan.levels[l], plan.periodic, e[l], e[l - 1]);
  return e[0];
}

// out(i, j, k) += sum over the P^3 grid points of the weights times e: first along x for every
// grid row (T1, lattice x by grid y by grid z), then P^2 rows of T1 per lattice row.
template <int P>
void interpolate(const MsmPlan& plan, const std::vector<double>& e, std::vector<double>& out) {
  const MsmLevel& l = plan.levels[0];
  const int nx = plan.lattice_dims[0], ny = plan.lattice_dims[1], nz = plan.lattice_dims[2];
  const int gy = l.dims[1], gz = l.dims[2];
  std::vector<double> t1(static_cast<size_t>(nx) * gy * gz);
  const int* ix = plan.interp_index[0].data();
  const double* wx = plan.interp_weight[0].data();
#pragma omp parallel for schedule(static)
  for (long r = 0; r < static_cast<long>(gy) * gz; ++r) {
    const double* row = e.data() + static_cast<size_t>(r) * l.dims[0];
    double* o = t1.data() + static_cast<size_t>(r) * nx;
    for (int i = 0; i < nx; ++i) {
      double v = 0;
      for (int k = 0; k < P; ++k) v += wx[i * P + k] * row[ix[i * P + k]];
      o[i] = v;
    }
  }
#pragma omp parallel for schedule(static)
  for (long r = 0; r < static_cast<long>(ny) * nz; ++r) {
    const int j = static_cast<int>(r % ny), k = static_cast<int>(r / ny);
    double* o = out.data() + static_cast<size_t>(r) * nx;
    for (int c = 0; c < P; ++c)
      for (int b = 0; b < P; ++b) {
        const double w = plan.interp_weight[2][static_cast<size_t>(k) * P + c] *
                         plan.interp_weight[1][static_cast<size_t>(j) * P + b];
        const double* src =
            t1.data() + (static_cast<size_t>(plan.interp_index[2][static_cast<size_t>(k) * P + c]) * gy +
                         plan.interp_index[1][static_cast<size_t>(j) * P + b]) *
                            nx;
#pragma omp simd
        for (int i = 0; i < nx; ++i) o[i] += w * src[i];
      }
  }
}

}  // namespace

void msm_short_range_cpu(const MsmPlan& plan, const MsmAtoms& atoms, std::vector<double>& out) {
  out.assign(plan.lattice_points(), 0.0);
  if (atoms.q.empty()) return;
  const msm::BinGrid<double> bg = bin_grid(plan);
  const Binned bins = bin_atoms(bg, atoms);
  switch (plan.split) {
    case 2:
      return short_range_tiles<2>(plan, bins, bg, out);
    case 3:
      return short_range_tiles<3>(plan, bins, bg, out);
  }
  throw std::logic_error("msm: unsupported splitting order");
}

std::vector<double> msm_grid_potential_cpu(const MsmPlan& plan, const MsmAtoms& atoms) {
  return plan.order == 4 ? grid_potential<4>(plan, atoms) : grid_potential<6>(plan, atoms);
}

void msm_long_range_cpu(const MsmPlan& plan, const MsmAtoms& atoms, std::vector<double>& out) {
  if (atoms.q.empty()) return;
  const std::vector<double> e = msm_grid_potential_cpu(plan, atoms);
  if (plan.order == 4)
    interpolate<4>(plan, e, out);
  else
    interpolate<6>(plan, e, out);
}

MsmPlan potential_msm_cpu(const ChargeList& c, double k_e, double floor, const MsmParams& params, const Box* box,
                          Grid3& g) {
  MsmPlan plan = make_msm_plan(c, g, params, floor, box);
  compute_msm_potential(plan, c, k_e, false, g);
  return plan;
}

dcs::MsmGpuPlan msm_gpu_plan(const MsmPlan& plan) {
  dcs::MsmGpuPlan g;
  g.order = plan.order;
  g.split = plan.split;
  g.periodic = plan.periodic;
  g.a = static_cast<float>(plan.a);
  g.floor2 = static_cast<float>(plan.floor * plan.floor);
  for (int j = 0; j <= plan.split; ++j) g.coef[j] = static_cast<float>(plan.coef[j]);
  g.nx = plan.lattice_dims[0], g.ny = plan.lattice_dims[1], g.nz = plan.lattice_dims[2];
  for (int d = 0; d < 3; ++d) {
    g.s[d] = static_cast<float>(plan.lattice_spacing[d]);
    g.origin[d] = static_cast<float>(plan.grid_origin[d]);
    g.h[d] = static_cast<float>(plan.levels[0].h[d]);
    g.box[d] = static_cast<float>(plan.box[d]);
    g.radius[d] = plan.radius[d];
    g.interp_index[d] = plan.interp_index[d];
    g.interp_weight[d].assign(plan.interp_weight[d].begin(), plan.interp_weight[d].end());
  }
  for (const MsmLevel& l : plan.levels) {
    dcs::MsmGpuLevel gl;
    for (int d = 0; d < 3; ++d) gl.lo[d] = l.lo[d], gl.dims[d] = l.dims[d];
    g.levels.push_back(gl);
  }
  g.stencil.assign(plan.stencil.begin(), plan.stencil.end());
  g.row_reach = plan.row_reach;
  g.top.assign(plan.top.begin(), plan.top.end());
  return g;
}

std::vector<float> msm_gpu_atoms(const MsmAtoms& a) {
  std::vector<float> xyzq(4 * a.q.size());
  for (size_t i = 0; i < a.q.size(); ++i) {
    xyzq[4 * i + 0] = static_cast<float>(a.x[i]);
    xyzq[4 * i + 1] = static_cast<float>(a.y[i]);
    xyzq[4 * i + 2] = static_cast<float>(a.z[i]);
    xyzq[4 * i + 3] = static_cast<float>(a.q[i]);
  }
  return xyzq;
}

double compute_msm_potential(const MsmPlan& plan, const ChargeList& c, double k_e, bool gpu, Grid3& g) {
  if (g.dims != plan.lattice_dims) throw std::invalid_argument("msm: the plan was made for another lattice");
  const MsmAtoms atoms = msm_atoms(plan, c, g);
  if (gpu) {
    const std::vector<float> xyzq = msm_gpu_atoms(atoms);
    std::vector<float> out(plan.lattice_points());
    const dcs::MsmGpuTimes t =
        dcs::gpu_msm_potential(msm_gpu_plan(plan), xyzq.data(), c.size(), out.data(), dcs::MsmGpuOptions{});
    g.values.resize(out.size());
    for (size_t p = 0; p < out.size(); ++p) g.values[p] = k_e * static_cast<double>(out[p]);
    return 1e-3 * t.total;
  }
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<double> v;
  msm_short_range_cpu(plan, atoms, v);
  msm_long_range_cpu(plan, atoms, v);
  for (double& x : v) x *= k_e;
  g.values = std::move(v);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

MapCost estimate_map_cost(const MsmPlan& plan, size_t natoms, bool gpu) {
  Grid3 g;
  g.dims = plan.lattice_dims;
  g.spacing = plan.lattice_spacing;
  const int S =
      static_cast<int>(std::count_if(plan.stencil.begin(), plan.stencil.end(), [](double w) { return w != 0; }));
  const Work w = work_of(plan.levels, S, plan.order, plan.a, natoms, plan.atom_volume, g);
  const Rates r = rates(gpu);
  return {w.exact * r.exact, seconds_of(w, r)};
}

MapAccuracy sampled_accuracy(const ChargeList& c, double k_e, double floor, const Box* periodic_box, const Grid3& map,
                             int samples, unsigned seed) {
  MapAccuracy acc;
  if (samples <= 0 || map.size() == 0) return acc;
  std::vector<size_t> idx;
  if (static_cast<size_t>(samples) >= map.size()) {
    for (size_t p = 0; p < map.size(); ++p) idx.push_back(p);
  } else {
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<size_t> pick(0, map.size() - 1);
    std::vector<char> taken(map.size(), 0);
    while (idx.size() < static_cast<size_t>(samples)) {
      const size_t p = pick(rng);
      if (!taken[p]) taken[p] = 1, idx.push_back(p);
    }
  }
  std::vector<std::array<double, 3>> pts(idx.size());
  for (size_t s = 0; s < idx.size(); ++s) {
    const size_t p = idx[s];
    const int i = static_cast<int>(p % map.dims[0]), j = static_cast<int>((p / map.dims[0]) % map.dims[1]),
              k = static_cast<int>(p / (static_cast<size_t>(map.dims[0]) * map.dims[1]));
    pts[s] = {map.origin[0] + i * map.spacing[0], map.origin[1] + j * map.spacing[1],
              map.origin[2] + k * map.spacing[2]};
  }
  std::vector<double> exact;
  if (periodic_box) {
    exact = ewald_potential_at(c, {periodic_box->L.x, periodic_box->L.y, periodic_box->L.z}, floor, pts);
  } else {
    exact.assign(pts.size(), 0.0);
    const double floor2 = floor * floor;
    const long n = static_cast<long>(c.size());
#pragma omp parallel for schedule(dynamic, 1)
    for (long s = 0; s < static_cast<long>(pts.size()); ++s) {
      double v = 0;
#pragma omp simd reduction(+ : v)
      for (long a = 0; a < n; ++a) {
        const double dx = pts[s][0] - c.x[a], dy = pts[s][1] - c.y[a], dz = pts[s][2] - c.z[a];
        v += c.q[a] / std::sqrt(std::max(dx * dx + dy * dy + dz * dz, floor2));
      }
      exact[s] = v;
    }
  }
  double se = 0, sr = 0;
  for (size_t s = 0; s < idx.size(); ++s) {
    const double ref = k_e * exact[s], e = map.values[idx[s]] - ref;
    se += e * e;
    sr += ref * ref;
    acc.max_abs_err = std::max(acc.max_abs_err, std::fabs(e));
  }
  acc.samples = static_cast<int>(idx.size());
  acc.rel_rms = sr > 0 ? std::sqrt(se / sr) : std::sqrt(se);
  return acc;
}

}  // namespace pairmd
