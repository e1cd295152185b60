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
#include <set>
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

// The pieces of chain `c` between its gaps (consecutive C-alpha atoms farther apart than a
// peptide bond allows): a StructureError, or pieces of their own with `split_at_gaps`.
void add_pieces(const std::string& path, const CalphaChain& c, const CalphaOptions& options, CalphaStructure& out) {
  CalphaChain piece;
  piece.name = c.name;
  piece.source = c.source;
  int pieces = 1;
  for (size_t k = 0; k < c.residues.size(); ++k) {
    if (k > 0) {
      const Vec3d d = c.residues[k].x - c.residues[k - 1].x;
      const double r = std::sqrt(dot(d, d));
      if (r > options.max_bond) {
        std::ostringstream m;
        m << residue_name(c, c.residues[k - 1]) << " and " << c.residues[k].name << " " << c.residues[k].id
          << " are consecutive but their C-alpha atoms are " << r << " A apart (a peptide bond makes 3.8 A; more than "
          << options.max_bond << " A means residues are missing between them)";
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

// The C-alpha trace of one chain of the file (its amino acids in order), with the notes.
CalphaChain read_chain(const std::string& path, const gemmi::Chain& chain, const CalphaOptions& options,
                       const std::map<std::string, int>& lines, std::vector<std::string>& notes) {
  CalphaChain c;
  c.name = chain.name;
  c.source = chain.name;
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
    const auto line = lines.find(line_key(chain.name, r.seqid));
    res.line = line == lines.end() ? 0 : line->second;
    if (previous && previous->seqid == r.seqid) {
      notes.push_back(residue_name(c, res) + ": alternative residues " + previous->name + " and " + r.name +
                      " at one position: took " + previous->name);
      continue;
    }
    std::string note;
    const gemmi::Atom* ca = calpha(r, &note);
    if (!ca)
      throw StructureError(residue_where(path, res) + residue_name(c, res) +
                           ": no C-alpha atom (CA); the SOP model puts a bead at each residue's C-alpha. Complete the "
                           "residue, remove it, or take other chains (--chains)");
    if (!note.empty()) {
      if (!options.altloc_highest)
        throw StructureError(residue_where(path, res) + residue_name(c, res) + ": " + note.substr(0, note.find(':')) +
                             ": which one is the native structure? --altloc highest takes the CA of the highest "
                             "occupancy (the first of equal ones); or edit the file");
      notes.push_back(residue_name(c, res) + ": " + note);
    }
    if (!info.found())
      notes.push_back(residue_name(c, res) +
                      ": not a residue gemmi knows; taken as an amino acid (it has N, CA and C)");
    res.x = {ca->pos.x, ca->pos.y, ca->pos.z};
    if (!std::isfinite(res.x.x) || !std::isfinite(res.x.y) || !std::isfinite(res.x.z)) {
      std::ostringstream m;
      m << residue_where(path, res) << residue_name(c, res) << ": the position of its C-alpha atom is not a number ("
        << res.x.x << ", " << res.x.y << ", " << res.x.z << ")";
      throw StructureError(m.str());
    }
    previous = &r;
    c.residues.push_back(res);
  }
  if (!skipped.empty() && !c.residues.empty()) {
    std::string s;
    for (const auto& [name, count] : skipped) s += (s.empty() ? "" : ", ") + name + " x" + std::to_string(count);
    notes.push_back("chain " + (c.name.empty() ? std::string("' '") : c.name) +
                    ": left out what is not an amino acid: " + s);
  }
  return c;
}

// Two C-alpha atoms closer than 1 A are the same atom twice (or a broken file): the model would
// put two beads on each other. Sorted by x, each atom is compared with those within 1 A in x.
void refuse_overlapping_calphas(const CalphaStructure& out) {
  const double closest = 1.0;
  std::vector<std::pair<const CalphaChain*, const CalphaResidue*>> all;
  for (const CalphaChain& c : out.chains)
    for (const CalphaResidue& r : c.residues) all.push_back({&c, &r});
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.second->x.x < b.second->x.x; });
  for (size_t i = 0; i < all.size(); ++i)
    for (size_t j = i + 1; j < all.size() && all[j].second->x.x - all[i].second->x.x < closest; ++j) {
      const Vec3d d = all[j].second->x - all[i].second->x;
      const double r = std::sqrt(dot(d, d));
      if (r >= closest) continue;
      auto [ca, ra] = all[i];
      auto [cb, rb] = all[j];
      // The later residue in the file is where it goes wrong: its line is the one to name.
      if (rb->line > 0 && (ra->line == 0 || rb->line < ra->line)) std::swap(ca, cb), std::swap(ra, rb);
      std::ostringstream m;
      m << residue_where(out.path, *rb) << "the C-alpha atoms of " << residue_name(*ca, *ra) << " and "
        << residue_name(*cb, *rb) << " are " << r << " A apart: one bead would sit on the other (C-alpha atoms are "
        << "never closer than ~2.9 A; is an atom there twice?)";
      throw StructureError(m.str());
    }
}

std::string site_key(const std::string& chain, const std::string& residue_id) { return chain + "|" + residue_id; }

// One disulfide bridge of the file as a CalphaBridge; false, with a note, where it cannot be taken.
bool take_bridge(const gemmi::Connection& conn, const CalphaStructure& out,
                 const std::map<std::string, CalphaSite>& sites, CalphaBridge& bridge,
                 std::vector<std::string>& notes) {
  const gemmi::AtomAddress* partner[2] = {&conn.partner1, &conn.partner2};
  const std::string what = "disulfide bridge " + conn.partner1.chain_name + " " + conn.partner1.res_id.name + " " +
                           seqid_text(conn.partner1.res_id.seqid) + " - " + conn.partner2.chain_name + " " +
                           conn.partner2.res_id.name + " " + seqid_text(conn.partner2.res_id.seqid);
  CalphaSite site[2];
  int taken = 0;
  for (int k = 0; k < 2; ++k) {
    const auto it = sites.find(site_key(partner[k]->chain_name, seqid_text(partner[k]->res_id.seqid)));
    if (it != sites.end()) site[k] = it->second, ++taken;
  }
  bool chain_taken[2] = {false, false};
  for (int k = 0; k < 2; ++k)
    for (const CalphaChain& c : out.chains) chain_taken[k] = chain_taken[k] || c.source == partner[k]->chain_name;
  if (taken < 2) {
    // Bridges of chains not taken at all are not this model's business; say so for the others.
    if (chain_taken[0] || chain_taken[1])
      notes.push_back(
          what + ": left out (" +
          (chain_taken[0] && chain_taken[1] ? "a residue of it is not taken" : "one of its chains is not taken") + ")");
    return false;
  }
  if (conn.asu == gemmi::Asu::Different) {
    notes.push_back(what + ": left out (it joins a symmetry mate, which the model does not hold)");
    return false;
  }
  if (site[0].chain == site[1].chain && std::abs(site[0].residue - site[1].residue) <= 1) {
    notes.push_back(what + ": left out (" +
                    (site[0].residue == site[1].residue ? "a residue with itself"
                                                        : "the residues are bonded along the chain already") +
                    ")");
    return false;
  }
  const Vec3d d =
      out.chains[site[0].chain].residues[site[0].residue].x - out.chains[site[1].chain].residues[site[1].residue].x;
  bridge = {site[0], site[1], std::sqrt(dot(d, d))};
  return true;
}

// The disulfide bridges between residues taken (duplicates once), with notes for the others.
void add_disulfides(const gemmi::Structure& st, const CalphaOptions& options, CalphaStructure& out) {
  std::map<std::string, CalphaSite> sites;
  for (size_t c = 0; c < out.chains.size(); ++c)
    for (size_t k = 0; k < out.chains[c].residues.size(); ++k)
      sites[site_key(out.chains[c].source, out.chains[c].residues[k].id)] = {static_cast<int>(c), static_cast<int>(k)};
  std::set<std::pair<std::pair<int, int>, std::pair<int, int>>> seen;
  for (const gemmi::Connection& conn : st.connections) {
    if (conn.type != gemmi::Connection::Disulf) continue;
    CalphaBridge b;
    if (!take_bridge(conn, out, sites, b, out.notes)) continue;
    const std::pair<int, int> a{b.a.chain, b.a.residue}, c{b.b.chain, b.b.residue};
    if (!seen.insert({std::min(a, c), std::max(a, c)}).second) continue;
    if (b.distance > options.max_disulfide) {
      std::ostringstream m;
      m << bridge_name(out, b) << ": disulfide bridge left out: its C-alpha atoms are " << b.distance
        << " A apart (bridges make 4.4-6.8 A; SOP-GPU takes them up to " << options.max_disulfide << " A)";
      out.notes.push_back(m.str());
      continue;
    }
    out.disulfides.push_back(b);
  }
}

}  // namespace

