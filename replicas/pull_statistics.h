// Pulling statistics of an ensemble (docs/ensembles.md, docs/proteins.md): K independent runs of
// one protein, each pulled (config `pulling` and `replicas: {mode: independent}`; `pairmd sop-build
// --independent K`), each with its force-extension log BASE.rNN.pull.csv. At the end replica 0
// reads them all: each run's rupture force is the largest pulling force of its log, with the
// extension and the step where it was reached. BASE.rupture.csv holds one row per run, and the
// summary line gives their mean, standard deviation and range (the distribution dynamic force
// spectroscopy measures at a loading rate).
#pragma once

#include <string>
#include <vector>

namespace pairmd {

struct RuptureEvent {
  int replica = 0;
  bool found = false;  // the log had rows
  double force = 0, extension = 0;
  long long step = 0;
};

// Each replica's rupture event from PREFIX_r.pull.csv (PREFIX_r: replica r's prefix).
std::vector<RuptureEvent> rupture_events(const std::vector<std::string>& replica_prefixes);
// BASE.rupture.csv (replica,step,extension[LEN],force[FORCE]); throws std::runtime_error.
void write_rupture_csv(const std::string& path, const std::vector<RuptureEvent>& events, const std::string& length_unit,
                       const std::string& force_unit);
// "rupture forces of 16 runs: mean 3.21 +- 0.40 kcal/(mol A) (223 +- 28 pN), 2.55 .. 3.96".
std::string rupture_summary(const std::vector<RuptureEvent>& events, const std::string& force_unit,
                            double piconewton_per_force_unit);

}  // namespace pairmd
