// What the GPU decides by itself during a chunk of steps (kernels/cuda_backend.cu): the
// integrate kernel's last block (or, for pair_slots_fused beyond one wave of blocks, a
// one-thread kernel after it) reads the step's flags and either counts the step or halts the
// chunk (a list rebuild is due, or the run blew up); every later kernel of the chunk then
// returns at once. The host reads this block once per chunk, not once per step.
#pragma once

#include <cuda_runtime.h>

#include <climits>
#include <cstddef>
#include <cstdint>

namespace pairmd {

enum StepHalt : int { kRunning = 0, kHaltRebuild = 1, kHaltBlowup = 2 };

// Integrate-kernel blocks per first-level ticket counter, and the spacing of those counters
// (in unsigned words: one 32-byte sector each).
constexpr unsigned kTicketGroup = 32;
constexpr unsigned kTicketStride = 8;
inline size_t ticket_words(unsigned blocks) { return (blocks / kTicketGroup + 1) * kTicketStride; }

struct StepControl {
  unsigned long long step;  // the step the next integrate begins (the noise key)
  int pending;              // 1: the step begun last still needs its end (the last half kick)
  int halt;                 // StepHalt
  unsigned steps_done;      // steps begun since set_state (a running total: the host takes
                            // differences, so chunks need not clear it)
  unsigned blocks_done;     // last-block ticket of the integrate kernel
  int list_short;           // 1: a list search did not fit (the list is incomplete); set by the
                            // search, cleared by the host once it has grown and searched again
};

// What differs between the systems of an ensemble (one entry for a single system): the
// thermostat's k_B T (m v^2 units) and the seed of its noise. Read from device memory, not from
// the kernels' arguments, so a temperature change (replica exchange) keeps the captured graphs.
struct SystemParams {
  float kT_mvv;
  unsigned long long seed;
};

// Set by any thread, read by whoever decides the step (and the host after a halt).
// All zero means "nothing to report".
struct DeviceFlags {
  unsigned max_disp_sq;  // float bits of the largest squared displacement since the list build
  int bad_particle;      // INT_MAX - (lowest tag of a runaway / non-finite particle), 0 if none
  int broken_bond;       // INT_MAX - (lowest index of a broken bond), 0 if none
  int bad_force;         // INT_MAX - (lowest tag with a huge or non-finite force), 0 if none
};

__device__ __forceinline__ void report_lowest(int* flag, int index) { atomicMax(flag, INT_MAX - index); }
inline int reported_index(int flag) { return flag == 0 ? -1 : INT_MAX - flag; }

// Kernels of a chunk start with this: nothing more happens once the chunk has halted, or while
// a list is incomplete (no step is taken with forces from a list that missed pairs).
__device__ __forceinline__ bool halted(const StepControl* ctrl) { return (ctrl->halt | ctrl->list_short) != 0; }

}  // namespace pairmd
