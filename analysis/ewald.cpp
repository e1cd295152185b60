#include "analysis/ewald.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <stdexcept>

namespace pairmd {

namespace {

constexpr double kPi = 3.14159265358979323846;

double min_of(const std::array<double, 3>& L) { return std::min({L[0], L[1], L[2]}); }

void check_box(const std::array<double, 3>& L) {
  for (double l : L)
    if (!(l > 0) || !std::isfinite(l)) throw std::invalid_argument("ewald: the box lengths must be finite and > 0");
}

}  // namespace

EwaldKernel::EwaldKernel(const std::array<double, 3>& L) : L_(L) {
  check_box(L);
  // Real space: every image closer than r_c to any d with |d_i| < L_i; erfc(6) = 2e-17.
  const double rc = std::max({L[0], L[1], L[2]});
  beta_ = 6.0 / rc;
  int n[3];
  for (int d = 0; d < 3; ++d) n[d] = static_cast<int>(std::ceil(rc / L[d])) + 1;
  for (int z = -n[2]; z <= n[2]; ++z)
    for (int y = -n[1]; y <= n[1]; ++y)
      for (int x = -n[0]; x <= n[0]; ++x) images_.push_back({x * L[0], y * L[1], z * L[2]});
  // Reciprocal space: exp(-k^2 / 4b^2) < exp(-36) beyond k_c = 12 b; half of the k != 0 (k and -k
  // give the same cosine).
  const double kc = 12.0 * beta_, V = L[0] * L[1] * L[2];
  int m[3];
  for (int d = 0; d < 3; ++d) m[d] = static_cast<int>(std::ceil(kc * L[d] / (2 * kPi)));
  for (int z = 0; z <= m[2]; ++z)
    for (int y = -m[1]; y <= m[1]; ++y)
      for (int x = -m[0]; x <= m[0]; ++x) {
        if (z == 0 && (y < 0 || (y == 0 && x <= 0))) continue;  // one of each +-k pair, and k = 0
        const double k[3] = {2 * kPi * x / L[0], 2 * kPi * y / L[1], 2 * kPi * z / L[2]};
        const double k2 = k[0] * k[0] + k[1] * k[1] + k[2] * k[2];
        if (k2 > kc * kc) continue;
        kvectors_.push_back({k[0], k[1], k[2], 2.0 * (4 * kPi / V) * std::exp(-k2 / (4 * beta_ * beta_)) / k2});
      }
  background_ = -kPi / (beta_ * beta_ * V);
}

double EwaldKernel::regular(double dx, double dy, double dz) const {
  double v = background_;
  for (const auto& n : images_) {
    const double x = dx + n[0], y = dy + n[1], z = dz + n[2];
    const double r = std::sqrt(x * x + y * y + z * z);
    if (n[0] == 0 && n[1] == 0 && n[2] == 0) {
      // erfc(b r)/r - 1/r = -erf(b r)/r -> -2b/sqrt(pi) at r = 0.
      v += r > 0 ? -std::erf(beta_ * r) / r : -2 * beta_ / std::sqrt(kPi);
    } else {
      v += std::erfc(beta_ * r) / r;
    }
  }
  for (const auto& k : kvectors_) v += k[3] * std::cos(k[0] * dx + k[1] * dy + k[2] * dz);
  return v;
}

double EwaldKernel::potential(double dx, double dy, double dz) const {
  const double r = std::sqrt(dx * dx + dy * dy + dz * dz);
  if (!(r > 0)) throw std::invalid_argument("ewald: the potential of a point charge at its own position");
  return regular(dx, dy, dz) + 1.0 / r;
}

std::vector<double> ewald_potential_at(const ChargeList& c, const std::array<double, 3>& L, double floor,
                                       const std::vector<std::array<double, 3>>& points) {
  check_box(L);
  const double Lmin = min_of(L);
  if (!(floor < 0.5 * Lmin)) throw std::invalid_argument("ewald: the distance floor must be below half the box");
  // Real space by minimum image only: every other image is at least L_min/2 away, where
  // erfc(b L_min/2) = erfc(3.6) = 3.6e-7. Reciprocal: exp(-k^2/4b^2) < exp(-3.6^2) = 2.4e-6 beyond
  // k_c = 7.2 b.
  const double beta = 3.6 / (0.5 * Lmin), V = L[0] * L[1] * L[2];
  const double kc = 7.2 * beta;
  int m[3];
  for (int d = 0; d < 3; ++d) m[d] = static_cast<int>(std::ceil(kc * L[d] / (2 * kPi)));
  struct K {
    int x, y, z;
    double coef;
  };
  std::vector<K> ks;
  for (int z = 0; z <= m[2]; ++z)
    for (int y = -m[1]; y <= m[1]; ++y)
      for (int x = -m[0]; x <= m[0]; ++x) {
        if (z == 0 && (y < 0 || (y == 0 && x <= 0))) continue;
        const double k[3] = {2 * kPi * x / L[0], 2 * kPi * y / L[1], 2 * kPi * z / L[2]};
        const double k2 = k[0] * k[0] + k[1] * k[1] + k[2] * k[2];
        if (k2 > kc * kc) continue;
        ks.push_back({x, y, z, 2.0 * (4 * kPi / V) * std::exp(-k2 / (4 * beta * beta)) / k2});
      }
  // Structure factors S(k) = sum_j q_j exp(i k.r_j), with exp(i k_x x) built up by products.
  const long n = static_cast<long>(c.size());
  const size_t nk = ks.size();
  std::vector<std::complex<double>> S(nk);
  double qsum = 0;
  for (long j = 0; j < n; ++j) qsum += c.q[j];
#pragma omp parallel
  {
    std::vector<std::complex<double>> Sl(nk), ex, ey, ez;
#pragma omp for schedule(static)
    for (long j = 0; j < n; ++j) {
      const double r[3] = {c.x[j], c.y[j], c.z[j]};
      std::vector<std::complex<double>>* e[3] = {&ex, &ey, &ez};
      for (int d = 0; d < 3; ++d) {
        e[d]->assign(2 * m[d] + 1, 1.0);
        const std::complex<double> step = std::polar(1.0, 2 * kPi * r[d] / L[d]);
        for (int i = 1; i <= m[d]; ++i) {
          (*e[d])[m[d] + i] = (*e[d])[m[d] + i - 1] * step;
          (*e[d])[m[d] - i] = std::conj((*e[d])[m[d] + i]);
        }
      }
      for (size_t k = 0; k < nk; ++k) Sl[k] += c.q[j] * ex[ks[k].x + m[0]] * ey[ks[k].y + m[1]] * ez[ks[k].z + m[2]];
    }
#pragma omp critical
    for (size_t k = 0; k < nk; ++k) S[k] += Sl[k];
  }
  std::vector<double> out(points.size());
  const double floor2 = floor * floor, rc2 = 0.25 * Lmin * Lmin, background = -kPi / (beta * beta * V) * qsum;
#pragma omp parallel for schedule(dynamic, 1)
  for (long p = 0; p < static_cast<long>(points.size()); ++p) {
    const double* x = points[p].data();
    double real = 0;
    for (long j = 0; j < n; ++j) {
      double d[3] = {x[0] - c.x[j], x[1] - c.y[j], x[2] - c.z[j]};
      for (int a = 0; a < 3; ++a) d[a] -= L[a] * std::round(d[a] / L[a]);
      const double r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
      if (r2 >= rc2) continue;  // erfc(b r) < 3.6e-7 there
      const double r = std::sqrt(r2);
      // Inside the floor: erfc(b r)/r - 1/r + 1/floor = 1/floor - erf(b r)/r (-> -2b/sqrt(pi) at r = 0).
      if (r2 < floor2)
        real += c.q[j] * (1.0 / floor - (r > 0 ? std::erf(beta * r) / r : 2 * beta / std::sqrt(kPi)));
      else
        real += c.q[j] * std::erfc(beta * r) / r;
    }
    // Re(S(k) exp(-i k.p)) for each k in the half space (the factor 2 is in coef).
    double recip = 0;
    for (size_t k = 0; k < nk; ++k) {
      const double kp = 2 * kPi * (ks[k].x * x[0] / L[0] + ks[k].y * x[1] / L[1] + ks[k].z * x[2] / L[2]);
      recip += ks[k].coef * (S[k].real() * std::cos(kp) + S[k].imag() * std::sin(kp));
    }
    out[p] = real + recip + background;
  }
  return out;
}

}  // namespace pairmd
