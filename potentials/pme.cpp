#include "potentials/pme.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <sstream>
#include <stdexcept>
#include <utility>

namespace pairmd {

double ewald_alpha(double cutoff, double accuracy) { return std::sqrt(-std::log(2.0 * accuracy)) / cutoff; }

int fft_friendly_size(int minimum) {
  for (int n = std::max(minimum, 1);; ++n) {
    int rest = n;
    for (int f : {2, 3, 5, 7})
      while (rest % f == 0) rest /= f;
    if (rest == 1) return n;
  }
}

namespace {

// cuFFT's time (ms) for the real-to-complex plus complex-to-real transform of an n^3 float grid,
// every n in 160..512 with no prime factor above 7: NVIDIA H200, CUDA 13, 2026-11-27
// (bench/pme_fft_sizes.cu; scripts/device_run.sh pme_fft). Sizes with 7^2 or 5^3 take two to
// four times as long as their neighbours (294: 1.09 ms, 300: 0.59).
struct FftTime {
  int n;
  double ms;
};
constexpr FftTime kFftTimes[] = {
    {160, 0.0830}, {162, 0.1229}, {168, 0.1250}, {175, 0.1168}, {180, 0.1384}, {189, 0.1768}, {192, 0.1182},
    {196, 0.1517}, {200, 0.1791}, {210, 0.2036}, {216, 0.1636}, {224, 0.2874}, {225, 0.2484}, {240, 0.3070},
    {243, 0.2445}, {245, 0.6630}, {250, 0.3589}, {252, 0.3520}, {256, 0.2656}, {270, 0.3924}, {280, 0.5197},
    {288, 0.5007}, {294, 1.0897}, {300, 0.5863}, {315, 0.6565}, {320, 0.6943}, {324, 0.6720}, {336, 0.9108},
    {343, 0.6623}, {350, 0.9730}, {360, 0.9135}, {375, 2.2865}, {378, 1.0080}, {384, 1.1794}, {392, 1.3311},
    {400, 1.9045}, {405, 1.9042}, {420, 1.5810}, {432, 1.6067}, {441, 1.7943}, {448, 2.2704}, {450, 2.0933},
    {480, 2.3654}, {486, 3.2102}, {490, 2.3786}, {500, 2.5992}, {504, 2.4282}, {512, 2.1550}};
// The other passes over the grid (clear, spread, convert, multiply) per point: ~28 bytes at
// ~4.8 TB/s, in ms.
constexpr double kGridPassMsPerPoint = 28.0 / 4.8e12 * 1e3;

}  // namespace

int pme_fft_size(int minimum) {
  const int first = kFftTimes[0].n, last = kFftTimes[sizeof(kFftTimes) / sizeof(kFftTimes[0]) - 1].n;
  if (minimum < first || minimum > last) return fft_friendly_size(minimum);
  int best = 0;
  double best_cost = 1e300;
  for (const FftTime& t : kFftTimes) {
    if (t.n < minimum) continue;
    const double cost = t.ms + kGridPassMsPerPoint * static_cast<double>(t.n) * t.n * t.n;
    if (cost < best_cost) {
      best_cost = cost;
      best = t.n;
    }
  }
  return best;
}

double pme_grid_factor(int order) { return order <= 4 ? 1.0 : 0.9; }
double pme_grid_exponent(int order) { return order <= 4 ? 1.0 / 3.0 : 1.0 / order; }

int pme_grid_points(double alpha, double length, double accuracy, int order) {
  const double k = std::ceil(pme_grid_factor(order) * alpha * length / std::pow(accuracy, pme_grid_exponent(order)));
  if (!(k < 1e6)) return kPmeMaxGrid + 1;
  return pme_fft_size(std::max(static_cast<int>(k), 2 * order));
}

PmeParams resolve_pme(const PmeSettings& s, const Box& box) {
  if (!box.periodic)
    throw std::invalid_argument(
        "particle-mesh Ewald needs a periodic box (system.periodic: true); an open system has no Ewald sum");
  const double edges[3] = {box.L.x, box.L.y, box.L.z};
  const double shortest = std::min({edges[0], edges[1], edges[2]});
  if (!(2.0 * s.cutoff <= shortest)) {
    std::ostringstream m;
    m << "the box's shortest edge (" << shortest << ") is shorter than twice the real-space cutoff (" << s.cutoff
      << "): the erfc term would reach a particle's own images; use a larger box or a shorter cutoff";
    throw std::invalid_argument(m.str());
  }
  PmeParams p;
  p.alpha = s.alpha;
  p.order = s.order;
  p.prefactor = s.prefactor;
  p.accuracy = s.accuracy;
  p.cutoff = s.cutoff;
  for (int d = 0; d < 3; ++d) {
    if (s.grid[d] > 0)
      p.grid[d] = s.grid[d];
    else if (s.spacing > 0)  // as GROMACS's fourier-spacing: the fastest size at least this fine
      p.grid[d] = edges[d] / s.spacing < 1e6
                      ? pme_fft_size(std::max(static_cast<int>(std::ceil(edges[d] / s.spacing)), 2 * s.order))
                      : kPmeMaxGrid + 1;
    else
      p.grid[d] = pme_grid_points(s.alpha, edges[d], s.accuracy, s.order);
    if (p.grid[d] > kPmeMaxGrid) {
      std::ostringstream m;
      if (s.spacing > 0)
        m << "electrostatics.grid_spacing " << s.spacing << " needs more than " << kPmeMaxGrid
          << " grid points along a box edge of " << edges[d] << "; ask for a larger spacing";
      else
        m << "electrostatics.accuracy " << s.accuracy << " needs more than " << kPmeMaxGrid
          << " grid points along a box edge of " << edges[d]
          << ": it cannot be met here; ask for a larger accuracy (e.g. 1e-5) or a longer cutoff";
      throw std::invalid_argument(m.str());
    }
    if (p.grid[d] < 2 * s.order) {
      std::ostringstream m;
      m << "electrostatics.grid: " << p.grid[d] << " points along an edge is fewer than twice the order (" << s.order
        << ")";
      throw std::invalid_argument(m.str());
    }
  }
  return p;
}

std::string describe_pme(const PmeParams& p, const char* length_unit) {
  std::ostringstream m;
  m << "electrostatics: particle-mesh Ewald, accuracy " << p.accuracy << ": alpha " << p.alpha << " / " << length_unit
    << ", real-space cutoff " << p.cutoff << ", grid " << p.grid[0] << " x " << p.grid[1] << " x " << p.grid[2]
    << ", B-spline order " << p.order;
  return m.str();
}

std::vector<ScaledPair> pme_excluded_pairs(const ForceField& ff, const Topology& topology, size_t n, size_t term) {
  const double* w = ff.special.weights(true);
  std::vector<std::pair<int, int>> listed;  // a pair list's exclusion wins over a bonded weight
  for (const PairList& list : ff.pair_lists)
    if (list.excluded_from(term))
      for (const Bond& b : list.data->pairs) listed.emplace_back(std::min(b.i, b.j), std::max(b.i, b.j));
  std::sort(listed.begin(), listed.end());
  listed.erase(std::unique(listed.begin(), listed.end()), listed.end());
  std::vector<ScaledPair> out;
  for (const auto& [i, j] : listed) out.push_back({i, j, 1.0});
  int max_order = 0;  // the highest order of weight below 1
  for (int order = 1; order <= 3; ++order)
    if (w[order - 1] < 1.0) max_order = order;
  for (const SpecialPair& p : topology.special_pairs(n, max_order)) {
    const double weight = w[p.order - 1];
    if (weight < 1.0 && !std::binary_search(listed.begin(), listed.end(), std::make_pair(p.i, p.j)))
      out.push_back({p.i, p.j, 1.0 - weight});
  }
  std::sort(out.begin(), out.end(),
            [](const ScaledPair& a, const ScaledPair& b) { return a.i != b.i ? a.i < b.i : a.j < b.j; });
  return out;
}

double pme_self_energy(const PmeParams& p, double sum_q2) { return -p.prefactor * p.alpha / std::sqrt(M_PI) * sum_q2; }

double pme_background_energy(const PmeParams& p, double total, double volume) {
  return -p.prefactor * M_PI * total * total / (2.0 * volume * p.alpha * p.alpha);
}

// |b(k)|^2 of one edge: 1 / |sum_t M_n(t) exp(2 pi i k t / K)|^2 (t = 1..n-1). Odd orders
// have a zero at the Nyquist frequency; there (and wherever the sum vanishes) the neighbours'
// mean stands in, as is usual.
std::vector<double> pme_bspline_moduli(int K, int order) {
  double m[kPmeMaxOrder], dm[kPmeMaxOrder];
  bspline_weights(0.0, order, m, dm);  // m[t] = M_n(t)
  std::vector<double> mod(K);
  for (int k = 0; k < K; ++k) {
    std::complex<double> s = 0;
    for (int t = 1; t < order; ++t) s += m[t] * std::polar(1.0, 2.0 * M_PI * k * t / K);
    mod[k] = std::norm(s);
  }
  for (int k = 0; k < K; ++k)
    if (mod[k] < 1e-10) mod[k] = 0.5 * (mod[(k + K - 1) % K] + mod[(k + 1) % K]);
  for (double& v : mod) v = 1.0 / v;
  return mod;
}

PmeInfluence pme_influence(const PmeParams& p, const Box& box) {
  const int nx = p.grid[0], ny = p.grid[1], nz = p.grid[2];
  const std::vector<double> bx = pme_bspline_moduli(nx, p.order), by = pme_bspline_moduli(ny, p.order),
                            bz = pme_bspline_moduli(nz, p.order);
  PmeInfluence f;
  f.g.assign(static_cast<size_t>(nx) * ny * (nz / 2 + 1), 0.0);
  const double pi2_a2 = M_PI * M_PI / (p.alpha * p.alpha);
  for (size_t i = 1; i < f.g.size(); ++i) {  // i = 0 is m = 0
    int kx, ky, kz;
    const Vec3d m = pme_wave_vector<double>(static_cast<int>(i), nx, ny, nz, box.L, kx, ky, kz);
    f.g[i] = pme_gauss_factor(p.prefactor / M_PI, pi2_a2, box.volume(), dot(m, m)) * bx[kx] * by[ky] * bz[kz];
  }
  return f;
}

}  // namespace pairmd
