// LAMMPS data files (the format of read_data / write_data): what pairmd can use of them, with
// every problem reported as FILE:LINE: what is wrong.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "base/text.h"
#include "engine/resources.h"
#include "io/start_readers.h"

namespace pairmd {

namespace {

struct Line {
  int number;           // 1-based line number in the file
  std::string text;     // without its comment
  std::string comment;  // after '#', trimmed
  std::vector<std::string> words;
};

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t\r");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t\r") - a + 1);
}

class Parser {
 public:
  explicit Parser(std::string path) : path_(std::move(path)) {
    std::ifstream in(path_);
    if (!in) throw StartFileError("cannot open '" + path_ + "'");
    std::string raw;
    int n = 0;
    while (std::getline(in, raw)) {
      Line l;
      l.number = ++n;
      const size_t hash = raw.find('#');
      l.text = trim(hash == std::string::npos ? raw : raw.substr(0, hash));
      if (hash != std::string::npos) l.comment = trim(raw.substr(hash + 1));
      std::istringstream w(l.text);
      for (std::string x; w >> x;) l.words.push_back(x);
      lines_.push_back(std::move(l));
    }
    if (in.bad()) throw StartFileError("cannot read '" + path_ + "'");
  }

  [[noreturn]] void fail(const Line& l, const std::string& what) const {
    throw StartFileError(path_ + ":" + std::to_string(l.number) + ": " + what);
  }
  [[noreturn]] void fail_at_end(const std::string& what) const {
    throw StartFileError(path_ + ":" + std::to_string(lines_.size()) + ": " + what);
  }

  double number(const Line& l, size_t k, const char* what) const {
    const std::string& w = l.words.at(k);
    char* end = nullptr;
    const double v = std::strtod(w.c_str(), &end);
    if (end == w.c_str() || *end)
      fail(l, std::string("expected a number for ") + what + ", got '" + printable(w) + "'");
    if (!std::isfinite(v)) fail(l, std::string(what) + " is '" + printable(w) + "', not a finite number");
    return v;
  }
  int64_t integer(const Line& l, size_t k, const char* what) const {
    const std::string& w = l.words.at(k);
    char* end = nullptr;
    const long long v = std::strtoll(w.c_str(), &end, 10);
    if (end == w.c_str() || *end)
      fail(l, std::string("expected an integer for ") + what + ", got '" + printable(w) + "'");
    return v;
  }

  // A box bound or edge of line l, within the range pairmd takes for coordinates.
  void require_coordinate(const Line& l, double v, const std::string& what) const {
    const std::string problem = coordinate_problem(v, what);
    if (!problem.empty()) fail(l, problem);
  }

