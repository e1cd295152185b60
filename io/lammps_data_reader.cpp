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
    if (end == w.c_str() || *end || !std::isfinite(v))
      fail(l, std::string("expected a number for ") + what + ", got '" + w + "'");
    return v;
  }
  int64_t integer(const Line& l, size_t k, const char* what) const {
    const std::string& w = l.words.at(k);
    char* end = nullptr;
    const long long v = std::strtoll(w.c_str(), &end, 10);
    if (end == w.c_str() || *end) fail(l, std::string("expected an integer for ") + what + ", got '" + w + "'");
    return v;
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
      p.fail(hybrid ? l : *b.coeffs_head, section + ": " + b.family + " style '" + line_style +
                                              "' is not one pairmd has (" + lammps_style_names(registry) + ")");
    if (given[t]) p.fail(l, section + ": a second line for " + b.family + " type " + l.words[0]);
    given[t] = 1;
    BondedType<Kind>& type = types[t];
    type.name = b.labels[t].empty() ? std::to_string(t + 1) : b.labels[t];
    type.kind = info->kind;
    type.coeffs = coeffs_of_line(p, l, hybrid ? 2 : 1, *info, line_style,
                                 section + ": " + b.family + " type " + l.words[0] + " (" + line_style + ")");
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

}  // namespace

