#include "io/structure_file.h"

#include <sys/stat.h>

#include <gemmi/gz.hpp>
#include <gemmi/mmread.hpp>
#include <gemmi/resinfo.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <sstream>

namespace pairmd {

namespace {

std::string seqid_text(const gemmi::SeqId& s) {
  std::string t = s.num.has_value() ? std::to_string(*s.num) : std::string("?");
  if (s.has_icode()) t += s.icode;
  return t;
}

// The line of each residue's first ATOM/HETATM record in the first model of a PDB text, by
// "chain|seqnum|icode" (gemmi keeps no line numbers).
std::map<std::string, int> pdb_residue_lines(const char* data, size_t size) {
  std::map<std::string, int> lines;
  int line = 0;
  for (size_t pos = 0; pos < size;) {
    size_t eol = pos;
    while (eol < size && data[eol] != '\n') ++eol;
    ++line;
    const std::string rec(data + pos, std::min<size_t>(eol - pos, 27));
    pos = eol + 1;
    if (rec.compare(0, 6, "ENDMDL") == 0) break;
    if (rec.size() < 26 || (rec.compare(0, 6, "ATOM  ") != 0 && rec.compare(0, 6, "HETATM") != 0)) continue;
    std::string chain(1, rec[21]);
    if (chain == " ") chain.clear();
    const int num = std::atoi(rec.substr(22, 4).c_str());
    const char icode = rec.size() > 26 && rec[26] != ' ' ? rec[26] : '\0';
    std::string key = chain + "|" + std::to_string(num) + "|";
    if (icode) key += icode;
    lines.emplace(key, line);
  }
  return lines;
}

std::string line_key(const std::string& chain, const gemmi::SeqId& s) {
  std::string key = chain + "|" + (s.num.has_value() ? std::to_string(*s.num) : std::string("?")) + "|";
  if (s.has_icode()) key += s.icode;
  return key;
}

// The structure, with a second try for PDB files whose columns 73-80 hold what gemmi cannot
// parse (old files keep line numbers there).
gemmi::Structure read_structure(const std::string& path, gemmi::CharArray& mem, bool& pdb,
                                std::vector<std::string>& notes) {
  // gemmi says "fread failed" (with a stale errno) for an empty file or a directory.
  struct stat st;
  if (stat(path.c_str(), &st) != 0) throw StructureError(path + ": cannot open: " + std::strerror(errno));
  if (S_ISDIR(st.st_mode)) throw StructureError(path + ": it is a directory, not a structure file");
  if (st.st_size == 0) throw StructureError(path + ": the file is empty");
  gemmi::MaybeGzipped input(path);
  try {
    mem = gemmi::read_into_buffer(input);
  } catch (const std::exception& e) {
    throw StructureError(path + ": cannot read the structure file: " + e.what());
  }
  const gemmi::CoorFormat format = gemmi::coor_format_from_content(mem.data(), mem.data() + mem.size());
  pdb = format == gemmi::CoorFormat::Pdb;
  try {
    if (pdb) return gemmi::read_pdb_from_memory(mem.data(), mem.size(), path);
    if (format == gemmi::CoorFormat::Mmcif)
      return gemmi::make_structure(gemmi::cif::read_memory(mem.data(), mem.size(), path.c_str()));
    throw StructureError(path + ": neither a PDB nor an mmCIF file");
  } catch (const StructureError&) {
    throw;
  } catch (const std::exception& e) {
    if (!pdb) throw StructureError(path + ": cannot read the structure file: " + e.what());
    gemmi::PdbReadOptions options;
    options.max_line_length = 72;
    try {
      gemmi::Structure st = gemmi::read_pdb_from_memory(mem.data(), mem.size(), path, options);
      notes.push_back("read columns 1-72 of each line only: columns 73-80 did not parse (" + std::string(e.what()) +
                      "; old PDB files keep line numbers there)");
      return st;
    } catch (const std::exception&) {
      throw StructureError(path + ": cannot read the structure file: " + e.what());
    }
  }
}

// The CA atom of a residue: of several (alternate locations) the one of highest occupancy,
// the first of equal ones. Null when there is none.
const gemmi::Atom* calpha(const gemmi::Residue& r, std::string* note) {
  const gemmi::Atom* best = nullptr;
  std::string alts;
  int count = 0;
  for (const gemmi::Atom& a : r.atoms) {
    if (a.name != "CA" || (a.element != gemmi::El::C && a.element != gemmi::El::X)) continue;
    ++count;
    if (a.altloc) alts += (alts.empty() ? "" : ", ") + std::string(1, a.altloc);
    if (!best || a.occ > best->occ) best = &a;
  }
  if (count > 1 && note) {
    char occ[32];
    std::snprintf(occ, sizeof occ, "%.2f", best->occ);
    *note = "alternate locations " + alts + " of its CA atom: took " +
            (best->altloc ? std::string(1, best->altloc) : std::string("the first")) + " (occupancy " + occ + ")";
  }
  return best;
}

bool has_atom(const gemmi::Residue& r, const char* name) {
  for (const gemmi::Atom& a : r.atoms)
    if (a.name == name) return true;
  return false;
}

}  // namespace

std::string residue_where(const std::string& path, const CalphaResidue& r) {
  return r.line > 0 ? path + ":" + std::to_string(r.line) + ": " : path + ": ";
}

std::string residue_name(const CalphaChain& c, const CalphaResidue& r) {
  return "chain " + (c.name.empty() ? std::string("' '") : c.name) + " residue " + r.name + " " + r.id;
}

CalphaStructure read_calpha_chains(const std::string& path, const CalphaOptions& options) {
  CalphaStructure out;
  out.path = path;
  gemmi::CharArray mem;
  bool pdb = false;
  gemmi::Structure st = read_structure(path, mem, pdb, out.notes);
  if (st.models.empty()) throw StructureError(path + ": the file holds no atoms");
  if (st.models.size() > 1)
    out.notes.push_back("took model " + st.models[0].name + " (the first of " + std::to_string(st.models.size()) + ")");
  const std::map<std::string, int> lines =
      pdb ? pdb_residue_lines(mem.data(), mem.size()) : std::map<std::string, int>{};
  auto line_of = [&](const std::string& chain, const gemmi::SeqId& s) {
    auto it = lines.find(line_key(chain, s));
    return it == lines.end() ? 0 : it->second;
  };

  for (const std::string& want : options.chains) {
    bool found = false;
    for (const gemmi::Chain& c : st.models[0].chains) found = found || c.name == want;
    if (!found) throw StructureError(path + ": there is no chain '" + want + "' in the first model");
  }
  for (const gemmi::Chain& chain : st.models[0].chains) {
    if (!options.chains.empty() &&
        std::find(options.chains.begin(), options.chains.end(), chain.name) == options.chains.end())
      continue;
    CalphaChain c;
    c.name = chain.name;
    std::map<std::string, int> skipped;  // residue name -> count
    const gemmi::Residue* previous = nullptr;
    for (const gemmi::Residue& r : chain.residues) {
      const gemmi::ResidueInfo info = gemmi::find_tabulated_residue(r.name);
      const bool backbone = has_atom(r, "N") && has_atom(r, "CA") && has_atom(r, "C");
      if (!(info.is_amino_acid() || (!info.found() && backbone))) {
        ++skipped[r.name];
        continue;
      }
      CalphaResidue res;
      res.name = r.name;
      res.id = seqid_text(r.seqid);
      res.line = line_of(chain.name, r.seqid);
      if (previous && previous->seqid == r.seqid) {
        out.notes.push_back(residue_name(c, res) + ": alternative residues " + previous->name + " and " + r.name +
                            " at one position: took " + previous->name);
        continue;
      }
      std::string note;
      const gemmi::Atom* ca = calpha(r, &note);
      if (!ca)
        throw StructureError(
            residue_where(path, res) + residue_name(c, res) +
            ": no C-alpha atom (CA); the SOP model puts a bead at each residue's C-alpha. Complete the "
            "residue, remove it, or take other chains (--chains)");
      if (!note.empty()) {
        if (!options.altloc_highest)
          throw StructureError(residue_where(path, res) + residue_name(c, res) + ": " + note.substr(0, note.find(':')) +
                               ": which one is the native structure? --altloc highest takes the CA of the highest "
                               "occupancy (the first of equal ones); or edit the file");
        out.notes.push_back(residue_name(c, res) + ": " + note);
      }
      if (!info.found())
        out.notes.push_back(residue_name(c, res) +
                            ": not a residue gemmi knows; taken as an amino acid (it has N, CA and C)");
      res.x = {ca->pos.x, ca->pos.y, ca->pos.z};
      previous = &r;
      c.residues.push_back(res);
    }
    if (!skipped.empty() && !c.residues.empty()) {
      std::string s;
      for (const auto& [name, count] : skipped) s += (s.empty() ? "" : ", ") + name + " x" + std::to_string(count);
      out.notes.push_back("chain " + (c.name.empty() ? std::string("' '") : c.name) +
                          ": left out what is not an amino acid: " + s);
    }
    if (c.residues.empty()) continue;
    // Chain gaps: consecutive C-alpha atoms farther apart than a peptide bond allows.
    CalphaChain piece;
    piece.name = c.name;
    int pieces = 1;
    for (size_t k = 0; k < c.residues.size(); ++k) {
      if (k > 0) {
        const Vec3d d = c.residues[k].x - c.residues[k - 1].x;
        const double r = std::sqrt(dot(d, d));
        if (r > options.max_bond) {
          std::ostringstream m;
          m << residue_name(c, c.residues[k - 1]) << " and " << c.residues[k].name << " " << c.residues[k].id
            << " are consecutive but their C-alpha atoms are " << r
            << " A apart (a peptide bond makes 3.8 A; more than " << options.max_bond
            << " A means residues are missing between them)";
          if (!options.split_at_gaps)
            throw StructureError(residue_where(path, c.residues[k]) + m.str() +
                                 ". --gaps split makes the pieces chains of their own; --max-bond sets the distance");
          out.notes.push_back(m.str() + ": split the chain there");
          out.chains.push_back(piece);
          piece.residues.clear();
          piece.name = c.name + "#" + std::to_string(++pieces);
        }
      }
      piece.residues.push_back(c.residues[k]);
    }
    out.chains.push_back(piece);
  }
  if (out.chains.empty()) throw StructureError(path + ": no amino acids in the chains taken");
  return out;
}

}  // namespace pairmd