  const std::vector<Line>& lines() const { return lines_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::vector<Line> lines_;
};

// Section names of read_data and the header count that says how many lines each has.
const std::map<std::string, std::string>& sections() {
  static const std::map<std::string, std::string> s = {{"Atoms", "atoms"},
                                                       {"Velocities", "atoms"},
                                                       {"Masses", "atom types"},
                                                       {"Bonds", "bonds"},
                                                       {"Angles", "angles"},
                                                       {"Dihedrals", "dihedrals"},
                                                       {"Impropers", "impropers"},
                                                       {"Pair Coeffs", "atom types"},
                                                       {"PairIJ Coeffs", "pairij"},
                                                       {"Bond Coeffs", "bond types"},
                                                       {"Angle Coeffs", "angle types"},
                                                       {"Dihedral Coeffs", "dihedral types"},
                                                       {"Improper Coeffs", "improper types"},
                                                       {"BondBond Coeffs", "angle types"},
                                                       {"BondAngle Coeffs", "angle types"},
                                                       {"MiddleBondTorsion Coeffs", "dihedral types"},
                                                       {"EndBondTorsion Coeffs", "dihedral types"},
                                                       {"AngleTorsion Coeffs", "dihedral types"},
                                                       {"AngleAngleTorsion Coeffs", "dihedral types"},
                                                       {"BondBond13 Coeffs", "dihedral types"},
                                                       {"AngleAngle Coeffs", "improper types"},
                                                       {"Atom Type Labels", "atom types"},
                                                       {"Bond Type Labels", "bond types"},
                                                       {"Angle Type Labels", "angle types"},
                                                       {"Dihedral Type Labels", "dihedral types"},
                                                       {"Improper Type Labels", "improper types"},
                                                       {"Ellipsoids", "ellipsoids"},
                                                       {"Lines", "lines"},
                                                       {"Triangles", "triangles"},
                                                       {"Bodies", "bodies"}};
  return s;
}

// Columns of an Atoms line before the (optional) image flags: where id, type, q and x are.
struct Style {
  std::string name;
  size_t columns;
  int mol, type, q, x;  // column indices (-1: none)
};

const std::vector<Style>& styles() {
  static const std::vector<Style> s = {{"atomic", 5, -1, 1, -1, 2}, {"bond", 6, 1, 2, -1, 3},
                                       {"angle", 6, 1, 2, -1, 3},   {"molecular", 6, 1, 2, -1, 3},
                                       {"charge", 6, -1, 1, 2, 3},  {"full", 7, 1, 2, 3, 4}};
  return s;
}

const Style* find_style(const std::string& name) {
  for (const Style& s : styles())
    if (s.name == name) return &s;
  return nullptr;
}

std::string style_names() {
  std::string n;
  for (const Style& s : styles()) n += (n.empty() ? "" : ", ") + s.name;
  return n;
}

// ---- Angles, Dihedrals, Impropers and their Coeffs ---------------------------------------------
// Kept apart from the sections above: each family (angle, dihedral, improper) is the same code
// over its registry (potentials/registry.h).

// One family's sections as the file gives them.
struct BondedSections {
  BondedSections(const char* family_, const char* section_, size_t atoms_)
      : family(family_), section(section_), atoms(atoms_) {}
  const char* family;   // "angle", "dihedral", "improper"
  const char* section;  // "Angles", ...
  size_t atoms;         // atoms per term: 3 or 4
  int64_t ntypes = 0;
  std::vector<std::string> labels;
  std::vector<std::vector<int64_t>> terms;  // type (from 0), then the atom ids
  std::vector<int> lines;
  const Line* coeffs_head = nullptr;  // the Coeffs section, if the file has one
  std::vector<const Line*> coeffs;
};

// A line of Angles (Dihedrals, Impropers): "id type atom1 atom2 atom3 [atom4]".
void read_bonded_terms(const Parser& p, const std::vector<const Line*>& body, BondedSections& b,
                       const std::function<int(const Line&, size_t)>& type_of) {
  for (const Line* lp : body) {
    const Line& l = *lp;
    if (l.words.size() != 2 + b.atoms)
      p.fail(l, std::string(b.section) + ": expected 'id type " +
                    (b.atoms == 3 ? "atom1 atom2 atom3" : "atom1 atom2 atom3 atom4") + "', got " +
                    std::to_string(l.words.size()) + " columns");
    std::vector<int64_t> t = {type_of(l, 1)};
    for (size_t a = 0; a < b.atoms; ++a) t.push_back(p.integer(l, 2 + a, "an atom id"));
    b.terms.push_back(std::move(t));
    b.lines.push_back(l.number);
  }
}

// The style of a Coeffs section: its "# style" comment (write_data writes it).
std::string coeffs_style(const Line& head) {
  std::istringstream c(head.comment);
  std::string style;
  c >> style;
  return style;
}

// The coefficients of one Coeffs line in pairmd's order for `info` (LAMMPS's order; a fourier
// line's leading count dropped), checked against their specs.
template <typename Kind>
BondedCoeffs coeffs_of_line(const Parser& p, const Line& l, size_t first, const BondedPotentialInfo<Kind>& info,
                            const std::string& style, const std::string& where) {
  BondedCoeffs c;
  const size_t have = l.words.size() - first;
  if (style == "charmm") {  // K n d w: a fourier term, when the 1-4 weight w is 0
    if (have != 4) p.fail(l, where + ": charmm takes 'K n d w', got " + std::to_string(have) + " numbers");
    if (p.number(l, first + 3, "the 1-4 weight w") != 0.0)
      p.fail(l, where +
                    ": charmm with a 1-4 weight w other than 0: pairmd scales 1-4 pairs with "
                    "force_field.special_bonds instead (set w to 0 here)");
    for (size_t q = 0; q < 3; ++q) c.values.push_back(p.number(l, first + q, info.coeffs[q].name));
  } else if (info.max_repeats > 0) {  // m, then m groups
    const int64_t m = have > 0 ? p.integer(l, first, "the number of terms") : 0;
    if (m < 1 || m > info.max_repeats || have != 1 + static_cast<size_t>(m * info.ncoeffs))
      p.fail(l, where + ": " + style + " takes 'm' and m groups of " + std::to_string(info.ncoeffs) +
                    " numbers, m 1 to " + std::to_string(info.max_repeats));
    for (size_t q = 1; q < have; ++q) c.values.push_back(p.number(l, first + q, "a coefficient"));
  } else {
    if (have != static_cast<size_t>(info.ncoeffs)) {
      std::string names;
      for (int q = 0; q < info.ncoeffs; ++q) names += (q ? " " : "") + std::string(info.coeffs[q].name);
      p.fail(l, where + ": " + style + " takes '" + names + "', got " + std::to_string(have) + " numbers");
    }
    for (size_t q = 0; q < have; ++q) c.values.push_back(p.number(l, first + q, info.coeffs[q].name));
  }
  for (size_t q = 0; q < c.values.size(); ++q) {
    const BondedCoeffSpec& spec = info.coeffs[q % info.ncoeffs];
    const double v = c.values[q];
    if (v < spec.lo || v > spec.hi || (spec.integer && v != std::floor(v)) || (spec.nonzero && v == 0)) {
      std::ostringstream m;
      m << where << ": " << spec.name << " = " << v << ", expected " << spec.meaning;
      p.fail(l, m.str());
    }
  }
  return c;
}

template <typename Kind, size_t N>
const BondedPotentialInfo<Kind>* find_lammps_style(const BondedPotentialInfo<Kind> (&registry)[N],
                                                   const std::string& style) {
  for (const auto& i : registry)
    if (style == i.lammps_style || (style == "charmm" && std::string(i.lammps_style) == "fourier")) return &i;
  return nullptr;
}

template <typename Kind, size_t N>
std::string lammps_style_names(const BondedPotentialInfo<Kind> (&registry)[N]) {
  std::string s;
  for (const auto& i : registry) s += (s.empty() ? "" : ", ") + std::string(i.lammps_style);
  return s;
}

// The family's types with their coefficients from its Coeffs section; throws StartFileError when
// there is no section, a type has no line, or a style is not one pairmd has.
template <typename Kind, size_t N>
std::vector<BondedType<Kind>> bonded_types(const Parser& p, const BondedSections& b,
                                           const BondedPotentialInfo<Kind> (&registry)[N],
                                           const std::function<int(const Line&, size_t)>& type_of) {
  std::vector<BondedType<Kind>> types(b.ntypes);
  if (b.ntypes == 0) return types;
  std::string section = std::string(1, static_cast<char>(std::toupper(b.family[0]))) + (b.family + 1) + " Coeffs";
  if (!b.coeffs_head)
    throw StartFileError(p.path() + ": the file has " + std::to_string(b.ntypes) + " " + b.family + " type(s) but no " +
                         section + " section (their coefficients)");
  const std::string style = coeffs_style(*b.coeffs_head);
  if (style.empty())
    p.fail(*b.coeffs_head, section + " names no style: write it as '" + section +
                               " # harmonic', as LAMMPS's "
                               "write_data does (pairmd has " +
                               lammps_style_names(registry) + ")");
  std::vector<char> given(b.ntypes, 0);
  for (const Line* lp : b.coeffs) {
    const Line& l = *lp;
    const int t = type_of(l, 0);
    const bool hybrid = style == "hybrid";
    if (hybrid && l.words.size() < 2) p.fail(l, section + ": expected 'type style coefficients...' (hybrid)");
    const std::string line_style = hybrid ? l.words[1] : style;
    const BondedPotentialInfo<Kind>* info = find_lammps_style(registry, line_style);
    if (!info)
      p.fail(hybrid ? l : *b.coeffs_head, section + ": " + b.family + " style '" + printable(line_style) +
                                              "' is not one pairmd has (" + lammps_style_names(registry) + ")");
    if (given[t]) p.fail(l, section + ": a second line for " + b.family + " type " + printable(l.words[0]));
    given[t] = 1;
    BondedType<Kind>& type = types[t];
    type.name = b.labels[t].empty() ? std::to_string(t + 1) : b.labels[t];
    type.kind = info->kind;
    type.coeffs =
        coeffs_of_line(p, l, hybrid ? 2 : 1, *info, line_style,
                       section + ": " + b.family + " type " + printable(l.words[0]) + " (" + line_style + ")");
  }
  for (int64_t t = 0; t < b.ntypes; ++t)
    if (!given[t])
      p.fail(*b.coeffs_head, section + ": no coefficients for " + b.family + " type " + std::to_string(t + 1));
  return types;
}

// The family's terms by particle index into the topology; the file's type labels where it has
// all of them.
void take_bonded_terms(const std::string& path, const BondedSections& b, const std::map<int64_t, int>& index_of,
                       std::vector<Angle>* angles, std::vector<Dihedral>* quads, std::vector<std::string>& names) {
  for (size_t k = 0; k < b.terms.size(); ++k) {
    const std::vector<int64_t>& t = b.terms[k];
    int idx[4] = {0, 0, 0, 0};
    for (size_t a = 0; a < b.atoms; ++a) {
      auto it = index_of.find(t[1 + a]);
      if (it == index_of.end())
        throw StartFileError(path + ":" + std::to_string(b.lines[k]) + ": " + b.section + ": atom " +
                             std::to_string(t[1 + a]) + " is not in the Atoms section");
      idx[a] = it->second;
      for (size_t q = 0; q < a; ++q)
        if (idx[q] == idx[a])
          throw StartFileError(path + ":" + std::to_string(b.lines[k]) + ": " + b.section + ": atom " +
                               std::to_string(t[1 + a]) + " is named twice in one " + b.family);
    }
    if (angles)
      angles->push_back({idx[0], idx[1], idx[2], static_cast<int>(t[0])});
    else
      quads->push_back({idx[0], idx[1], idx[2], idx[3], static_cast<int>(t[0])});
  }
  if (b.ntypes > 0 && std::all_of(b.labels.begin(), b.labels.end(), [](const std::string& l) { return !l.empty(); }))
    names = b.labels;
}

// Each family's types from its Coeffs, or the reason there are none (kept: it matters only where
// the config takes the file's types).
template <typename Kind, size_t N>
void take_bonded_types(const Parser& p, const BondedSections& b, const BondedPotentialInfo<Kind> (&registry)[N],
                       const std::function<int(const Line&, size_t)>& type_of, std::vector<BondedType<Kind>>& out,
                       std::string& problem) {
  try {
    out = bonded_types(p, b, registry, type_of);
  } catch (const StartFileError& e) {
    out.clear();
    problem = e.what();
  }
}

// The header: counts, box, and where the first section starts.
struct Header {
  std::map<std::string, int64_t> count;
  std::map<std::string, const Line*> count_line;
  double lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
  bool have_box[3] = {false, false, false};
  size_t first_section = 0;  // index into the lines
};

std::string words_from(const std::vector<std::string>& w, size_t skip) {
  std::string key;
  for (size_t i = skip; i < w.size(); ++i) key += (key.empty() ? "" : " ") + w[i];
  return key;
}

// A header line of the box (xlo xhi, avec/bvec/cvec, abc origin, xy xz yz): read into `h`.
// False when the line is not one.
bool read_box_line(const Parser& p, const Line& l, Header& h) {
  const std::vector<std::string>& w = l.words;
  if (w.size() >= 4 &&
      (w[2] + " " + w[3] == "xlo xhi" || w[2] + " " + w[3] == "ylo yhi" || w[2] + " " + w[3] == "zlo zhi")) {
    const int d = w[2][0] - 'x';
    h.lo[d] = p.number(l, 0, "the box's lower bound");
    h.hi[d] = p.number(l, 1, "the box's upper bound");
    p.require_coordinate(l, h.lo[d], w[2] + " " + w[3] + ": the box's bound");
    p.require_coordinate(l, h.hi[d], w[2] + " " + w[3] + ": the box's bound");
    if (!(h.hi[d] > h.lo[d])) p.fail(l, w[2] + " " + w[3] + ": the upper bound must be above the lower");
    h.have_box[d] = true;
    return true;
  }
  // LAMMPS's general triclinic form (written by LAMMPS since 2024 and by OVITO): avec, bvec,
  // cvec and the origin; pairmd takes it when the cell vectors are along the axes.
  if (w.size() == 4 && (w[3] == "avec" || w[3] == "bvec" || w[3] == "cvec")) {
    const int d = w[3][0] - 'a';
    for (int t = 0; t < 3; ++t) {
      const double v = p.number(l, t, "a cell vector component");
      if (t != d && v != 0.0)
        p.fail(l, w[3] + " is not along the " + "xyz"[d] +
                      " axis: the box is triclinic; pairmd supports orthorhombic boxes only");
      if (t == d) {
        if (!(v > 0)) p.fail(l, w[3] + ": the edge must be > 0");
        p.require_coordinate(l, v, w[3] + ": the box's edge");
        h.hi[d] = h.lo[d] + v;
      }
    }
    h.have_box[d] = true;
    return true;
  }
  if (w.size() == 5 && words_from(w, 3) == "abc origin") {
    for (int d = 0; d < 3; ++d) {
      const double edge = h.hi[d] - h.lo[d];
      h.lo[d] = p.number(l, d, "the origin");
      h.hi[d] = h.lo[d] + edge;
      p.require_coordinate(l, h.lo[d], "abc origin: the box's bound");
      p.require_coordinate(l, h.hi[d], "abc origin: the box's bound");
    }
    return true;
  }
  if (w.size() >= 6 && words_from(w, 3) == "xy xz yz") {
    for (int t = 0; t < 3; ++t)
      if (p.number(l, t, "a tilt factor") != 0.0)
        p.fail(l, "the box is triclinic (xy xz yz not zero); pairmd supports orthorhombic boxes only");
    return true;
  }
  return false;
}

bool is_section(const Line& l) { return sections().count(l.text) > 0; }

// The header: from line 2 up to the first section keyword.
Header read_header(const Parser& p) {
  static const std::set<std::string> counts = {"atoms",
                                               "bonds",
                                               "angles",
                                               "dihedrals",
                                               "impropers",
                                               "atom types",
                                               "bond types",
                                               "angle types",
                                               "dihedral types",
                                               "improper types",
                                               "extra bond per atom",
                                               "extra angle per atom",
                                               "extra dihedral per atom",
                                               "extra improper per atom",
                                               "extra special per atom",
                                               "ellipsoids",
                                               "lines",
                                               "triangles",
                                               "bodies"};
  const std::vector<Line>& lines = p.lines();
  Header h;
  size_t k = 1;
  for (; k < lines.size(); ++k) {
    const Line& l = lines[k];
    if (l.words.empty()) continue;
    if (is_section(l)) break;
    if (read_box_line(p, l, h)) continue;
    const std::string key = words_from(l.words, 1);
    if (l.words.size() >= 2 && counts.count(key)) {
      const int64_t v = p.integer(l, 0, key.c_str());
      if (v < 0) p.fail(l, key + ": expected a count >= 0, got " + l.words[0]);
      h.count[key] = v;
      h.count_line[key] = &l;
      continue;
    }
    p.fail(l, "not a header line pairmd knows: '" + printable(l.text) +
                  "' (expected 'N atoms', 'N atom types', 'xlo xhi', ... or a section name such as Atoms)");
  }
  if (k >= lines.size()) p.fail_at_end("no Atoms section");
  for (int d = 0; d < 3; ++d)
    if (!h.have_box[d])
      p.fail(lines[k], std::string("the header has no ") + "xyz"[d] + "lo " + "xyz"[d] + "hi line (the box)");
  h.first_section = k;
  return h;
}

int64_t count_of(const Header& h, const std::string& key) {
  auto it = h.count.find(key);
  return it == h.count.end() ? 0 : it->second;
}

// What the sections give, in file order.
struct Sections {
  int64_t natoms = 0, ntypes = 0, nbonds = 0, nbtypes = 0;
  std::vector<int64_t> ids;  // file atom ids in file order
  std::vector<int> lines;    // their lines
  std::vector<Vec3d> pos, vel;
  std::vector<Int3> img;
  std::vector<int> type;
  std::vector<double> charge;
  std::map<int64_t, size_t> velocity_line;
  std::vector<double> type_mass;
  std::vector<char> type_mass_given;
  std::vector<std::string> type_label, bond_label;
  std::vector<std::array<int64_t, 3>> bonds;  // type, id1, id2
  std::vector<int> bond_line;
  std::set<std::string> seen;
  int atoms_line = 0;
  const Style* style = nullptr;
  BondedSections angles{"angle", "Angles", 3}, dihedrals{"dihedral", "Dihedrals", 4},
      impropers{"improper", "Impropers", 4};
  BondedSections* bonded_of(const std::string& name) {
    return name.rfind("Angle", 0) == 0 ? &angles : name.rfind("Dihedral", 0) == 0 ? &dihedrals : &impropers;
  }
};

// The header's counts, checked; the per-type tables sized by them.
Sections check_counts(const Parser& p, const Header& h) {
  const std::vector<Line>& lines = p.lines();
  Sections s;
  s.natoms = count_of(h, "atoms");
  s.ntypes = count_of(h, "atom types");
  s.nbonds = count_of(h, "bonds");
  s.nbtypes = count_of(h, "bond types");
  if (s.natoms <= 0) p.fail(lines[0], "the header gives no atoms ('N atoms')");
  if (s.natoms > kMaxParticles)
    p.fail(*h.count_line.at("atoms"),
           std::to_string(s.natoms) + " atoms, more than the " + std::to_string(kMaxParticles) + " pairmd can hold");
  if (s.ntypes <= 0) p.fail(lines[0], "the header gives no atom types ('N atom types')");
  if (s.nbonds > 0 && s.nbtypes <= 0) p.fail(lines[0], "the file has bonds but no 'N bond types' line");
  // The tables per type (mass, label, name, the map onto the config's) before they are made.
  for (const auto& [key, bytes] : {std::pair<const char*, double>{"atom types", 96},
                                   {"bond types", 80},
                                   {"angle types", 160},
                                   {"dihedral types", 160},
                                   {"improper types", 160}}) {
    const std::string room = room_for(static_cast<double>(count_of(h, key)), kMaxParticles, bytes, key);
    if (!room.empty()) p.fail(*h.count_line.at(key), room);
  }
  s.type_mass.assign(s.ntypes, 0.0);
  s.type_mass_given.assign(s.ntypes, 0);
  s.type_label.assign(s.ntypes, "");
  s.bond_label.assign(s.nbtypes, "");
  for (BondedSections* b : {&s.angles, &s.dihedrals, &s.impropers}) {
    b->ntypes = count_of(h, std::string(b->family) + " types");
    if (count_of(h, std::string(b->family) + "s") > 0 && b->ntypes <= 0)
      p.fail(lines[0], std::string("the file has ") + b->family + "s but no 'N " + b->family + " types' line");
    b->labels.assign(b->ntypes, "");
  }
  return s;
}

// The section's lines: the next n lines that are not blank; `k` moves past them.
std::vector<const Line*> section_body(const Parser& p, size_t& k, const std::string& name, const std::string& what,
                                      int64_t n) {
  const std::vector<Line>& lines = p.lines();
  std::vector<const Line*> body;
  size_t j = k + 1;
  for (; j < lines.size() && static_cast<int64_t>(body.size()) < n; ++j) {
    if (lines[j].words.empty()) continue;
    if (is_section(lines[j]))
      p.fail(lines[j], name + " has " + std::to_string(body.size()) + " lines, the header promises " +
                           std::to_string(n) + " (" + what + ")");
    body.push_back(&lines[j]);
  }
  if (static_cast<int64_t>(body.size()) < n)
    p.fail_at_end(name + " has " + std::to_string(body.size()) + " lines, the header promises " + std::to_string(n) +
                  " (" + what + ")");
  k = j;
  return body;
}

// A type column: a label of `labels`, else a number in 1..ntype; the index from 0.
int type_index(const Parser& p, const Line& l, size_t col, const std::vector<std::string>& labels, int64_t ntype,
               const char* kind) {
  const std::string& w = l.words[col];
  for (size_t t = 0; t < labels.size(); ++t)
    if (!labels[t].empty() && labels[t] == w) return static_cast<int>(t);
  const int64_t t = p.integer(l, col, kind);
  if (t < 1 || t > ntype) p.fail(l, std::string(kind) + " " + printable(w) + " is not in 1.." + std::to_string(ntype));
  return static_cast<int>(t - 1);
}

// The atom style: system.file.atom_style, else the "Atoms # style" comment, else the number of
// columns (with a note).
const Style* atoms_style(const Parser& p, const Line& head, const std::vector<const Line*>& body,
                         const std::string& atom_style, int64_t nbonds, std::vector<std::string>& notes) {
  std::string chosen = atom_style == "auto" ? "" : atom_style;
  std::string hint;
  if (!head.comment.empty()) {
    std::istringstream c(head.comment);
    c >> hint;
  }
  if (chosen.empty() && !hint.empty()) {
    if (!find_style(hint))
      p.fail(head, "atom style '" + printable(hint) + "' is not one pairmd reads (" + style_names() + ")");
    chosen = hint;
  } else if (!chosen.empty() && !hint.empty() && hint != chosen &&
             !(find_style(hint) && find_style(hint)->columns == find_style(chosen)->columns &&
               find_style(hint)->q == find_style(chosen)->q)) {
    p.fail(head, "the file says atom style " + printable(hint) + ", system.file.atom_style says " + chosen);
  }
  if (chosen.empty()) {
    const size_t cols = body.empty() ? 0 : body[0]->words.size();
    if (cols == 5 || cols == 8)
      chosen = "atomic";
    else if (cols == 7 || cols == 10)
      chosen = "full";
    else if ((cols == 6 || cols == 9) && nbonds > 0)
      chosen = "molecular";
    else if (cols == 6 || cols == 9)
      p.fail(*body[0],
             "6 columns fit atom styles bond/molecular (id mol type x y z) and charge (id type q x y z); "
             "name it: 'Atoms # charge' in the file or system.file.atom_style");
    else
      p.fail(*body[0], "cannot tell the atom style from " + std::to_string(cols) +
                           " columns; name it: 'Atoms # full' in the file or system.file.atom_style");
    notes.push_back("atom style " + chosen + " (from the number of columns of " + p.path() + ":" +
                    std::to_string(body[0]->number) + ")");
  }
  const Style* style = find_style(chosen);
  if (!style) p.fail(head, "atom style '" + chosen + "' is not one pairmd reads (" + style_names() + ")");
  return style;
}

// One line of the Atoms section: id, type, charge, position and image flags.
void read_atom_line(const Parser& p, const Line& l, Sections& s) {
  const Style& style = *s.style;
  const size_t c = l.words.size();
  if (c != style.columns && c != style.columns + 3)
    p.fail(l, "expected " + std::to_string(style.columns) + " or " + std::to_string(style.columns + 3) +
                  " columns for atom style " + style.name + ", got " + std::to_string(c));
  const int64_t id = p.integer(l, 0, "the atom id");
  if (id < 1) p.fail(l, "atom id " + l.words[0] + " is not >= 1");
  s.ids.push_back(id);
  s.lines.push_back(l.number);
  s.type.push_back(type_index(p, l, style.type, s.type_label, s.ntypes, "atom type"));
  s.charge.push_back(style.q >= 0 ? p.number(l, style.q, "the charge") : 0.0);
  s.pos.push_back({p.number(l, style.x, "x"), p.number(l, style.x + 1, "y"), p.number(l, style.x + 2, "z")});
  Int3 im{0, 0, 0};
  if (c == style.columns + 3) {
    const int64_t a = p.integer(l, style.columns, "the x image flag"),
                  b = p.integer(l, style.columns + 1, "the y image flag"),
                  z = p.integer(l, style.columns + 2, "the z image flag");
    if (std::llabs(a) > 1000000 || std::llabs(b) > 1000000 || std::llabs(z) > 1000000)
      p.fail(l, "implausible image flags");
    im = {static_cast<int>(a), static_cast<int>(b), static_cast<int>(z)};
  }
  s.img.push_back(im);
}

void read_velocities(const Parser& p, const std::vector<const Line*>& body, Sections& s) {
  for (const Line* lp : body) {
    const Line& l = *lp;
    if (l.words.size() < 4) p.fail(l, "expected 'id vx vy vz', got " + std::to_string(l.words.size()) + " columns");
    const int64_t id = p.integer(l, 0, "the atom id");
    if (!s.velocity_line.emplace(id, s.vel.size()).second) p.fail(l, "a second velocity for atom " + l.words[0]);
    s.vel.push_back({p.number(l, 1, "vx"), p.number(l, 2, "vy"), p.number(l, 3, "vz")});
  }
}

void read_masses(const Parser& p, const std::vector<const Line*>& body, Sections& s) {
  for (const Line* lp : body) {
    const Line& l = *lp;
    if (l.words.size() < 2) p.fail(l, "expected 'type mass'");
    const int t = type_index(p, l, 0, s.type_label, s.ntypes, "atom type");
    const double m = p.number(l, 1, "the mass");
    if (!(m > 0)) p.fail(l, "mass " + l.words[1] + " is not > 0");
    s.type_mass[t] = m;
    s.type_mass_given[t] = 1;
  }
}

void read_bonds(const Parser& p, const std::vector<const Line*>& body, Sections& s) {
  for (const Line* lp : body) {
    const Line& l = *lp;
    if (l.words.size() != 4)
      p.fail(l, "expected 'id type atom1 atom2', got " + std::to_string(l.words.size()) + " columns");
    const int t = type_index(p, l, 1, s.bond_label, s.nbtypes, "bond type");
    s.bonds.push_back({t, p.integer(l, 2, "the first atom"), p.integer(l, 3, "the second atom")});
    s.bond_line.push_back(l.number);
  }
}

void read_labels(const Parser& p, const std::vector<const Line*>& body, std::vector<std::string>& labels) {
  for (const Line* lp : body) {
    const Line& l = *lp;
    if (l.words.size() != 2) p.fail(l, "expected 'type label'");
    const int64_t t = p.integer(l, 0, "the type");
    if (t < 1 || t > static_cast<int64_t>(labels.size()))
      p.fail(l, "type " + l.words[0] + " is not in 1.." + std::to_string(labels.size()));
    labels[t - 1] = l.words[1];
  }
}

// One section (its head line and its body): read into `s`, or read past with a note.
void read_section(const Parser& p, const Line& head, const std::vector<const Line*>& body,
                  const std::string& atom_style, Sections& s, StartStructure& out) {
  const std::string& name = head.text;
  if (name == "Atoms") {
    s.atoms_line = head.number;
    s.style = atoms_style(p, head, body, atom_style, s.nbonds, out.notes);
    for (const Line* l : body) read_atom_line(p, *l, s);
  } else if (name == "Velocities") {
    read_velocities(p, body, s);
  } else if (name == "Masses") {
    read_masses(p, body, s);
  } else if (name == "Bonds") {
    read_bonds(p, body, s);
  } else if (name == "Atom Type Labels" || name == "Bond Type Labels") {
    read_labels(p, body, name[0] == 'A' ? s.type_label : s.bond_label);
  } else if (name == "Angles" || name == "Dihedrals" || name == "Impropers") {
    BondedSections& b = *s.bonded_of(name);
    read_bonded_terms(p, body, b, [&](const Line& l, size_t col) {
      return type_index(p, l, col, b.labels, b.ntypes, (std::string(b.family) + " type").c_str());
    });
  } else if (name == "Angle Type Labels" || name == "Dihedral Type Labels" || name == "Improper Type Labels") {
    read_labels(p, body, s.bonded_of(name)->labels);
  } else if (name == "Angle Coeffs" || name == "Dihedral Coeffs" || name == "Improper Coeffs") {
    s.bonded_of(name)->coeffs_head = &head;
    s.bonded_of(name)->coeffs = body;
  } else if (name.find("Coeffs") != std::string::npos) {
    out.notes.push_back(name + " of the file are not used: the force field is the config's");
  } else if (name.find("Type Labels") == std::string::npos) {
    p.fail(head, name + ": pairmd reads point particles only");
  }
}

// The sections, from line index `k` to the end.
void read_sections(const Parser& p, const Header& h, size_t k, const std::string& atom_style, Sections& s,
                   StartStructure& out) {
  const std::vector<Line>& lines = p.lines();
  while (k < lines.size()) {
    const Line& head = lines[k];
    if (head.words.empty()) {
      ++k;
      continue;
    }
    if (!is_section(head)) p.fail(head, "not a section pairmd knows: '" + printable(head.text) + "'");
    const std::string& name = head.text;
    if (!s.seen.insert(name).second) p.fail(head, "a second " + name + " section");
    const std::string& what = sections().at(name);
    const int64_t n = what == "pairij" ? s.ntypes * (s.ntypes + 1) / 2 : count_of(h, what);
    const std::vector<const Line*> body = section_body(p, k, name, what, n);
    read_section(p, head, body, atom_style, s, out);
  }
  if (!s.style) p.fail_at_end("no Atoms section");
}

// Atoms in the order of their ids into `st`; the index of each file id.
std::map<int64_t, int> place_atoms(const std::string& path, const Sections& s, StartStructure& out) {
  SystemState& st = out.state;
  std::vector<size_t> order(s.ids.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return s.ids[a] < s.ids[b]; });
  std::map<int64_t, int> index_of;
  for (size_t r = 0; r < order.size(); ++r) {
    if (r > 0 && s.ids[order[r]] == s.ids[order[r - 1]])
      throw StartFileError(path + ":" + std::to_string(s.atoms_line) + ": Atoms: atom id " +
                           std::to_string(s.ids[order[r]]) + " is given twice");
    index_of[s.ids[order[r]]] = static_cast<int>(r);
  }
  const size_t n = order.size();
  st.position.resize(n);
  st.image.resize(n);
  st.velocity.assign(n, Vec3d{0, 0, 0});
  st.type.resize(n);
  st.charge.resize(n);
  st.mass.resize(n);
  out.lines.resize(n);
  for (size_t r = 0; r < n; ++r) {
    const size_t i = order[r];
    out.lines[r] = s.lines[i];
    st.position[r] = s.pos[i];
    st.image[r] = s.img[i];
    st.type[r] = s.type[i];
    st.charge[r] = s.charge[i];
    st.mass[r] = s.type_mass[s.type[i]];
  }
  return index_of;
}