StartStructure read_lammps_data(const std::string& path, const std::string& atom_style) {
  const Parser p(path);
  const std::vector<Line>& lines = p.lines();
  StartStructure out;
  out.types_by_name = false;
  SystemState& s = out.state;
  std::map<std::string, int64_t> count;
  double lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
  bool have_box[3] = {false, false, false};

  // Header: from line 2 up to the first section keyword.
  size_t k = 1;
  auto section_of = [&](const Line& l) -> std::string { return sections().count(l.text) ? l.text : std::string(); };
  for (; k < lines.size(); ++k) {
    const Line& l = lines[k];
    if (l.words.empty()) continue;
    if (!section_of(l).empty()) break;
    const std::vector<std::string>& w = l.words;
    const std::string rest = l.text.substr(l.text.find(w[0]) + w[0].size());
    auto key_after = [&](size_t skip) {
      std::string key;
      for (size_t i = skip; i < w.size(); ++i) key += (key.empty() ? "" : " ") + w[i];
      return key;
    };
    if (w.size() >= 4 &&
        (w[2] + " " + w[3] == "xlo xhi" || w[2] + " " + w[3] == "ylo yhi" || w[2] + " " + w[3] == "zlo zhi")) {
      const int d = w[2][0] - 'x';
      lo[d] = p.number(l, 0, "the box's lower bound");
      hi[d] = p.number(l, 1, "the box's upper bound");
      if (!(hi[d] > lo[d])) p.fail(l, w[2] + " " + w[3] + ": the upper bound must be above the lower");
      have_box[d] = true;
      continue;
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
          hi[d] = lo[d] + v;
        }
      }
      have_box[d] = true;
      continue;
    }
    if (w.size() == 5 && key_after(3) == "abc origin") {
      for (int d = 0; d < 3; ++d) {
        const double edge = hi[d] - lo[d];
        lo[d] = p.number(l, d, "the origin");
        hi[d] = lo[d] + edge;
      }
      continue;
    }
    if (w.size() >= 6 && key_after(3) == "xy xz yz") {
      for (int t = 0; t < 3; ++t)
        if (p.number(l, t, "a tilt factor") != 0.0)
          p.fail(l, "the box is triclinic (xy xz yz not zero); pairmd supports orthorhombic boxes only");
      continue;
    }
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
    const std::string key = key_after(1);
    if (w.size() >= 2 && counts.count(key)) {
      const int64_t v = p.integer(l, 0, key.c_str());
      if (v < 0) p.fail(l, key + ": expected a count >= 0, got " + w[0]);
      count[key] = v;
      continue;
    }
    (void)rest;
    p.fail(l, "not a header line pairmd knows: '" + l.text +
                  "' (expected 'N atoms', 'N atom types', 'xlo xhi', ... or a section name such as Atoms)");
  }
  if (k >= lines.size()) p.fail_at_end("no Atoms section");
  for (int d = 0; d < 3; ++d)
    if (!have_box[d])
      p.fail(lines[k], std::string("the header has no ") + "xyz"[d] + "lo " + "xyz"[d] + "hi line (the box)");
  const int64_t natoms = count["atoms"], ntypes = count["atom types"], nbonds = count["bonds"],
                nbtypes = count["bond types"];
  if (natoms <= 0) p.fail(lines[0], "the header gives no atoms ('N atoms')");
  if (natoms > kMaxParticles)
    p.fail(lines[0],
           std::to_string(natoms) + " atoms, more than the " + std::to_string(kMaxParticles) + " pairmd can hold");
  if (ntypes <= 0) p.fail(lines[0], "the header gives no atom types ('N atom types')");
  if (nbonds > 0 && nbtypes <= 0) p.fail(lines[0], "the file has bonds but no 'N bond types' line");
  s.box.lo = {lo[0], lo[1], lo[2]};
  s.box.L = {hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]};
  s.box.periodic = true;

  // Sections.
  std::vector<int64_t> ids;  // file atom ids in file order
  std::vector<Vec3d> pos, vel;
  std::vector<Int3> img;
  std::vector<int> type;
  std::vector<double> charge;
  std::map<int64_t, size_t> velocity_line;
  std::vector<double> type_mass(ntypes, 0.0);
  std::vector<char> type_mass_given(ntypes, 0);
  std::vector<std::string> type_label(ntypes), bond_label(nbtypes);
  std::vector<std::array<int64_t, 3>> bonds;  // type, id1, id2
  BondedSections angles{"angle", "Angles", 3}, dihedrals{"dihedral", "Dihedrals", 4},
      impropers{"improper", "Impropers", 4};
  for (BondedSections* b : {&angles, &dihedrals, &impropers}) {
    b->ntypes = count[std::string(b->family) + " types"];
    if (count[std::string(b->family) + "s"] > 0 && b->ntypes <= 0)
      p.fail(lines[0], std::string("the file has ") + b->family + "s but no 'N " + b->family + " types' line");
    b->labels.assign(b->ntypes, "");
  }
  auto bonded_of = [&](const std::string& name) {
    return name.rfind("Angle", 0) == 0 ? &angles : name.rfind("Dihedral", 0) == 0 ? &dihedrals : &impropers;
  };
  std::vector<int> bond_line;
  std::set<std::string> seen;
  int atoms_line = 0;
  const Style* style = nullptr;
  while (k < lines.size()) {
    const Line& head = lines[k];
    if (head.words.empty()) {
      ++k;
      continue;
    }
    const std::string name = section_of(head);
    if (name.empty()) p.fail(head, "not a section pairmd knows: '" + head.text + "'");
    if (!seen.insert(name).second) p.fail(head, "a second " + name + " section");
    const std::string what = sections().at(name);
    int64_t n = what == "pairij" ? ntypes * (ntypes + 1) / 2 : count[what];
    // The section's lines: the next n lines that are not blank.
    std::vector<const Line*> body;
    size_t j = k + 1;
    for (; j < lines.size() && static_cast<int64_t>(body.size()) < n; ++j) {
      if (lines[j].words.empty()) continue;
      if (!section_of(lines[j]).empty())
        p.fail(lines[j], name + " has " + std::to_string(body.size()) + " lines, the header promises " +
                             std::to_string(n) + " (" + what + ")");
      body.push_back(&lines[j]);
    }
    if (static_cast<int64_t>(body.size()) < n)
      p.fail_at_end(name + " has " + std::to_string(body.size()) + " lines, the header promises " + std::to_string(n) +
                    " (" + what + ")");
    k = j;

    auto type_index = [&](const Line& l, size_t col, const std::vector<std::string>& labels, int64_t ntype,
                          const char* kind) {
      const std::string& w = l.words[col];
      for (size_t t = 0; t < labels.size(); ++t)
        if (!labels[t].empty() && labels[t] == w) return static_cast<int>(t);
      const int64_t t = p.integer(l, col, kind);
      if (t < 1 || t > ntype) p.fail(l, std::string(kind) + " " + w + " is not in 1.." + std::to_string(ntype));
      return static_cast<int>(t - 1);
    };
    if (name == "Atoms") {
      atoms_line = head.number;
      std::string chosen = atom_style == "auto" ? "" : atom_style;
      std::string hint;
      if (!head.comment.empty()) {
        std::istringstream c(head.comment);
        c >> hint;
      }
      if (chosen.empty() && !hint.empty()) {
        if (!find_style(hint))
          p.fail(head, "atom style '" + hint + "' is not one pairmd reads (" + style_names() + ")");
        chosen = hint;
      } else if (!chosen.empty() && !hint.empty() && hint != chosen &&
                 !(find_style(hint) && find_style(hint)->columns == find_style(chosen)->columns &&
                   find_style(hint)->q == find_style(chosen)->q)) {
        p.fail(head, "the file says atom style " + hint + ", system.file.atom_style says " + chosen);
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
        out.notes.push_back("atom style " + chosen + " (from the number of columns of " + p.path() + ":" +
                            std::to_string(body[0]->number) + ")");
      }
      style = find_style(chosen);
      if (!style) p.fail(head, "atom style '" + chosen + "' is not one pairmd reads (" + style_names() + ")");
      for (const Line* lp : body) {
        const Line& l = *lp;
        const size_t c = l.words.size();
        if (c != style->columns && c != style->columns + 3)
          p.fail(l, "expected " + std::to_string(style->columns) + " or " + std::to_string(style->columns + 3) +
                        " columns for atom style " + style->name + ", got " + std::to_string(c));
        const int64_t id = p.integer(l, 0, "the atom id");
        if (id < 1) p.fail(l, "atom id " + l.words[0] + " is not >= 1");
        ids.push_back(id);
        type.push_back(type_index(l, style->type, type_label, ntypes, "atom type"));
        charge.push_back(style->q >= 0 ? p.number(l, style->q, "the charge") : 0.0);
        pos.push_back({p.number(l, style->x, "x"), p.number(l, style->x + 1, "y"), p.number(l, style->x + 2, "z")});
        Int3 im{0, 0, 0};
        if (c == style->columns + 3) {
          const int64_t a = p.integer(l, style->columns, "the x image flag"),
                        b = p.integer(l, style->columns + 1, "the y image flag"),
                        z = p.integer(l, style->columns + 2, "the z image flag");
          if (std::llabs(a) > 1000000 || std::llabs(b) > 1000000 || std::llabs(z) > 1000000)
            p.fail(l, "implausible image flags");
          im = {static_cast<int>(a), static_cast<int>(b), static_cast<int>(z)};
        }
        img.push_back(im);
      }
    } else if (name == "Velocities") {
      for (const Line* lp : body) {
        const Line& l = *lp;
        if (l.words.size() < 4) p.fail(l, "expected 'id vx vy vz', got " + std::to_string(l.words.size()) + " columns");
        const int64_t id = p.integer(l, 0, "the atom id");
        if (!velocity_line.emplace(id, vel.size()).second) p.fail(l, "a second velocity for atom " + l.words[0]);
        vel.push_back({p.number(l, 1, "vx"), p.number(l, 2, "vy"), p.number(l, 3, "vz")});
      }
    } else if (name == "Masses") {
      for (const Line* lp : body) {
        const Line& l = *lp;
        if (l.words.size() < 2) p.fail(l, "expected 'type mass'");
        const int t = type_index(l, 0, type_label, ntypes, "atom type");
        const double m = p.number(l, 1, "the mass");
        if (!(m > 0)) p.fail(l, "mass " + l.words[1] + " is not > 0");
        type_mass[t] = m;
        type_mass_given[t] = 1;
      }
    } else if (name == "Bonds") {
      for (const Line* lp : body) {
        const Line& l = *lp;
        if (l.words.size() != 4)
          p.fail(l, "expected 'id type atom1 atom2', got " + std::to_string(l.words.size()) + " columns");
        const int t = type_index(l, 1, bond_label, nbtypes, "bond type");
        bonds.push_back({t, p.integer(l, 2, "the first atom"), p.integer(l, 3, "the second atom")});
        bond_line.push_back(l.number);
      }
    } else if (name == "Atom Type Labels" || name == "Bond Type Labels") {
      std::vector<std::string>& labels = name[0] == 'A' ? type_label : bond_label;
      for (const Line* lp : body) {
        const Line& l = *lp;
        if (l.words.size() != 2) p.fail(l, "expected 'type label'");
        const int64_t t = p.integer(l, 0, "the type");
        if (t < 1 || t > static_cast<int64_t>(labels.size()))
          p.fail(l, "type " + l.words[0] + " is not in 1.." + std::to_string(labels.size()));
        labels[t - 1] = l.words[1];
      }
    } else if (name == "Angles" || name == "Dihedrals" || name == "Impropers") {
      BondedSections& b = *bonded_of(name);
      read_bonded_terms(p, body, b, [&](const Line& l, size_t col) {
        return type_index(l, col, b.labels, b.ntypes, (std::string(b.family) + " type").c_str());
      });
    } else if (name == "Angle Type Labels" || name == "Dihedral Type Labels" || name == "Improper Type Labels") {
      std::vector<std::string>& labels = bonded_of(name)->labels;
      for (const Line* lp : body) {
        const Line& l = *lp;
        if (l.words.size() != 2) p.fail(l, "expected 'type label'");
        const int64_t t = p.integer(l, 0, "the type");
        if (t < 1 || t > static_cast<int64_t>(labels.size()))
          p.fail(l, "type " + l.words[0] + " is not in 1.." + std::to_string(labels.size()));
        labels[t - 1] = l.words[1];
      }
    } else if (name == "Angle Coeffs" || name == "Dihedral Coeffs" || name == "Improper Coeffs") {
      bonded_of(name)->coeffs_head = &head;
      bonded_of(name)->coeffs = body;
    } else if (name.find("Coeffs") != std::string::npos) {
      out.notes.push_back(name + " of the file are not used: the force field is the config's");
    } else if (name.find("Type Labels") == std::string::npos) {
      p.fail(head, name + ": pairmd reads point particles only");
    }
  }
  if (!style) p.fail_at_end("no Atoms section");

  // Atoms in the order of their ids.
  std::vector<size_t> order(ids.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ids[a] < ids[b]; });
  std::map<int64_t, int> index_of;
  for (size_t r = 0; r < order.size(); ++r) {
    if (r > 0 && ids[order[r]] == ids[order[r - 1]])
      throw StartFileError(path + ":" + std::to_string(atoms_line) + ": Atoms: atom id " +
                           std::to_string(ids[order[r]]) + " is given twice");
    index_of[ids[order[r]]] = static_cast<int>(r);
  }
  const size_t n = order.size();
  s.position.resize(n);
  s.image.resize(n);
  s.velocity.assign(n, Vec3d{0, 0, 0});
  s.type.resize(n);
  s.charge.resize(n);
  s.mass.resize(n);
  for (size_t r = 0; r < n; ++r) {
    const size_t i = order[r];
    s.position[r] = pos[i];
    s.image[r] = img[i];
    s.type[r] = type[i];
    s.charge[r] = charge[i];
    s.mass[r] = type_mass[type[i]];
  }
  if (!vel.empty()) {
    for (const auto& [id, at] : velocity_line) {
      auto it = index_of.find(id);
      if (it == index_of.end())
        throw StartFileError(path + ": Velocities: atom " + std::to_string(id) + " is not in Atoms");
      s.velocity[it->second] = vel[at];
    }
    out.has_velocities = true;
  }
  // Types: labels where the file has them (matched by name), else numbers (matched by order).
  const bool labelled =
      std::all_of(type_label.begin(), type_label.end(), [](const std::string& l) { return !l.empty(); });
  for (int64_t t = 0; t < ntypes; ++t) s.type_names.push_back(labelled ? type_label[t] : std::to_string(t + 1));
  out.types_by_name = labelled;
  out.has_charges = style->q >= 0;
  const bool all_masses = std::all_of(type_mass_given.begin(), type_mass_given.end(), [](char g) { return g != 0; });
  if (seen.count("Masses") && !all_masses) throw StartFileError(path + ": Masses: not every atom type has a mass");
  out.has_masses = all_masses;
  if (std::all_of(bond_label.begin(), bond_label.end(), [](const std::string& l) { return !l.empty(); }) && nbtypes > 0)
    out.bond_type_names = bond_label;
  for (size_t b = 0; b < bonds.size(); ++b) {
    auto i = index_of.find(bonds[b][1]), j = index_of.find(bonds[b][2]);
    if (i == index_of.end() || j == index_of.end() || i->second == j->second)
      throw StartFileError(path + ":" + std::to_string(bond_line[b]) + ": Bonds: atoms " + std::to_string(bonds[b][1]) +
                           " and " + std::to_string(bonds[b][2]) + " are not two atoms of the Atoms section");
    out.topology.bonds.push_back({i->second, j->second, static_cast<int>(bonds[b][0])});
  }
  for (const BondedSections* b : {&angles, &dihedrals, &impropers})
    if (count[std::string(b->family) + "s"] > 0 && !seen.count(b->section))
      throw StartFileError(path + ": the header gives " + std::to_string(count[std::string(b->family) + "s"]) + " " +
                           b->family + "s but there is no " + b->section + " section");
  take_bonded_terms(path, angles, index_of, &out.topology.angles, nullptr, out.angle_type_names);
  take_bonded_terms(path, dihedrals, index_of, nullptr, &out.topology.dihedrals, out.dihedral_type_names);
  take_bonded_terms(path, impropers, index_of, nullptr, &out.topology.impropers, out.improper_type_names);
  auto type_of = [&](const BondedSections& b) {
    return [&p, &b](const Line& l, size_t col) -> int {
      const std::string& w = l.words[col];
      for (size_t t = 0; t < b.labels.size(); ++t)
        if (!b.labels[t].empty() && b.labels[t] == w) return static_cast<int>(t);
      const int64_t t = p.integer(l, col, (std::string(b.family) + " type").c_str());
      if (t < 1 || t > b.ntypes)
        p.fail(l, std::string(b.family) + " type " + w + " is not in 1.." + std::to_string(b.ntypes));
      return static_cast<int>(t - 1);
    };
  };
  take_bonded_types(p, angles, kAnglePotentials, type_of(angles), out.types.angle_types, out.types.angle_problem);
  take_bonded_types(p, dihedrals, kDihedralPotentials, type_of(dihedrals), out.types.dihedral_types,
                    out.types.dihedral_problem);
  take_bonded_types(p, impropers, kImproperPotentials, type_of(impropers), out.types.improper_types,
                    out.types.improper_problem);
  if (nbonds > 0 && !seen.count("Bonds"))
    throw StartFileError(path + ": the header gives " + std::to_string(nbonds) +
                         " bonds but there is no Bonds section");
  return out;
}

}  // namespace pairmd
