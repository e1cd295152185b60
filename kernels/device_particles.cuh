// The particles on the device, structure-of-arrays, in cell order: the backend renumbers them
// at every list build (neighbor/gpu_cell_order.cuh), so that neighbours sit next to each other
// in memory and the list search needs no sort. tag[p] is the user's index of particle p and
// rank[t] the particle of tag t; everything that leaves the backend (states, forces) goes back
// to the user's order through them.
//
// Positions are double-buffered (kernels/integrate_kernel.cuh): pos(current()) holds x_n.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "base/system_state.h"
#include "cuda/device_buffer.h"
#include "cuda/launcher.cuh"
#include "kernels/fixed_point.h"

namespace pairmd {

class DeviceParticles {
 public:
  // The state in the user's order (tag = index); positions go to buffer 0.
  void upload(const SystemState& s);
  // Positions (current buffer), velocities and images into s (sized n), in the user's order:
  // gathered into that order on the device (through the renumbering's scratch arrays) and read
  // back into pinned memory, so the host converts them in order, with no scatter.
  void download(SystemState& s, cudaStream_t stream);
  // Values of a per-particle device array (current numbering) in the user's order, gathered as
  // download() gathers the state.
  std::vector<float4> in_user_order(const float4* a, cudaStream_t stream);

  // Renumbers the particles: the k-th becomes order[k] of the current numbering. The positions
  // move to the other buffer (which becomes current) and are also the new positions at build.
  void renumber(Launcher& launcher, const int* order);

  int n() const { return n_; }
  int current() const { return current_; }
  void flip() { current_ ^= 1; }
  float4* pos(int buffer) { return pos_[buffer].data(); }
  float4* pos() { return pos_[current_].data(); }
  float4* vel() { return vel_.data(); }
  int3* image() { return image_.data(); }
  float* charge() { return charge_.data(); }
  unsigned* tag() { return tag_.data(); }
  unsigned* rank() { return rank_.data(); }
  float4* pos_at_build() { return pos_build_.data(); }
  float4* force() { return force_.data(); }          // float forces (float-atomic strategies, outputs)
  FixedVec* fixed_force() { return fixed_.data(); }  // fixed-point forces (atom_gather)
  size_t bytes() const;

 private:
  int n_ = 0;
  int current_ = 0;
  DeviceBuffer<float4> pos_[2], vel_, pos_build_, force_, vel_tmp_;
  DeviceBuffer<int3> image_, image_tmp_;
  DeviceBuffer<float> charge_, charge_tmp_;
  DeviceBuffer<unsigned> tag_, rank_, tag_tmp_;
  DeviceBuffer<FixedVec> fixed_;
  // At least `bytes` of pinned host memory for the reads back (kept, grown when too small).
  unsigned char* pinned(size_t bytes);
  // download()'s and in_user_order()'s pinned host memory.
  struct FreePinned {
    void operator()(unsigned char* p) const { cudaFreeHost(p); }
  };
  std::unique_ptr<unsigned char, FreePinned> host_out_;
  size_t host_out_bytes_ = 0;
};

}  // namespace pairmd