std::string residue_where(const std::string& path, const CalphaResidue& r) {
  return r.line > 0 ? path + ":" + std::to_string(r.line) + ": " : path + ": ";
}

std::string residue_name(const CalphaChain& c, const CalphaResidue& r) {
  return "chain " + (c.name.empty() ? std::string("' '") : c.name) + " residue " + r.name + " " + r.id;
}

std::string bridge_name(const CalphaStructure& s, const CalphaBridge& b) {
  const CalphaChain &ca = s.chains[b.a.chain], &cb = s.chains[b.b.chain];
  const CalphaResidue &ra = ca.residues[b.a.residue], &rb = cb.residues[b.b.residue];
  auto chain = [](const CalphaChain& c) { return "chain " + (c.name.empty() ? std::string("' '") : c.name); };
  return chain(ca) + " " + ra.name + " " + ra.id + " - " + chain(cb) + " " + rb.name + " " + rb.id;
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
  for (const std::string& want : options.chains) {
    bool found = false;
    for (const gemmi::Chain& c : st.models[0].chains) found = found || c.name == want;
    if (!found) throw StructureError(path + ": there is no chain '" + want + "' in the first model");
  }
  for (const gemmi::Chain& chain : st.models[0].chains) {
    if (!options.chains.empty() &&
        std::find(options.chains.begin(), options.chains.end(), chain.name) == options.chains.end())
      continue;
    const CalphaChain c = read_chain(path, chain, options, lines, out.notes);
    if (!c.residues.empty()) add_pieces(path, c, options, out);
  }
  if (out.chains.empty()) throw StructureError(path + ": no amino acids in the chains taken");
  refuse_overlapping_calphas(out);
  if (options.disulfides) add_disulfides(st, options, out);
  return out;
}

}  // namespace pairmd
