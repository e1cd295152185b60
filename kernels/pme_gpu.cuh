// The reciprocal-space part of particle-mesh Ewald on the GPU (potentials/pme.h has the method;
// backends/pme_cpu.cpp is its fp64 reference). Per force evaluation:
//   spread    a warp per particle adds q M_x M_y M_z to the n^3 grid points of its stencil,
//             in 64-bit fixed point (2^-32 units) with integer atomics: integer addition is
//             exact and associative, so the grid is the same bits whatever the order in which
//             particles arrive (and whatever their numbering); no float atomics
//   convert   the fixed-point grid to floats
//   forward   cuFFT real-to-complex
//   multiply  by the influence function G, computed per wave vector from the box in device
//             memory (which a barostat changes) and the B-spline factors of each edge; when the
//             barostat's update is due, the reciprocal and background virial per direction into
//             its sums (kernels/box_update.cuh)
//   backward  cuFFT complex-to-real: the potential on the grid
//   gather    a warp per particle interpolates the potential's gradient and adds its force
//             to the particle's extra force (fixed point, current numbering), which every
//             integrate kernel adds (kernels/force_sources.cuh)
// Every step is a kernel or cuFFT call through the Launcher, so it is captured in the chunk's
// graph and keyed like any other launch (cuFFT calls by plan and buffers). cuFFT is
// deterministic for a fixed plan and input, so the whole path is bitwise reproducible.
#pragma once

#include <cufft.h>

#include <vector>

#include "cuda/device_buffer.h"
#include "cuda/launcher.cuh"
#include "kernels/bonded_kernels.cuh"
#include "kernels/fixed_point.h"
#include "kernels/pair_physics.cuh"
#include "kernels/step_control.cuh"
#include "potentials/pme.h"

namespace pairmd {

class PmeGpu {
 public:
  // A solver with the grid of `params`; `box` only for fits() (the kernels read the box of the
  // ParticleData they are given).
  PmeGpu(const PmeParams& params, const Box& box);
  ~PmeGpu();
  PmeGpu(const PmeGpu&) = delete;
  PmeGpu& operator=(const PmeGpu&) = delete;

  // Whether this solver (its grid and plans) serves `params` in `box`.
  bool fits(const PmeParams& params, const Box& box) const;
  // The self and background energies of these charges, in any order (they need only the sums).
  void set_charges(const std::vector<double>& charge);
  // Adds the reciprocal-space forces at pd's positions to extra (current numbering); with a
  // barostat (bv.sums), their virial per direction when its update is due.
  void enqueue_forces(Launcher& launcher, const ParticleData& pd, const unsigned* tag, FixedVec* extra,
                      DeviceFlags* flags, const StepControl* ctrl, const BondedVirial& bv);
  // The reciprocal energy and virial into one term's accumulator words (kEnergyWords).
  void enqueue_energy(Launcher& launcher, const ParticleData& pd, long long* acc);
  // E_self + E_background of a box of this volume, and their virial (3 E_background): added on
  // the host, in double.
  double constant_energy(double volume) const { return self_energy_ + background_coefficient_ / volume; }
  double constant_virial(double volume) const { return 3.0 * background_coefficient_ / volume; }
  const PmeParams& params() const { return params_; }

 private:
  void enqueue_transform(Launcher& launcher, const ParticleData& pd);  // spread, convert, forward

  PmeParams params_;
  Box box_;
  int points_ = 0, half_ = 0;  // real grid points, half-spectrum entries
  DeviceBuffer<long long> fixed_;
  DeviceBuffer<float> real_, bx_, by_, bz_;  // the grid; the B-spline factors of each edge
  DeviceBuffer<cufftComplex> spectrum_;
  cufftHandle forward_ = 0, backward_ = 0;
  double self_energy_ = 0.0, background_coefficient_ = 0.0;  // E_background = coefficient / V
};

}  // namespace pairmd
