// The C-alpha traces of the protein chains of a structure file (PDB or mmCIF, gzipped or not),
// read with gemmi (Debian's gemmi-dev): what `pairmd sop-build` turns into a Self-Organized
// Polymer model, one bead per residue (engine/sop_model.h).
//
// What is taken: the first model; in each chain, the amino-acid residues (gemmi's table of
// residues, modified ones such as MSE included; a residue it does not know is taken when it has
// the backbone atoms N, CA and C, and said so); of each residue its CA atom. What is refused,
// with the file and line (PDB) or the chain and residue (mmCIF): an amino acid without a CA
// atom, and consecutive residues whose C-alpha atoms are farther apart than a peptide bond
// allows (missing residues: a chain gap; `split_at_gaps` makes the pieces chains of their own).
// Alternate locations of a CA atom are refused too, unless `altloc_highest` (then the CA of the
// highest occupancy is taken, the first of equal ones, and said). A C-alpha position that is
// not a number, and two C-alpha atoms closer than 1 A (the same atom twice: no structure puts
// them closer than ~2.9 A), are refused too. What is decided and said: alternative residues at
// one position (the first), models after the first, residues that are not amino acids (water,
// ligands), PDB columns past 72 that do not parse, and disulfide bridges that cannot be taken.
//
// Disulfide bridges (PDB SSBOND records, mmCIF _struct_conn of type disulf) between residues
// taken become `disulfides`: covalent bonds of the SOP model, as SOP-GPU makes them. A bridge is
// left out, with a note, where one of its residues is not taken (another chain, not an amino
// acid), where it joins a symmetry mate, where its residues are already bonded along the chain,
// or where their C-alpha atoms are more than `max_disulfide` apart (SOP-GPU's limit, 10 A;
// bridges measure 4.4-6.8 A).
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "base/vec3.h"

namespace pairmd {

struct CalphaResidue {
  std::string name;  // residue name (GLY)
  std::string id;    // sequence number and insertion code (37, 37A)
  Vec3d x{0, 0, 0};  // the C-alpha position
  int line = 0;      // the line of the residue's first atom (PDB files); 0: not known
};

struct CalphaChain {
  std::string name;    // A; the pieces of a chain split at gaps: A, A#2, ...
  std::string source;  // the chain's name in the file (A for every piece)
  std::vector<CalphaResidue> residues;
};

// A residue of a CalphaStructure: its chain and its place in the chain.
struct CalphaSite {
  int chain = 0, residue = 0;
};

// A disulfide bridge between two residues taken.
struct CalphaBridge {
  CalphaSite a, b;
  double distance = 0;  // between the C-alpha atoms (A)
};

struct CalphaStructure {
  std::string path;
  std::vector<CalphaChain> chains;
  std::vector<CalphaBridge> disulfides;
  std::vector<std::string> notes;  // every decision taken for the user, one line each
};

struct CalphaOptions {
  double max_bond = 4.5;            // consecutive C-alpha atoms farther apart are a chain gap (A)
  bool split_at_gaps = false;       // a gap splits the chain instead of stopping with an error
  bool altloc_highest = false;      // alternate locations: take the highest occupancy instead of an error
  std::vector<std::string> chains;  // the chains to take (by name); empty: all with amino acids
  bool disulfides = true;           // read the disulfide bridges (false: leave them out, a reduced protein)
  double max_disulfide = 10.0;      // a bridge whose C-alpha atoms are farther apart is left out (A)
};

// A structure file that cannot be used: the message names the file (and line) and what is wrong.
struct StructureError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// "path:line: " where the line is known, else "path: ".
std::string residue_where(const std::string& path, const CalphaResidue& r);
// "chain A residue GLY 37".
std::string residue_name(const CalphaChain& c, const CalphaResidue& r);
// "chain A CYS 10 - chain A CYS 81".
std::string bridge_name(const CalphaStructure& s, const CalphaBridge& b);

// Throws StructureError.
CalphaStructure read_calpha_chains(const std::string& path, const CalphaOptions& options);

}  // namespace pairmd
