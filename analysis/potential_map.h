// Electrostatic potential maps by Direct Coulomb Summation (DCS):
//
//   V(p) = k_e * sum_i q_i / max(|p - r_i|, d_min)
//
// over every charged particle, on a regular lattice; open boundaries and no cutoff (the exact
// sum, also for a periodic box: the particles' wrapped positions, no periodic images). The
// distance floor d_min (min_distance; default half the lattice spacing) keeps a lattice point
// that falls on a particle finite. k_e is Units::coulomb (vacuum: no dielectric), so V is in
// energy per charge (kcal/mol/e in real units).
//
// The CPU reference is double precision; the GPU kernels (kernels/dcs) compute in float and are
// checked against it. The lattice, kernel choice and time averaging live here. The same map by
// multilevel summation (method msm, O(atoms + points), relative error ~1e-4; and the periodic
// map with every image, boundary periodic) is in analysis/msm.h.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/grid.h"
#include "base/system_state.h"
#include "base/units.h"
#include "engine/map_registry.h"
#include "engine/map_settings.h"

namespace pairmd {

// The charged particles of a frame, structure-of-arrays.
struct ChargeList {
  std::vector<double> x, y, z, q;
  size_t size() const { return q.size(); }
  void add(double px, double py, double pz, double charge) {
    x.push_back(px);
    y.push_back(py);
    z.push_back(pz);
    q.push_back(charge);
  }
};

// The particles with a non-zero charge, at their stored (wrapped) positions.
ChargeList charged_particles(const SystemState& s);

// The kernels (MapKernel) and methods (MapMethod), their names and checks: engine/map_registry.h.

// The kernel that `requested` runs as: auto becomes the best GPU kernel when a device is there,
// else cpu. Throws std::runtime_error when a GPU kernel is requested but cannot run (built
// without CUDA, no device); `why` gets a line for the log.
MapKernel resolve_map_kernel(MapKernel requested, std::string* why);

// Where the lattice lies and how fine it is.

// Accuracy of a map against the exact sum at sampled lattice points (analysis/msm.h,
// sampled_accuracy): sqrt(sum (V - V_exact)^2 / sum V_exact^2) over the samples.
struct MapAccuracy {
  int samples = 0;         // 0: not checked
  double rel_rms = 0;      // the estimate
  double max_abs_err = 0;  // largest |V - V_exact| over the samples
};

// The empty lattice (values zero) for a frame: spacing h in every direction, origin at the
// region's lower corner, n = ceil(extent / h) + 1 points per direction so that the lattice
// covers the region. Throws std::invalid_argument for a bad region or a lattice of more than
// kMaxMapPoints points (base/grid.h).
Grid3 map_lattice(const SystemState& s, const MapSettings& settings, const Units& units);

// The unit string of V: energy per charge ("kcal/mol/e", "epsilon/q*").
std::string potential_unit(const Units& units);

// CPU reference, double precision, OpenMP over lattice rows: fills grid.values (dims, origin and
// spacing set) with k_e * sum_i q_i / max(r, floor).
void potential_cpu(const ChargeList& charges, double k_e, double floor, Grid3& grid);

// The same with `kernel` (cpu or a GPU kernel; not auto). GPU kernels compute in float.
// Returns the seconds of the computation (GPU: kernels only, CUDA events; CPU: wall clock).
double compute_potential(MapKernel kernel, const ChargeList& charges, double k_e, double floor, Grid3& grid,
                         int coarsen = 8);

// What method `auto` picks for a frame on `lattice`: msm when its estimated time (analysis/msm.cpp,
// estimate_map_cost) is under a quarter of the exact sum's on that backend, and always where
// settings.boundary is periodic. `why` gets a line with the estimates.
MapMethod choose_map_method(const ChargeList& charges, const Grid3& lattice, const MapSettings& settings,
                            const Box& box, bool gpu, std::string* why);

// Maps of successive frames on one lattice (set by the first frame) and their running mean.
// The method (settings.method) is resolved at the first frame; msm keeps the first frame's a and
// h for the later ones and checks the first map against the exact sum at error_samples points.
class PotentialMapSeries {
 public:
  // Throws std::runtime_error when the kernel cannot run here, std::invalid_argument for bad settings.
  PotentialMapSeries(const MapSettings& settings, const Units& units);

  // The map of this frame (also added to the average).
  const Grid3& add(const SystemState& s);
  const Grid3& last() const { return last_; }
  // The mean of all maps added so far (values all zero before the first).
  Grid3 average() const;
  int64_t frames() const { return frames_; }
  MapKernel kernel() const { return kernel_; }
  const std::string& kernel_description() const { return why_; }
  double seconds() const { return seconds_; }          // in the kernels, all frames
  double evaluations() const { return evaluations_; }  // charged atoms x lattice points, all frames
  // The method the maps use (auto is resolved by the first map) and a line saying how it was
  // chosen and set up; the accuracy of the first msm map (samples == 0 when not checked).
  MapMethod method() const { return method_; }
  const std::string& method_description() const { return method_why_; }
  const MapAccuracy& accuracy() const { return accuracy_; }
  // One line for titles and logs: the method, and for msm the estimated error.
  std::string summary() const;

 private:
  void resolve_method(const ChargeList& charges, const Box& box);
  double compute_msm(const ChargeList& charges, const Box& box);

  MapSettings settings_;
  Units units_;
  MapKernel kernel_;
  std::string why_;
  MapMethod method_;
  std::string method_why_;
  MapAccuracy accuracy_;
  Grid3 last_;
  std::vector<double> sum_;
  int64_t frames_ = 0;
  double seconds_ = 0;
  double evaluations_ = 0;
};

// Frames of a trajectory to map: "a:b:s" (b exclusive, as in Python; empty b: to the end),
// "a:b", "a:", ":", "a" (one frame) or "-1" (the last frame).
struct FrameRange {
  int64_t start = 0;
  int64_t stop = -1;  // -1: to the end
  int64_t step = 1;
  bool single = false;
};
// Throws std::invalid_argument naming the text.
FrameRange parse_frame_range(const std::string& text);

// Adds the frames of `range` to `series`; `read(frame)` returns frame `frame` and throws once it
// is past the end. An open range ends at the first frame that cannot be read after at least one
// was (`note` gets why); any other failure propagates. Returns the number of frames added.
int64_t map_frames(const std::function<SystemState(int64_t)>& read, const FrameRange& range, PotentialMapSeries& series,
                   std::string* note = nullptr);

}  // namespace pairmd
