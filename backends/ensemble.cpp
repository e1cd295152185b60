#include "backends/ensemble.h"

#include <omp.h>

#include <cmath>
#include <exception>
#include <sstream>
#include <stdexcept>

#include "backends/cpu_backend.h"

namespace pairmd {

#ifdef PAIRMD_HAVE_CUDA
// Defined in kernels/cuda_ensemble.cu (as make_cuda_backend, declared here so that the engine
// needs no CUDA header).
std::unique_ptr<Ensemble> make_cuda_ensemble(const Model& model, const std::vector<SystemState>& states,
                                             const std::vector<EnsembleSystem>& systems);
#endif

Model replicate_model(const Model& m, int systems, int n) {
  Model r = m;
  r.topology.bonds.clear();
  r.topology.bonds.reserve(m.topology.bonds.size() * systems);
  for (int k = 0; k < systems; ++k)
    for (const Bond& b : m.topology.bonds) r.topology.bonds.push_back({b.i + k * n, b.j + k * n, b.type});
  // Angles, dihedrals and impropers (and so the scaled 1-2/1-3/1-4 pairs, found from the bonds)
  // of copy k on its particles.
  Topology& t = r.topology;
  t.angles.clear();
  t.dihedrals.clear();
  t.impropers.clear();
  t.angles.reserve(m.topology.angles.size() * systems);
  t.dihedrals.reserve(m.topology.dihedrals.size() * systems);
  t.impropers.reserve(m.topology.impropers.size() * systems);
  for (int k = 0; k < systems; ++k) {
    const int o = k * n;
    for (const Angle& a : m.topology.angles) t.angles.push_back({a.i + o, a.j + o, a.k + o, a.type});
    for (const Dihedral& d : m.topology.dihedrals) t.dihedrals.push_back({d.i + o, d.j + o, d.k + o, d.l + o, d.type});
    for (const Dihedral& d : m.topology.impropers) t.impropers.push_back({d.i + o, d.j + o, d.k + o, d.l + o, d.type});
  }
  for (PairList& list : r.force_field.pair_lists) {
    // Pair k of copy c is pair c m + k of the repeated list, with its own coefficients.
    auto data = std::make_shared<PairListData>();
    const PairListData& one = *list.data;
    const size_t pairs = one.pairs.size(), per_pair = pairs ? one.values.size() / pairs : 0;
    for (int k = 0; k < systems; ++k) {
      for (size_t p = 0; p < pairs; ++p) {
        const Bond& b = one.pairs[p];
        data->pairs.push_back({b.i + k * n, b.j + k * n, static_cast<int>(data->pairs.size())});
      }
      data->values.insert(data->values.end(), one.values.begin(), one.values.begin() + pairs * per_pair);
    }
    list.data = std::move(data);
  }
  return r;
}

SystemState concatenate_states(const std::vector<SystemState>& states) {
  if (states.empty()) throw std::invalid_argument("an ensemble of no systems");
  SystemState all = states[0];
  for (size_t k = 1; k < states.size(); ++k) {
    const SystemState& s = states[k];
    if (s.size() != states[0].size() || s.step != states[0].step || s.box.L.x != states[0].box.L.x ||
        s.box.L.y != states[0].box.L.y || s.box.L.z != states[0].box.L.z || s.box.periodic != states[0].box.periodic)
      throw std::invalid_argument("the systems of an ensemble must have the same particles, box and step (system " +
                                  std::to_string(k) + " differs from system 0)");
    all.position.insert(all.position.end(), s.position.begin(), s.position.end());
    all.velocity.insert(all.velocity.end(), s.velocity.begin(), s.velocity.end());
    all.image.insert(all.image.end(), s.image.begin(), s.image.end());
    all.type.insert(all.type.end(), s.type.begin(), s.type.end());
    all.mass.insert(all.mass.end(), s.mass.begin(), s.mass.end());
    all.charge.insert(all.charge.end(), s.charge.begin(), s.charge.end());
  }
  return all;
}

SystemState system_state(const SystemState& all, int k, int n) {
  SystemState s;
  s.box = all.box;
  s.step = all.step;
  s.type_names = all.type_names;
  const size_t a = static_cast<size_t>(k) * n, b = a + n;
  s.position.assign(all.position.begin() + a, all.position.begin() + b);
  s.velocity.assign(all.velocity.begin() + a, all.velocity.begin() + b);
  s.image.assign(all.image.begin() + a, all.image.begin() + b);
  s.type.assign(all.type.begin() + a, all.type.begin() + b);
  s.mass.assign(all.mass.begin() + a, all.mass.begin() + b);
  s.charge.assign(all.charge.begin() + a, all.charge.begin() + b);
  return s;
}

void Ensemble::move_to(int k, const std::vector<Vec3d>& position, const std::vector<Int3>& image) {
  SystemState s;
  get_state(k, s);
  s.position = position;
  s.image = image;
  set_state(k, s);
}

void Ensemble::change_temperatures(const std::vector<TemperatureChange>& changes) {
  for (const TemperatureChange& c : changes) {
    if (!std::isnan(c.temperature)) set_temperature(c.system, c.temperature);
    if (c.velocity_factor != 1) scale_velocities(c.system, c.velocity_factor);
  }
}

namespace {

// K CPU backends, each with its system's temperature and seed: the oracle of the CUDA ensemble.
class CpuEnsemble final : public Ensemble {
 public:
  CpuEnsemble(const Model& model, const std::vector<SystemState>& states, const std::vector<EnsembleSystem>& systems) {
    for (size_t k = 0; k < states.size(); ++k) {
      Model m = model;
      m.integrator.temperature = systems[k].temperature;
      m.integrator.seed = systems[k].seed;
      backends_.push_back(std::make_unique<CpuBackend>(m, states[k]));
    }
  }
  std::string name() const override { return "cpu ensemble"; }
  int size() const override { return static_cast<int>(backends_.size()); }
  // The systems side by side over the threads (each backend's own loops then run on one).
  void advance(int64_t n) override {
    std::exception_ptr failed;
    int failed_system = -1;
#pragma omp parallel for schedule(dynamic) if (backends_.size() > 1)
    for (int k = 0; k < size(); ++k) {
      try {
        backends_[k]->advance(n);
      } catch (...) {
#pragma omp critical(pairmd_ensemble_failure)
        if (failed_system < 0 || k < failed_system) {
          failed_system = k;
          failed = std::current_exception();
        }
      }
    }
    if (!failed) return;
    try {
      std::rethrow_exception(failed);
    } catch (const SimulationBlowup& e) {
      throw SimulationBlowup("system " + std::to_string(failed_system) + ": " + e.what());
    }
  }
  void get_state(int k, SystemState& s) override { backends_.at(k)->get_state(s); }
  void set_state(int k, const SystemState& s) override { backends_.at(k)->set_state(s); }
  void move_to(int k, const std::vector<Vec3d>& x, const std::vector<Int3>& image) override {
    backends_.at(k)->move_to(x, image);
  }
  Observables observables(int k) override { return backends_.at(k)->observables(); }
  std::vector<Vec3d> forces(int k) override { return backends_.at(k)->forces(); }
  void set_temperature(int k, double t) override { backends_.at(k)->set_temperature(t); }
  void scale_velocities(int k, double f) override { backends_.at(k)->scale_velocities(f); }
  BackendStats stats() const override {
    BackendStats s;
    for (const auto& b : backends_) {
      const BackendStats o = b->stats();
      s.list_builds += o.list_builds;
      s.steps = o.steps;
      s.seconds_total = std::max(s.seconds_total, o.seconds_total);
    }
    s.detail = std::to_string(backends_.size()) + " CPU backends";
    return s;
  }

