// The `force_field` section: pair terms (registry potentials, coefficients, mixing), bond types
// and pair lists (per-pair parameters from the config or a file), exclusions.
#include "engine/config_schema.h"

#include <algorithm>
#include <array>
#include <set>

#include "engine/pair_list_file.h"

namespace pairmd::config {

namespace {

PairCoeffs lj_coeffs(const Map& e, const PairCoeffs& base) {
  PairCoeffs c = base;
  c.epsilon = e.number("epsilon", base.epsilon, 0.0, kInf);
  c.sigma = e.number("sigma", base.sigma, 0.0, kInf, true);
  c.rcut = e.number("cutoff", base.rcut, 0.0, kInf);
  return c;
}

// The keys of a charged term: its prefactor k_e / eps_r (dielectric, or bjerrum_length at the
// integrator's temperature) and, for a screened potential, its kappa (or debye_length). Other
// terms may not have them.
void read_electrostatics(const Map& t, const PairPotentialInfo& info, const Units& units, double temperature,
                         PairCoeffs& base) {
  if (!info.charged) {
    const std::string charged_names =
        join_names(names_of(kPairPotentials, [](const PairPotentialInfo& p) { return p.charged; }));
    for (const char* k : {"dielectric", "bjerrum_length", "kappa", "debye_length"})
      if (t.has(k)) t.ctx().fail(t.node(k), t.sub(k), "only for " + charged_names + " terms");
    return;
  }
  if (t.has("dielectric") && t.has("bjerrum_length"))
    t.ctx().fail(t.node("bjerrum_length"), t.sub("bjerrum_length"),
                 "give either dielectric or bjerrum_length, not both");
  if (t.has("bjerrum_length")) {
    // l_B = k_e q^2 / (eps_r k_B T): the prefactor k_e/eps_r = l_B k_B T.
    const double lb = t.number("bjerrum_length", 0.0, 0.0, kInf, true);
    if (!(temperature > 0))
      t.ctx().fail(t.node("bjerrum_length"), t.sub("bjerrum_length"), "needs integrator.temperature > 0");
    base.prefactor = lb * units.kB * temperature;
  } else {
    base.prefactor = units.coulomb / t.number("dielectric", 1.0, 0.0, kInf, true);
  }
  if (info.screened) {
    if (t.has("kappa") == t.has("debye_length"))
      t.ctx().fail(t.self(), t.path(), "expected exactly one of kappa (inverse screening length) or debye_length");
    base.kappa = t.has("kappa") ? t.number("kappa", 0, 0.0, kInf) : 1.0 / t.number("debye_length", 1, 0.0, kInf, true);
  } else if (t.has("kappa") || t.has("debye_length")) {
    t.ctx().fail(t.self(), t.path(),
                 "kappa/debye_length belong to " +
                     join_names(names_of(kPairPotentials, [](const PairPotentialInfo& p) { return p.screened; })) +
                     ", not " + info.name);
  }
}

// The coefficients every type pair of a term starts from: its cutoff and shift (unless the
// potential fixes them) and its electrostatics.
PairCoeffs read_term_coeffs(const Map& t, const PairPotentialInfo& info, const Units& units, double temperature,
                            RunConfig& cfg) {
  PairCoeffs base;
  if (info.fixed_cutoff && t.has("cutoff"))
    t.ctx().fail(t.node("cutoff"), t.sub("cutoff"), std::string(info.fixed_cutoff) + "; remove this key");
  if (info.fixed_shift && t.has("shift"))
    t.ctx().fail(t.node("shift"), t.sub("shift"), std::string(info.fixed_shift) + "; remove this key");
  if (!info.fixed_cutoff) base.rcut = t.number_required("cutoff", 0.0, kInf, true, "a number > 0");
  if (!info.fixed_shift) base.shift = t.boolean("shift", false);
  cfg.locations[t.path() + ".cutoff"] = t.where("cutoff");
  read_electrostatics(t, info, units, temperature, base);
  return base;
}

// A term's coefficients by type pair as the config gives them: per pair (given 2), per type
// (mixed into pairs, given 1), or, for a charged term, the base for every pair (given 1).
struct CoeffTable {
  int nt;
  std::vector<PairCoeffs> table;  // nt x nt
  std::vector<char> given;        // 0: none yet, 1: mixed or charged, 2: explicit
  std::vector<PairCoeffs> per_type;
  std::vector<char> per_type_given;
};

// The pair [A, B] of a coeffs entry, as type indices.
std::array<int, 2> type_pair(const Map& e, const SystemSpec& sys) {
  const YAML::Node ty = e.node("types");
  if (!ty.IsSequence() || ty.size() != 2)
    e.ctx().fail(ty, e.sub("types"), "expected a pair of type names [A, B], got " + describe(ty));
  std::array<int, 2> ab{-1, -1};
  for (int s = 0; s < 2; ++s) {
    for (size_t i = 0; i < sys.types.size(); ++i)
      if (ty[s].IsScalar() && sys.types[i].name == ty[s].Scalar()) ab[s] = static_cast<int>(i);
    if (ab[s] < 0) e.ctx().fail(ty[s], e.sub("types"), "unknown particle type " + describe(ty[s]));
  }
  return ab;
}

// The `coeffs` list: {types: [A, B], ...} or {type: A, ...} (with mixing) entries.
void read_coeff_entries(const Map& t, const PairPotentialInfo& info, const PairCoeffs& base, const SystemSpec& sys,
                        const std::string& mixing, CoeffTable& c) {
  const YAML::Node list =
      list_node(t, "coeffs", !info.charged, "of {types: [A, B], epsilon, sigma, cutoff} or {type: A, ...}");
  for (size_t k = 0; k < list.size(); ++k) {
    Map e(t.ctx(), list[k], t.sub("coeffs") + "[" + std::to_string(k) + "]",
          {"types", "type", "epsilon", "sigma", "cutoff"});
    if (info.charged && (e.has("epsilon") || e.has("sigma")))
      e.ctx().fail(e.self(), e.path(),
                   std::string("epsilon/sigma do not apply to ") + info.name + " (only cutoff per type pair)");
    if (info.fixed_cutoff && e.has("cutoff")) e.ctx().fail(e.node("cutoff"), e.sub("cutoff"), info.fixed_cutoff);
    if (e.has("type") == e.has("types"))
      e.ctx().fail(e.self(), e.path(), "expected exactly one of types: [A, B] or type: A");
    if (e.has("type")) {
      if (mixing == "none")
        e.ctx().fail(e.node("type"), e.sub("type"), "per-type coefficients need mixing: geometric or arithmetic");
      const int a = type_index(e, "type", sys.types, -1);
      c.per_type[a] = lj_coeffs(e, base);
      c.per_type_given[a] = 1;
    } else {
      const std::array<int, 2> ab = type_pair(e, sys);
      const PairCoeffs pc = lj_coeffs(e, base);
      c.table[ab[0] * c.nt + ab[1]] = c.table[ab[1] * c.nt + ab[0]] = pc;
      c.given[ab[0] * c.nt + ab[1]] = c.given[ab[1] * c.nt + ab[0]] = 2;  // explicit pairs win over mixing
    }
  }
}

// The pairs of two per-type entries that no explicit pair gives: mixed.
void mix_per_type(const PairCoeffs& base, const std::string& mixing, CoeffTable& c) {
  const int nt = c.nt;
  for (int a = 0; a < nt; ++a)
    for (int b = 0; b < nt; ++b) {
      if (c.given[a * nt + b] == 2 || !c.per_type_given[a] || !c.per_type_given[b]) continue;
      PairCoeffs m = base;
      const PairCoeffs &pa = c.per_type[a], &pb = c.per_type[b];
      m.epsilon = std::sqrt(pa.epsilon * pb.epsilon);
      m.sigma = mixing == "geometric" ? std::sqrt(pa.sigma * pb.sigma) : 0.5 * (pa.sigma + pb.sigma);
      m.rcut = std::max(pa.rcut, pb.rcut);
      c.table[a * nt + b] = m;
      c.given[a * nt + b] = 1;
    }
}

void read_pair_term(const Map& t, const SystemSpec& sys, const Units& units, double temperature, ForceField& ff,
                    RunConfig& cfg) {
  // Which keys apply is the potential's registry entry (potentials/registry.h), not its name.
  const std::vector<std::string> potentials = names_of(kPairPotentials);
  const std::string kind = t.choice("potential", "", potentials);
  if (kind.empty()) t.missing("potential", join_names(potentials, " or "));
  const PairPotentialInfo& info = *find_pair_potential(kind);
  const int nt = ff.ntypes;
  const PairCoeffs base = read_term_coeffs(t, info, units, temperature, cfg);
  CoeffTable c{nt, std::vector<PairCoeffs>(nt * nt, base), std::vector<char>(nt * nt, info.charged ? 1 : 0),
               std::vector<PairCoeffs>(nt, base), std::vector<char>(nt, 0)};
  const std::string mixing = t.choice("mixing", "none", {"none", "geometric", "arithmetic"});
  read_coeff_entries(t, info, base, sys, mixing, c);
  mix_per_type(base, mixing, c);
  for (int a = 0; a < nt; ++a)
    for (int b = 0; b < nt; ++b)
      if (!c.given[a * nt + b])
        t.ctx().fail(t.node("coeffs"), t.sub("coeffs"),
                     "no coefficients for type pair (" + sys.types[a].name + ", " + sys.types[b].name +
                         "); give them as {types: [" + sys.types[a].name + ", " + sys.types[b].name +
                         "], ...} or per type with mixing (set epsilon: 0 to switch a pair off)");
  PairTerm term;
  term.kind = info.kind;
  term.coeffs = c.table;
  ff.pair_terms.push_back(term);
}

constexpr BondField kBondFields[] = {BondField::K, BondField::R0, BondField::Epsilon, BondField::MaxExtension};

// What a bond potential says a coefficient is (its registry entry), or null when it does not take it.
const char* bond_field_text(const BondPotentialInfo& info, BondField f) {
  switch (f) {
    case BondField::K:
      return info.k;
    case BondField::R0:
      return info.r0;
    case BondField::Epsilon:
      return info.epsilon;
    case BondField::MaxExtension:
      return info.max_extension;
  }
  return nullptr;
}

// Whether `value` is in the range of `f` for this potential (k > 0, r0 >= 0 or > 0, epsilon >= 0,
// max_extension > 0).
bool bond_field_ok(const BondPotentialInfo& info, BondField f, double value) {
  switch (f) {
    case BondField::K:
    case BondField::MaxExtension:
      return value > 0;
    case BondField::R0:
      return info.r0_positive ? value > 0 : value >= 0;
    case BondField::Epsilon:
      return value >= 0;
  }
  return false;
}

std::string not_taken(const BondPotentialInfo& info, const char* key) {
  std::string takes;
  for (const BondField f : kBondFields)
    if (bond_field_text(info, f)) takes += (takes.empty() ? "" : ", ") + std::string(bond_field_name(f));
  return std::string(key) + " does not apply to " + info.name + " (it takes " + takes + ")";
}

// A coefficient of a bond type or of a pair list (per term), checked against its range.
double bond_field_value(const Map& m, const char* key, const BondPotentialInfo& info, BondField f, bool required,
                        double def) {
  const char* what = bond_field_text(info, f);
  if (!m.has(key)) {
    if (required) m.missing(key, what);
    return def;
  }
  const double v = m.to_number(m.node(key), m.sub(key), -kInf, kInf, false, what);
  if (!bond_field_ok(info, f, v))
    m.ctx().fail(m.node(key), m.sub(key), std::string("expected ") + what + ", got " + m.node(key).Scalar());
  return v;
}

// A pair list's columns: the coefficients given per pair (default r0).
std::vector<BondField> read_list_columns(const Map& t, const BondPotentialInfo& info) {
  if (!t.has("columns")) return {BondField::R0};
  std::vector<BondField> columns;
  const YAML::Node c = t.node("columns");
  if (!c.IsSequence()) t.ctx().fail(c, t.sub("columns"), "expected a list of coefficient names, got " + describe(c));
  for (const YAML::Node& item : c) {
    bool found = false;
    for (const BondField f : kBondFields)
      if (item.IsScalar() && item.Scalar() == bond_field_name(f)) {
        if (!bond_field_text(info, f)) t.ctx().fail(item, t.sub("columns"), not_taken(info, bond_field_name(f)));
        if (std::find(columns.begin(), columns.end(), f) != columns.end())
          t.ctx().fail(item, t.sub("columns"), "column " + item.Scalar() + " given twice");
        columns.push_back(f);
        found = true;
      }
    if (!found)
      t.ctx().fail(item, t.sub("columns"), "expected one of k, r0, epsilon, max_extension, got " + describe(item));
  }
  return columns;
}

// A pair list's coefficients every pair shares: every coefficient the potential takes is given
// here or as a column.
void read_list_defaults(const Map& t, const BondPotentialInfo& info, PairList& list) {
  for (const BondField f : kBondFields) {
    const char* key = bond_field_name(f);
    const bool column = std::find(list.columns.begin(), list.columns.end(), f) != list.columns.end();
    if (!bond_field_text(info, f) || column) {
      if (t.has(key))
        t.ctx().fail(t.node(key), t.sub(key),
                     column ? std::string(key) + " is a column (given per pair); remove it here or from columns"
                            : not_taken(info, key));
      continue;
    }
    set_bond_field(list.defaults, f, bond_field_value(t, key, info, f, true, 0.0));
  }
}

// The inline pairs [[i, j, values...], ...] of a pair list, and the line of each.
void read_inline_pairs(const Map& t, const std::vector<BondField>& columns, PairListData& data,
                       PairListSource& source) {
  const size_t nc = columns.size();
  const YAML::Node pairs = t.node("pairs");
  if (!pairs.IsSequence())
    t.ctx().fail(pairs, t.sub("pairs"), "expected a list of [i, j, values...], got " + describe(pairs));
  source.file = t.ctx().file;
  std::string names;
  for (size_t q = 0; q < nc; ++q) names += (q ? ", " : "") + std::string(bond_field_name(columns[q]));
  for (size_t k = 0; k < pairs.size(); ++k) {
    const YAML::Node row = pairs[k];
    const std::string path = t.sub("pairs") + "[" + std::to_string(k) + "]";
    if (!row.IsSequence() || row.size() != 2 + nc)
      t.ctx().fail(row, path, "expected [i, j" + std::string(nc ? ", " : "") + names + "], got " + describe(row));
    const int i = static_cast<int>(t.to_integer(row[0], path, 0, kMaxParticles - 1));
    const int j = static_cast<int>(t.to_integer(row[1], path, 0, kMaxParticles - 1));
    data.pairs.push_back({i, j, static_cast<int>(k)});
    for (size_t q = 0; q < nc; ++q)
      data.values.push_back(t.to_number(row[2 + q], path, -kInf, kInf, false, "a number"));
    source.lines.push_back(row.Mark().line + 1);
  }
}

// The pairs of a pair list (inline, or a file of lines "i j values..."), every pair's own
// coefficients checked.
std::shared_ptr<PairListData> read_list_pairs(const Map& t, const BondPotentialInfo& info, const PairList& list,
                                              PairListSource& source) {
  if (t.has("pairs") == t.has("file"))
    t.ctx().fail(t.self(), t.path(),
                 "expected exactly one of pairs (a list of [i, j, " +
                     std::string(bond_field_name(list.columns.empty() ? BondField::R0 : list.columns[0])) +
                     ", ...]) or file (a pair list file)");
  const size_t nc = list.columns.size();
  auto data = std::make_shared<PairListData>();
  if (t.has("file")) {
    const std::string path = t.string("file", "");
    PairTable table = read_pair_table(path, nc);
    data->pairs = std::move(table.pairs);
    data->values = std::move(table.values);
    source.file = path;
    source.lines = std::move(table.lines);
  } else {
    read_inline_pairs(t, list.columns, *data, source);
  }
  for (size_t k = 0; k < data->pairs.size(); ++k)
    for (size_t q = 0; q < nc; ++q) {
      const double v = data->values[k * nc + q];
      if (!bond_field_ok(info, list.columns[q], v)) {
        std::ostringstream m;
        m << source.file << ":" << source.lines[k] << ": " << t.path() << ": pair (" << data->pairs[k].i << ", "
          << data->pairs[k].j << "): " << bond_field_name(list.columns[q]) << " = " << v << ", expected "
          << bond_field_text(info, list.columns[q]);
        throw ConfigError(m.str());
      }
    }
  return data;
}

// The pair terms a pair list's pairs are left out of: all (default), none, or a list of indices.
std::vector<int> read_list_exclude_from(const Map& t, size_t nterms) {
  std::vector<int> out;
  const YAML::Node ex = t.node("exclude_from");
  if (!t.has("exclude_from") || (ex.IsScalar() && ex.Scalar() == "all")) {
    for (size_t q = 0; q < nterms; ++q) out.push_back(static_cast<int>(q));
  } else if (ex.IsSequence()) {
    for (const YAML::Node& item : ex) {
      const int64_t q = t.to_integer(item, t.sub("exclude_from"), 0, kMaxInt);
      if (q >= static_cast<int64_t>(nterms))
        t.ctx().fail(
            item, t.sub("exclude_from"),
            "there is no pair term " + std::to_string(q) + " (force_field.pair has " + std::to_string(nterms) + ")");
      out.push_back(static_cast<int>(q));
    }
  } else if (!(ex.IsScalar() && ex.Scalar() == "none")) {
    t.ctx().fail(ex, t.sub("exclude_from"), "expected all, none or a list of pair term indices, got " + describe(ex));
  }
  return out;
}

// force_field.pair_lists[k]: a bond potential, the coefficients every pair shares, the columns
// each pair gives itself, the pairs (inline or from a file) and the pair terms they are left out of.
void read_pair_list(const Map& t, RunConfig& cfg, size_t index) {
  ForceField& ff = cfg.model.force_field;
  PairList list;
  list.name = t.string("name", "pair_lists[" + std::to_string(index) + "]");
  const std::vector<std::string> potentials = names_of(kBondPotentials);
  const std::string kind = t.choice("potential", "", potentials);
  if (kind.empty()) t.missing("potential", join_names(potentials, " or "));
  const BondPotentialInfo& info = *find_bond_potential(kind);
  list.kind = info.kind;
  list.columns = read_list_columns(t, info);
  read_list_defaults(t, info, list);
  PairListSource source;
  list.data = read_list_pairs(t, info, list, source);
  list.exclude_from = read_list_exclude_from(t, ff.pair_terms.size());
  cfg.locations[t.path() + ".pairs"] = t.where(t.has("file") ? "file" : "pairs");
  ff.pair_lists.push_back(std::move(list));
  cfg.pair_list_sources.push_back(std::move(source));
}

}  // namespace

void read_force_field(const Map& root, RunConfig& cfg) {
  if (!root.has("force_field")) root.missing("force_field", "pair potentials and bonds");
  Map f(root.ctx(), root.node("force_field"), "force_field",
        {"pair", "bonds", "angles", "dihedrals", "impropers", "pair_lists", "exclusions", "special_bonds"});
  ForceField& ff = cfg.model.force_field;
  ff.ntypes = static_cast<int>(cfg.system.types.size());
  read_special_bonds(f, cfg);

  const YAML::Node bonds = list_node(f, "bonds", false, "of {name, potential, k, r0}");
  for (size_t k = 0; k < bonds.size(); ++k) {
    Map b(f.ctx(), bonds[k], "force_field.bonds[" + std::to_string(k) + "]",
          {"name", "potential", "k", "r0", "epsilon", "max_extension"});
    BondType bt;
    if (!b.has("name")) b.missing("name", "a bond type name");
    bt.name = b.string("name", "");
    for (const BondType& other : ff.bond_types)
      if (other.name == bt.name) b.ctx().fail(b.node("name"), b.sub("name"), "duplicate bond type '" + bt.name + "'");
    const std::vector<std::string> potentials = names_of(kBondPotentials);
    const std::string kind = b.choice("potential", "", potentials);
    if (kind.empty()) b.missing("potential", join_names(potentials, " or "));
    const BondPotentialInfo& info = *find_bond_potential(kind);
    bt.kind = info.kind;
    for (const BondField field : kBondFields) {
      const char* key = bond_field_name(field);
      if (!bond_field_text(info, field)) {
        if (b.has(key)) b.ctx().fail(b.node(key), b.sub(key), not_taken(info, key));
        continue;
      }
      set_bond_field(bt.coeffs, field, bond_field_value(b, key, info, field, true, 0.0));
    }
    ff.bond_types.push_back(bt);
  }
  if (!cfg.chains_bond_name.empty()) {
    int found = -1;
    for (size_t i = 0; i < ff.bond_types.size(); ++i)
      if (ff.bond_types[i].name == cfg.chains_bond_name) found = static_cast<int>(i);
    if (found < 0)
      throw ConfigError(cfg.locations["system.chains.bond"] + ": system.chains.bond: unknown bond type '" +
                        cfg.chains_bond_name + "' (define it in force_field.bonds)");
    cfg.system.chains.bond_type = found;
  }
  read_bonded_types(f, cfg);

  const YAML::Node pairs = list_node(f, "pair", false, "of pair terms");
  for (size_t k = 0; k < pairs.size(); ++k) {
    Map t(
        f.ctx(), pairs[k], "force_field.pair[" + std::to_string(k) + "]",
        {"potential", "cutoff", "shift", "coeffs", "mixing", "dielectric", "bjerrum_length", "kappa", "debye_length"});
    read_pair_term(t, cfg.system, cfg.model.units, cfg.model.integrator.temperature, ff, cfg);
  }
  const YAML::Node lists = list_node(f, "pair_lists", false, "of pair lists: {name, potential, pairs or file, ...}");
  for (size_t k = 0; k < lists.size(); ++k) {
    Map t(f.ctx(), lists[k], "force_field.pair_lists[" + std::to_string(k) + "]",
          {"name", "potential", "k", "r0", "epsilon", "max_extension", "columns", "pairs", "file", "exclude_from"});
    read_pair_list(t, cfg, k);
  }
}

}  // namespace pairmd::config