void place_velocities(const std::string& path, const Sections& s, const std::map<int64_t, int>& index_of,
                      StartStructure& out) {
  if (s.vel.empty()) return;
  for (const auto& [id, at] : s.velocity_line) {
    auto it = index_of.find(id);
    if (it == index_of.end())
      throw StartFileError(path + ": Velocities: atom " + std::to_string(id) + " is not in Atoms");
    out.state.velocity[it->second] = s.vel[at];
  }
  out.has_velocities = true;
}

// Types: labels where the file has them (matched by name), else numbers (matched by order);
// masses where the Masses section gives every type one.
void take_types(const std::string& path, const Sections& s, StartStructure& out) {
  auto all_named = [](const std::vector<std::string>& labels) {
    return std::all_of(labels.begin(), labels.end(), [](const std::string& l) { return !l.empty(); });
  };
  const bool labelled = all_named(s.type_label);
  for (int64_t t = 0; t < s.ntypes; ++t)
    out.state.type_names.push_back(labelled ? s.type_label[t] : std::to_string(t + 1));
  out.types_by_name = labelled;
  out.has_charges = s.style->q >= 0;
  const bool all_masses =
      std::all_of(s.type_mass_given.begin(), s.type_mass_given.end(), [](char g) { return g != 0; });
  if (s.seen.count("Masses") && !all_masses) throw StartFileError(path + ": Masses: not every atom type has a mass");
  out.has_masses = all_masses;
  if (all_named(s.bond_label) && s.nbtypes > 0) out.bond_type_names = s.bond_label;
}

