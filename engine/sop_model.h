// The Self-Organized Polymer (SOP) model of proteins (Hyeon, Dima and Thirumalai, Structure
// 2006; as in SOP-GPU, Zhmurov et al., Proteins 2010) built from C-alpha traces: one bead per
// residue at its C-alpha, and
//
//   covalent bonds   FENE about the native distance r0 of each bond: the backbone and the
//                    disulfide bridges (pair list, fene_native)
//   native contacts  eps_h [(r0/r)^12 - 2 (r0/r)^6] for residues closer than the contact cutoff
//                    in the structure and more than 2 apart along the chain, or in different
//                    chains, and not bonded (pair list, lj_native, r0 per contact)
//   everything else  eps_l (sigma/r)^6 over the neighbour list up to 20 A, not shifted (pair
//                    term repulsive_r6), with the two lists' pairs left out (so |i - j| = 2
//                    pairs repel)
//
// and the config that runs it (`pairmd sop-build`, docs/proteins.md). The defaults are those of
// SOP-GPU's code (github.com/BarsegovGroup/SOP-GPU: kspring_cov, R_limit, R_limit_bond, eh, el,
// a, pairs_cutoff). Parameters are in the `real` unit system's length and energy (A, kcal/mol)
// and in ps for times; the config gets the times in the time unit of the unit system it names,
// whatever that is.
#pragma once

#include <string>
#include <vector>

#include "base/box.h"
#include "base/topology.h"
#include "base/units.h"
#include "base/vec3.h"

namespace pairmd {

struct SopParameters {
  // The model (SOP-GPU's values by default).
  double bond_k = 20.0;             // kcal/(mol A^2) (13.9 N/m; SOP-GPU's kspring_cov)
  double bond_max_extension = 2.0;  // A: R0, the largest |r - r0| of a backbone bond
  double contact_cutoff = 8.0;      // A: residues closer in the structure are in native contact
  int min_separation = 3;           // along a chain, contacts need |i - j| >= this
  double epsilon_h = 1.5;           // kcal/mol: native contact depth
  double epsilon_l = 1.0;           // kcal/mol: repulsion
  double sigma = 3.8;               // A
  double repulsion_cutoff = 20.0;   // A (SOP-GPU's pairs_cutoff): cut there, not shifted
  double mass = 110.0;              // amu, every bead
  // Copies of the protein on a cubic lattice in a periodic box (assemblies, benchmarks).
  int copies = 1;
  double copy_gap = -1;  // A between the copies' bounding boxes; < 0: the repulsion cutoff (out of reach)
  // Independent runs of one protein (pulling statistics, SOP-GPU's many runs): a replicas section
  // of that many independent replicas (seed + k), run side by side on one GPU (docs/ensembles.md).
  int independent = 0;
  // The run.
  std::string integrator = "brownian";  // brownian (overdamped) or langevin (underdamped)
  double temperature = 300.0;           // K
  double dt_ps = 0.0;  // 0: 0.04 ps brownian (stable through unfolding; 0.08 ps blows up at rest), 0.02 ps langevin
  // gamma; 0: 50/3 per ps brownian (SOP-GPU's zeta / tau_L, zeta = 50, tau_L = 3 ps), 1 per ps langevin
  double friction_per_ps = 0.0;
  double skin = -1;       // A; below 0: `skin: auto`, tuned at start with the strategy (backends/tuning.h)
  double max_step = 2.0;  // A: a bead moving farther in one step stops the run (a blow-up)
  long steps = 100000;
  long thermo_every = 1000;
  long trajectory_every = 1000;
  unsigned long seed = 1;
  // Pulling: the tethered and pulled beads (-1: none), a force ramp or a constant force.
  long tethered = -1, pulled = -1;
  std::string pull_mode = "ramp";
  double pull_speed = 0.01;     // A/ps
  double pull_spring = 0.07;    // kcal/(mol A^2) (0.05 N/m, an AFM cantilever)
  double pull_force = 1.0;      // kcal/(mol A) (69.5 pN)
  double tether_spring = 10.0;  // kcal/(mol A^2)
  long pull_every = 100;
};

// A covalent bond besides the backbone (a disulfide bridge): two beads of one copy.
struct SopBridge {
  int i = 0, j = 0;
};

struct SopModel {
  std::vector<Vec3d> x;                  // bead positions (copies after each other)
  std::vector<std::string> chain_names;  // of one copy
  std::vector<int> chain_start;          // first bead of each chain of one copy, and the bead count
  std::vector<Bond> backbone;            // covalent bonds: each copy's backbone, then its bridges; type = index
  std::vector<double> backbone_r0;
  int bridges_per_copy = 0;  // of the covalent bonds of a copy, the bridges (the last ones)
  std::vector<Bond> native;
  std::vector<double> native_r0;
  int beads_per_copy = 0;
  Box box{};  // open for one copy, periodic for several
};

// The model of the chains (C-alpha positions, A; each chain's residues in order) with the
// covalent `bridges` (bead indices of one copy; their pairs are not native contacts), with
// p.copies copies. Throws std::invalid_argument for bad parameters or bridges.
SopModel build_sop_model(const std::vector<std::vector<Vec3d>>& chains, const std::vector<std::string>& names,
                         const SopParameters& p, const std::vector<SopBridge>& bridges = {});

// "98 covalent bonds (97 backbone, 1 disulfide)": the model's covalent bonds, all copies.
std::string covalent_bonds_text(const SopModel& m);

// How many ps one time unit of `units` is (1 for ps, 0.001 for fs), from its force_to_accel:
// a = force_to_accel F / m, and 1 kcal/(mol A amu) = 418.4 A/ps^2.
double ps_per_time_unit(const Units& units);

// The files of a SOP system (sop-build's output) as the config names them.
struct SopFiles {
  std::string start;     // H5MD start file (beads)
  std::string backbone;  // pair list: covalent bonds (backbone and bridges), i j r0
  std::string native;    // pair list: native contacts, i j r0
};

// The config (YAML) that runs the model: units real, the bead type, the start file, the force
// field, the integrator, output and (with tethered/pulled beads) the pulling. `header` goes in
// front as comment lines.
std::string sop_config_text(const SopModel& m, const SopParameters& p, const SopFiles& files, const std::string& title,
                            const std::vector<std::string>& header);

}  // namespace pairmd
