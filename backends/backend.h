// The narrow interface between the engine (config, run loop, output, CLI) and a compute
// backend. The engine never includes CUDA headers; the CUDA backend is reached through
// make_backend().
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "backends/model.h"
#include "base/observables.h"
#include "base/system_state.h"

namespace pairmd {

struct BackendStats {
  int64_t list_builds = 0;   // Verlet list builds so far
  int64_t steps = 0;         // steps advanced so far
  double seconds_total = 0;  // wall time in advance()
  double seconds_list = 0;   // of which in list builds (where measured)
  double seconds_force = 0;  // of which in force kernels (where measured)
  double seconds_integrate = 0;
  size_t device_bytes = 0;  // memory the backend holds on its device
  int64_t list_capacity_growths = 0;
  int64_t step_graph_resets = 0;  // captured step graphs dropped: a buffer or setting they use changed
  int64_t graph_captures = 0;     // step and list-build graphs captured
  std::string strategy;           // the force strategy it runs (a GPU backend's; tuning's choice for auto)
  double skin = -1;               // the list skin it runs with (tuning's choice for auto; -1: not said)
  std::string detail;             // anything backend-specific worth a log line
};

// A particle left the sane region or became NaN, or a bond broke: the run cannot go on.
struct SimulationBlowup : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;

  // Replace the whole state (positions, velocities, images, step). Computes forces.
  virtual void set_state(const SystemState& state) = 0;
  // Positions, velocities, images and step, in tag order. Types, masses and charges are copied
  // as they were given to set_state().
  virtual void get_state(SystemState& state) = 0;

  // Advance by n steps of the integrator. Throws SimulationBlowup on non-finite values, broken
  // bonds or runaway particles; the backend's state is then unusable and the caller goes back
  // to the last state it saved. The same holds for any other exception (no memory for a grown
  // list, a CUDA error): only set_state() makes the backend usable again.
  virtual void advance(int64_t nsteps) = 0;
  // Like advance(), but the backend may return while the last of these steps still run (the
  // CUDA backend leaves its last chunk in flight, so that the next call's launch overlaps its
  // read-back). A blow-up in them is thrown by wait(), which every other call (state, forces,
  // observables, temperature, the next advance) does first; set_state() drops them.
  virtual void advance_async(int64_t nsteps) { advance(nsteps); }
  virtual void wait() {}

  // New positions and images for the particles (velocities, step and the rest kept), forces
  // recomputed: the energy minimiser's moves (engine/minimize.h). Throws SimulationBlowup for a
  // bond beyond its maximum extension, after which only set_state() or move_to() makes the
  // backend usable again. The default replaces the whole state (get_state, set_state).
  virtual void move_to(const std::vector<Vec3d>& position, const std::vector<Int3>& image);

  // The independent systems the backend holds: 1, or K for the CUDA backend of an ensemble
  // (backends/ensemble.h), whose state is the K systems one after another. The minimiser refuses
  // more than one: it would minimise their sum, with one step and one stopping rule for all;
  // an ensemble's systems are minimised one by one, each through its member
  // (backends/lockstep_ensemble.h), or before the ensemble is made (the replicas of `pairmd run`).
  virtual int systems() const { return 1; }

  // Energies, virial and kinetic energy of the current state.
  virtual Observables observables() = 0;
  // Forces on each particle at the current state, in tag order, as the backend computes them.
  virtual std::vector<Vec3d> forces() = 0;

  virtual BackendStats stats() const = 0;

  // The thermostat's target temperature from the next step on (replica exchange moves a replica
  // to another temperature of its ladder). Velocities are left as they are.
  virtual void set_temperature(double temperature) = 0;

  // Every velocity times f, each rounded as the backend stores it (a replica moved to another
  // temperature has its velocities scaled by sqrt(T_new / T_old)). This default goes through
  // the host; a GPU backend scales on the device, with the same result.
  virtual void scale_velocities(double f) {
    SystemState s;
    get_state(s);
    for (Vec3d& v : s.velocity) v = f * v;
    set_state(s);
  }

  // Time list builds, force computation and integration separately (CUDA events around each
  // phase on a GPU, read back at the end of advance(); off for normal runs, on for
  // `pairmd compare`'s breakdown). Phases timed outside advance() count from the next one.
  virtual void set_profiling(bool on) { (void)on; }
};

// What each entry of Observables::potential_by_term is, in the order both backends give them:
// the pair terms (scaled 1-2/1-3/1-4 pairs included), a bond term per bond kind in use, the pair
// lists, an angle, dihedral and improper term per kind in use, the pulling.
enum class EnergyGroup { Pair, Bond, PairList, Angle, Dihedral, Improper, Pulling };
std::vector<EnergyGroup> energy_groups(const Model& model);

// How big a system is, as far as memory goes: known from the config before anything is built.
struct SystemSize {
  int64_t particles = 0;
  int64_t bonds = 0;
  double volume = 0;  // of the box (also for open boundaries: the region the builder fills); 0: unknown
};

// Memory a backend will hold for a system, estimated before it allocates anything. Numbers are
// doubles so that absurd sizes (a mistyped lattice) stay representable.
struct MemoryEstimate {
  double host_bytes = 0;
  double device_bytes = 0;  // GPU memory; 0 for the CPU backend
  std::string impossible;   // non-empty: the backend cannot hold this system at any memory size (why)
};

// `backend` is "cpu" or "cuda" (the one the run will use, not "auto"). The CPU figure counts the
// state, forces, per-thread buffers, exclusions and each pair term's Verlet list and cell grid.
// The CUDA figure is the default strategy's, ~1.6 kB per particle at ~43 pairs per particle as
// measured (docs/benchmarks.md): ~400 bytes per particle plus ~29 bytes per pair of the half
// lists (their buffers' headroom included); the CUDA backend may refine it here (it stays
// outside kernels/ so that the engine can ask before a device is touched).
MemoryEstimate estimate_backend_memory(const std::string& backend, const Model& model, const SystemSize& size);

// Half-list pairs per particle of one pair term (list radius = cutoff + skin) at the system's
// mean density; at most (N - 1) / 2.
double pairs_per_particle(const PairTerm& term, double skin, const SystemSize& size);

// Free and total memory of the GPU the CUDA backend would use; false where that is not known
// (so far always: the query needs the CUDA runtime, which lives in kernels/).
bool cuda_device_memory(double* free_bytes, double* total_bytes);

// "cpu", "cuda", or "auto" (cuda where a GPU exists, else cpu). `why` gets a one-line
// explanation of the choice for the log.
std::unique_ptr<Backend> make_backend(const std::string& name, const Model& model, const SystemState& initial,
                                      std::string* why = nullptr);

// The GPU this process's CUDA backend uses: `local_rank` modulo the number of GPUs (several
// processes of a node may share one). Returns the device index and the count (-1, 0: no GPU, or a
// build without CUDA); call it before make_backend.
std::pair<int, int> select_cuda_device(int local_rank);

// True when pairmd was built with CUDA and a usable GPU is present; reason otherwise.
bool cuda_available(std::string* reason);

}  // namespace pairmd
