// The reciprocal-space part of particle-mesh Ewald on the CPU (potentials/pme.h has the method):
// B-spline spreading, FFTW's real-to-complex transforms, the influence function, and the
// forces interpolated from the potential's gradient. Double precision throughout, like the rest
// of the CPU reference. Spreading is one serial loop (so the grid is the same bits whatever the
// thread count); the forces are a parallel loop over particles.
#pragma once

#include <memory>
#include <vector>

#include "base/box.h"
#include "base/vec3.h"
#include "potentials/pme.h"

namespace pairmd {

class PmeCpu {
 public:
  PmeCpu(const PmeParams& params, const Box& box, const std::vector<double>& charge);
  ~PmeCpu();
  PmeCpu(const PmeCpu&) = delete;
  PmeCpu& operator=(const PmeCpu&) = delete;

  const PmeParams& params() const { return params_; }
  const Box& box() const { return box_; }
  const std::vector<double>& charges() const { return charge_; }

  // The same grid for another box (a barostat's): the influence function and the background.
  void set_box(const Box& box);
  // Adds the reciprocal-space forces at positions x to f (inside an OpenMP parallel region or
  // not). With `energy`, sets it to E_recip + E_self + E_background; with `virial`, it to their
  // virial per direction (its sum the virial W).
  void add_forces(const std::vector<Vec3d>& x, Vec3d* f, double* energy, Vec3d* virial);

 private:
  struct Fft;
  void spread(const std::vector<Vec3d>& x);
  double convolve(Vec3d* virial);  // the grid's transform times G, back: the potential on the grid
  void gather(const std::vector<Vec3d>& x, Vec3d* f) const;

  PmeParams params_;
  Box box_;
  std::vector<double> charge_;
  PmeInfluence influence_;
  double self_energy_ = 0.0, background_energy_ = 0.0, total_charge_ = 0.0;
  std::unique_ptr<Fft> fft_;
};

}  // namespace pairmd