 private:
  std::vector<std::unique_ptr<CpuBackend>> backends_;
};

}  // namespace

std::string ensemble_memory_problem(const Model& model, const SystemState& one, int64_t systems) {
  double free_bytes = 0, total_bytes = 0;
  if (!cuda_device_memory(&free_bytes, &total_bytes)) return "";
  SystemSize size;
  size.particles = static_cast<int64_t>(one.size());
  size.bonds = static_cast<int64_t>(model.topology.bonds.size());
  size.volume = one.box.periodic ? one.box.volume() : 0.0;
  const MemoryEstimate e = estimate_backend_memory("cuda", model, size);
  const double need = e.device_bytes * static_cast<double>(systems);
  if (e.device_bytes <= 0 || need <= free_bytes) return "";
  std::ostringstream m;
  m.precision(3);
  m << "an ensemble of " << systems << " systems of " << one.size() << " particles needs about " << need / 1e9
    << " GB of GPU memory (" << e.device_bytes / 1e6 << " MB each), more than the " << free_bytes / 1e9
    << " GB free; at most " << static_cast<long long>(free_bytes / e.device_bytes) << " such systems fit";
  return m.str();
}

std::unique_ptr<Ensemble> make_ensemble(const std::string& backend, const Model& model,
                                        const std::vector<SystemState>& states,
                                        const std::vector<EnsembleSystem>& systems, std::string* why) {
  if (states.size() != systems.size() || states.empty())
    throw std::invalid_argument("an ensemble needs one state per system");
  concatenate_states(states);  // the same particles, box and step (throws otherwise)
  if (model.barostat.active())
    throw std::invalid_argument(
        "a barostat in an ensemble is not supported: an ensemble's systems share one box, and under a barostat "
        "each needs its own (run each system alone, or replicas under mpirun, one process each)");
  std::string reason;
  if (backend == "cpu") {
    if (why) *why = "cpu (asked for): " + std::to_string(states.size()) + " CPU backends";
    return std::make_unique<CpuEnsemble>(model, states, systems);
  }
  const bool gpu = cuda_available(&reason);
  if (backend == "cuda" && !gpu) throw std::runtime_error("backend cuda asked for, but " + reason);
  if (backend != "cuda" && backend != "auto")
    throw std::runtime_error("unknown backend '" + backend + "' (cpu, cuda, auto)");
#ifdef PAIRMD_HAVE_CUDA
  if (gpu) {
    const std::string problem = ensemble_memory_problem(model, states[0], static_cast<int64_t>(states.size()));
    if (!problem.empty()) throw std::runtime_error(problem);
    if (why) *why = "cuda (" + reason + "): " + std::to_string(states.size()) + " systems in one set of kernels";
    return make_cuda_ensemble(model, states, systems);
  }
#endif
  if (why) *why = "cpu (auto: " + reason + "): " + std::to_string(states.size()) + " CPU backends";
  return std::make_unique<CpuEnsemble>(model, states, systems);
}

}  // namespace pairmd