void take_bonds(const std::string& path, const Sections& s, const std::map<int64_t, int>& index_of,
                StartStructure& out) {
  for (size_t b = 0; b < s.bonds.size(); ++b) {
    auto i = index_of.find(s.bonds[b][1]), j = index_of.find(s.bonds[b][2]);
    if (i == index_of.end() || j == index_of.end() || i->second == j->second)
      throw StartFileError(path + ":" + std::to_string(s.bond_line[b]) + ": Bonds: atoms " +
                           std::to_string(s.bonds[b][1]) + " and " + std::to_string(s.bonds[b][2]) +
                           " are not two atoms of the Atoms section");
    out.topology.bonds.push_back({i->second, j->second, static_cast<int>(s.bonds[b][0])});
  }
  if (s.nbonds > 0 && !s.seen.count("Bonds"))
    throw StartFileError(path + ": the header gives " + std::to_string(s.nbonds) +
                         " bonds but there is no Bonds section");
}

// Angles, dihedrals, impropers by particle index; each family's types from its Coeffs, or the
// reason there are none.
void take_bonded(const Parser& p, const Header& h, const Sections& s, const std::map<int64_t, int>& index_of,
                 StartStructure& out) {
  const std::string& path = p.path();
  for (const BondedSections* b : {&s.angles, &s.dihedrals, &s.impropers}) {
    const int64_t n = count_of(h, std::string(b->family) + "s");
    if (n > 0 && !s.seen.count(b->section))
      throw StartFileError(path + ": the header gives " + std::to_string(n) + " " + b->family + "s but there is no " +
                           b->section + " section");
  }
  take_bonded_terms(path, s.angles, index_of, &out.topology.angles, nullptr, out.angle_type_names);
  take_bonded_terms(path, s.dihedrals, index_of, nullptr, &out.topology.dihedrals, out.dihedral_type_names);
  take_bonded_terms(path, s.impropers, index_of, nullptr, &out.topology.impropers, out.improper_type_names);
  auto type_of = [&p](const BondedSections& b) {
    return [&p, &b](const Line& l, size_t col) -> int {
      return type_index(p, l, col, b.labels, b.ntypes, (std::string(b.family) + " type").c_str());
    };
  };
  take_bonded_types(p, s.angles, kAnglePotentials, type_of(s.angles), out.types.angle_types, out.types.angle_problem);
  take_bonded_types(p, s.dihedrals, kDihedralPotentials, type_of(s.dihedrals), out.types.dihedral_types,
                    out.types.dihedral_problem);
  take_bonded_types(p, s.impropers, kImproperPotentials, type_of(s.impropers), out.types.improper_types,
                    out.types.improper_problem);
}

}  // namespace

StartStructure read_lammps_data(const std::string& path, const std::string& atom_style) {
  const Parser p(path);
  const Header h = read_header(p);
  Sections s = check_counts(p, h);
  StartStructure out;
  out.types_by_name = false;
  Box& box = out.state.box;
  box.lo = {h.lo[0], h.lo[1], h.lo[2]};
  box.L = {h.hi[0] - h.lo[0], h.hi[1] - h.lo[1], h.hi[2] - h.lo[2]};
  box.periodic = true;
  read_sections(p, h, h.first_section, atom_style, s, out);
  const std::map<int64_t, int> index_of = place_atoms(path, s, out);
  place_velocities(path, s, index_of, out);
  take_types(path, s, out);
  take_bonds(path, s, index_of, out);
  take_bonded(p, h, s, index_of, out);
  return out;
}

}  // namespace pairmd
