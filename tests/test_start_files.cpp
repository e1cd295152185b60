// Starting structures from files (system.file): LAMMPS data files of every style pairmd reads,
// XYZ (plain and extended), GSD frames and H5MD files with units, mapped onto the config's types
// and bond types; malformed files are refused with FILE:LINE and exit 2; a start without
// velocities gets Maxwell-Boltzmann velocities at the integrator's temperature (seeded,
// reproducible), or zeros when the config says so.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <regex>

#include "base/bond_images.h"
#include "base/observables.h"
#include "engine/simulation.h"
#include "io/gsd_writer.h"
#include "io/h5md.h"
#include "io/hdf5_util.h"
#include "tests/test_support.h"

namespace pairmd {
namespace {

void write(const std::filesystem::path& p, const std::string& text) { std::ofstream(p) << text; }

// Two types of different masses, charged, with bonds: what LAMMPS's write_data gives for
// atom_style full (header, Masses, Atoms with image flags, Velocities, Bonds, and sections
// pairmd reads past).
const char* kFullData = R"(LAMMPS data file via write_data, version 2 Aug 2023, timestep = 1000, units = real

6 atoms
2 atom types
3 bonds
1 bond types
1 angles
1 angle types

0.0 20.0 xlo xhi
-10.0 10.0 ylo yhi
0.0 20.0 zlo zhi
0.0 0.0 0.0 xy xz yz

Masses

1 12.011
2 15.999

Pair Coeffs # lj/cut/coul/long

1 0.07 3.55
2 0.21 2.96

Atoms # full

3 1 2 -0.5 3.0 1.0 4.0 1 0 -1
1 1 1 0.25 1.0 1.0 1.0 1 0 -1
2 1 1 0.25 2.4 1.0 1.0 1 0 -1
4 2 2 -0.5 25.0 -12.0 5.0 0 0 0
5 2 1 0.25 10.0 5.0 5.0 0 0 0
6 2 1 0.25 11.4 5.0 5.0 0 0 0

Velocities

1 0.001 0.002 0.003
2 0.0 0.0 0.0
3 -0.001 0.0 0.0
4 0.0 0.001 0.0
5 0.0 0.0 0.0
6 0.0 0.0 0.0

Bonds

1 1 1 2
2 1 2 3
3 1 5 6

Angles

1 1 1 2 3
)";

std::string config_for(const std::string& file, const std::string& extra_system = "",
                       const std::string& types = "[{name: C, mass: 1.0}, {name: O, mass: 1.0}]") {
  // Per-type LJ coefficients for whichever two types are listed.
  std::smatch m;
  std::regex_search(types, m, std::regex("name: (\\w+).*name: (\\w+)"));
  return "units: real\nsystem:\n  types: " + types + "\n  file: " + file + "\n" + extra_system +
         "force_field:\n  bonds: [{name: cc, potential: harmonic, k: 600, r0: 1.4}]\n"
         "  angles: [{name: cco, potential: harmonic, k: 60, theta0: 110}]\n"
         "  pair:\n    - {potential: lj, cutoff: 4.5, mixing: geometric, coeffs: [{type: " +
         m[1].str() + ", epsilon: 0.07, sigma: 3.55}, {type: " + m[2].str() +
         ", epsilon: 0.21, sigma: 2.96}]}\n"
         "integrator: {kind: langevin, dt: 1.0, temperature: 300, friction: 0.01, seed: 42}\n";
}

TEST(StartFiles, LammpsFullStyleGivesTypesMassesChargesImagesVelocitiesAndBonds) {
  test::ScratchDir dir("start");
  write(dir / "start.data", kFullData);
  const RunConfig cfg = parse_config(config_for("{path: " + (dir / "start.data") + "}"), "cfg.yaml");
  const BuiltSystem b = build_system(cfg);
  const SystemState& s = b.state;
  ASSERT_EQ(s.size(), 6u);
  // Ordered by atom id; types by order (1 -> C, 2 -> O); masses and charges from the file.
  EXPECT_EQ(s.type, (std::vector<int>{0, 0, 1, 1, 0, 0}));
  EXPECT_EQ(s.mass[2], 15.999);
  EXPECT_EQ(s.mass[0], 12.011);
  EXPECT_EQ(s.charge[2], -0.5);
  EXPECT_EQ(s.charge[1], 0.25);
  EXPECT_EQ(s.box.lo.y, -10.0);
  EXPECT_EQ(s.box.L.x, 20.0);
  EXPECT_EQ(s.position[1].x, 2.4);
  EXPECT_EQ(s.image[1].x, 1);
  EXPECT_EQ(s.image[1].z, -1);
  // Atom 4 lies outside the box: wrapped, with its crossings in the image.
  EXPECT_DOUBLE_EQ(s.position[3].x, 5.0);
  EXPECT_EQ(s.image[3].x, 1);
  EXPECT_DOUBLE_EQ(s.position[3].y, 8.0);
  EXPECT_EQ(s.image[3].y, -1);
  EXPECT_DOUBLE_EQ(s.unwrapped(3).x, 25.0);
  // Velocities are the file's (A/fs, as LAMMPS real): not drawn.
  EXPECT_EQ(s.velocity[0].y, 0.002);
  EXPECT_EQ(s.velocity[3].y, 0.001);
  ASSERT_EQ(b.topology.bonds.size(), 3u);
  EXPECT_EQ(b.topology.bonds[2].i, 4);
  EXPECT_EQ(b.topology.bonds[2].j, 5);
  EXPECT_EQ(b.topology.bonds[2].type, 0);
  std::string notes;
  for (const std::string& n : b.notes) notes += n + "\n";
  // The file's angle, by order onto force_field.angles.
  ASSERT_EQ(b.topology.angles.size(), 1u);
  EXPECT_EQ(b.topology.angles[0].i, 0);
  EXPECT_EQ(b.topology.angles[0].j, 1);
  EXPECT_EQ(b.topology.angles[0].k, 2);
  EXPECT_EQ(b.topology.angles[0].type, 0);
  EXPECT_NE(notes.find("Pair Coeffs of the file are not used"), std::string::npos) << notes;
  EXPECT_NE(notes.find("atom types by order: 1 -> C, 2 -> O"), std::string::npos) << notes;
  EXPECT_EQ(notes.find("velocities: the start file has none"), std::string::npos) << notes;
}

// A chain written with every image flag zero although it crosses the box's faces (as hand-made
// or converted files often are): its bonds are a box length long in unwrapped coordinates, which
// every chain analysis would read. The start is accepted with a warning and the flags are set
// to follow the bonds; the positions stay as they are, and the flags of unbonded atoms are kept.
TEST(StartFiles, ImageFlagsThatCutBondsAreRepairedWithAWarning) {
  test::ScratchDir dir("start");
  std::ostringstream data;
  data << "chain across the faces\n\n7 atoms\n1 atom types\n5 bonds\n1 bond types\n\n"
       << "0 30 xlo xhi\n0 30 ylo yhi\n0 30 zlo zhi\n\nMasses\n\n1 1.0\n\nAtoms # molecular\n\n";
  // Atoms 1-6: a chain of steps of 1 that leaves the box through x = 30 (atom 3) and then
  // through y = 30 (atom 4); atom 7 is alone with its own flags.
  data << "1 1 1 28.0 29.0 5.0 0 0 0\n2 1 1 29.0 29.0 5.0 0 0 0\n3 1 1 0.0 29.0 5.0 0 0 0\n"
       << "4 1 1 0.0 0.0 5.0 0 0 0\n5 1 1 1.0 0.0 5.0 0 0 0\n6 1 1 2.0 0.0 5.0 0 0 0\n"
       << "7 2 1 15.0 15.0 15.0 2 -1 3\n\nBonds\n\n1 1 1 2\n2 1 2 3\n3 1 3 4\n4 1 4 5\n5 1 5 6\n";
  write(dir / "chain.data", data.str());
  const RunConfig cfg = parse_config(
      config_for("{path: " + (dir / "chain.data") + "}", "", "[{name: C, mass: 1.0}, {name: O, mass: 1.0}]"),
      "cfg.yaml");
  const BuiltSystem b = build_system(cfg);
  const SystemState& s = b.state;
  EXPECT_LT(longest_unwrapped_bond(s, b.topology), 1.0 + 1e-9);
  EXPECT_EQ(s.image[0].x, 0);  // the molecule's first atom keeps its flags
  EXPECT_EQ(s.image[2].x, 1);
  EXPECT_EQ(s.image[3].x, 1);
  EXPECT_EQ(s.image[3].y, 1);
  EXPECT_EQ(s.image[5].x, 1);
  EXPECT_EQ(s.image[5].y, 1);
  EXPECT_EQ(s.position[2].x, 0.0);  // positions untouched
  EXPECT_EQ(s.image[6].x, 2);       // the lone atom keeps its own
  EXPECT_EQ(s.image[6].z, 3);
  std::string notes;
  for (const std::string& n : b.notes) notes += n + "\n";
  EXPECT_NE(notes.find("warning: 2 of 5 bonds were not whole in unwrapped coordinates"), std::string::npos) << notes;
  EXPECT_NE(notes.find("the image flags of 4 particle(s) were set to follow the bonds"), std::string::npos) << notes;
  // A file whose flags are right gets no warning.
  write(dir / "full.data", kFullData);
  const BuiltSystem f = build_system(parse_config(config_for("{path: " + (dir / "full.data") + "}"), "f.yaml"));
  for (const std::string& n : f.notes) EXPECT_EQ(n.find("not whole"), std::string::npos) << n;
}

TEST(StartFiles, LammpsStylesByCommentColumnsOrConfig) {
  test::ScratchDir dir("start");
  const std::string head =
      "title\n\n4 atoms\n2 atom types\n2 bonds\n1 bond types\n\n0 10 xlo xhi\n0 10 ylo yhi\n0 10 zlo zhi\n\n";
  const std::string bonds = "\nBonds\n\n1 1 1 2\n2 1 3 4\n";
  struct Case {
    std::string name, atoms, extra_system;
    std::vector<double> charge;  // expected, from the file or the config's types
  };
  const std::vector<Case> cases = {
      {"atomic", "Atoms # atomic\n\n1 1 1 1 1\n2 1 2 1 1\n3 2 5 5 5\n4 2 6 5 5\n", "", {0.5, 0.5, -0.5, -0.5}},
      {"atomic_images",
       "Atoms\n\n1 1 1 1 1 0 0 0\n2 1 2 1 1 0 0 0\n3 2 5 5 5 0 1 0\n4 2 6 5 5 0 1 0\n",
       "",
       {0.5, 0.5, -0.5, -0.5}},
      {"bond", "Atoms # bond\n\n1 1 1 1 1 1\n2 1 1 2 1 1\n3 2 2 5 5 5\n4 2 2 6 5 5\n", "", {0.5, 0.5, -0.5, -0.5}},
      {"molecular_by_columns",
       "Atoms\n\n1 1 1 1 1 1\n2 1 1 2 1 1\n3 2 2 5 5 5\n4 2 2 6 5 5\n",
       "",
       {0.5, 0.5, -0.5, -0.5}},
      {"charge_by_config",
       "Atoms\n\n1 1 0.1 1 1 1\n2 1 0.2 2 1 1\n3 2 0.3 5 5 5\n4 2 0.4 6 5 5\n",
       "atom_style: charge, ",
       {0.1, 0.2, 0.3, 0.4}},
      {"full",
       "Atoms # full\n\n1 1 1 0.1 1 1 1\n2 1 1 0.2 2 1 1\n3 2 2 0.3 5 5 5\n4 2 2 0.4 6 5 5\n",
       "",
       {0.1, 0.2, 0.3, 0.4}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    write(dir / "s.data", head + c.atoms + bonds);
    const RunConfig cfg =
        parse_config(config_for("{" + c.extra_system + "path: " + (dir / "s.data") + "}", "",
                                "[{name: C, mass: 2.0, charge: 0.5}, {name: O, mass: 3.0, charge: -0.5}]"),
                     "cfg.yaml");
    const BuiltSystem b = build_system(cfg);
    ASSERT_EQ(b.state.size(), 4u);
    EXPECT_EQ(b.state.type, (std::vector<int>{0, 0, 1, 1}));
    EXPECT_EQ(b.state.charge, c.charge);
    EXPECT_EQ(b.state.mass, (std::vector<double>{2, 2, 3, 3}));  // no Masses section: the config's
    EXPECT_EQ(b.state.position[1].x, 2.0);
    EXPECT_EQ(b.topology.bonds.size(), 2u);
  }
  // Type labels match by name, whatever the order of system.types.
  write(dir / "l.data", head +
                            "Atom Type Labels\n\n1 O\n2 C\n\nBond Type Labels\n\n1 cc\n\nAtoms # atomic\n\n1 O 1 1 "
                            "1\n2 1 2 1 1\n3 C 5 5 5\n4 2 6 5 5\n" +
                            bonds);
  const BuiltSystem l = build_system(parse_config(config_for("{path: " + (dir / "l.data") + "}"), "cfg.yaml"));
  EXPECT_EQ(l.state.type, (std::vector<int>{1, 1, 0, 0}));
}

// Malformed files: one message, "CONFIG:L:C: system.file.path: FILE:LINE: what", exit 2 from
// check and run, nothing written.
TEST(StartFiles, MalformedFilesNameFileAndLine) {
  test::ScratchDir dir("start");
  const std::string head = "title\n\n2 atoms\n1 atom types\n\n0 10 xlo xhi\n0 10 ylo yhi\n0 10 zlo zhi\n\n";
  struct Bad {
    std::string name, text, expected;
  };
  const std::vector<Bad> cases = {
      {"columns", head + "Atoms # full\n\n1 1 1 0.0 1 1\n2 1 1 0.0 2 2 2\n",
       R"(s\.data:12: expected 7 or 10 columns for atom style full, got 6)"},
      {"number", head + "Atoms # atomic\n\n1 1 1 1 1\n2 1 2 x 2\n", R"(s\.data:13: expected a number for y, got 'x')"},
      {"type", head + "Atoms # atomic\n\n1 1 1 1 1\n2 3 2 2 2\n", R"(s\.data:13: atom type 3 is not in 1\.\.1)"},
      {"short", head + "Atoms # atomic\n\n1 1 1 1 1\n",
       R"(s\.data:12: Atoms has 1 lines, the header promises 2 \(atoms\))"},
      {"header", "title\n\n2 atoms\n1 atom types\n2 widgets\n",
       R"(s\.data:5: not a header line pairmd knows: '2 widgets')"},
      {"triclinic", "title\n\n2 atoms\n1 atom types\n0 10 xlo xhi\n0 10 ylo yhi\n0 10 zlo zhi\n1.0 0 0 xy xz yz\n",
       R"(s\.data:8: the box is triclinic)"},
      {"no_box", "title\n\n2 atoms\n1 atom types\n\nAtoms\n\n1 1 1 1 1\n2 1 2 2 2\n",
       R"(s\.data:6: the header has no xlo xhi line)"},
      {"duplicate", head + "Atoms # atomic\n\n1 1 1 1 1\n1 1 2 2 2\n",
       R"(s\.data:10: Atoms: atom id 1 is given twice)"},
      {"style", head + "Atoms # sphere\n\n1 1 1 1 1 1 1\n2 1 1 1 2 2 2\n",
       R"(s\.data:10: atom style 'sphere' is not one pairmd reads)"},
      {"bond",
       "title\n\n2 atoms\n1 atom types\n1 bonds\n1 bond types\n0 10 xlo xhi\n0 10 ylo yhi\n0 10 zlo zhi\n\n"
       "Atoms # atomic\n\n1 1 1 1 1\n2 1 2 2 2\n\nBonds\n\n1 1 1 7\n",
       R"(s\.data:18: Bonds: atoms 1 and 7 are not two atoms of the Atoms section)"},
  };
  for (const Bad& c : cases) {
    SCOPED_TRACE(c.name);
    write(dir / "s.data", c.text);
    write(dir / "cfg.yaml",
          "units: lj\nsystem:\n  types: [{name: A}]\n  file: {path: s.data}\n"
          "force_field:\n  bonds: [{name: b, potential: harmonic, k: 10, r0: 1}]\n"
          "  pair: [{potential: lj, cutoff: 2.5, coeffs: [{types: [A, A]}]}]\n"
          "integrator: {kind: langevin, dt: 0.005, temperature: 1.0}\nsteps: 10\n");
    const std::vector<std::string> before = dir.files();
    for (const char* cmd : {"check", "run"}) {
      const test::ChildResult r = test::run_pairmd_shell(std::string(cmd) + " cfg.yaml --backend cpu", dir.path);
      EXPECT_EQ(r.exit_code, 2) << cmd << ": " << r.err;
      EXPECT_TRUE(std::regex_search(r.err, std::regex("^cfg\\.yaml:4:16: system\\.file\\.path: " + c.expected)))
          << cmd << ": got '" << r.err << "'";
      EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
      EXPECT_EQ(dir.files().size(), before.size()) << cmd << " wrote files";
    }
  }
}

TEST(StartFiles, XyzPlainAndExtended) {
  test::ScratchDir dir("start");
  // Plain: names and positions, the box from the config.
  write(dir / "p.xyz", "3\nwater\nO 1.0 1.0 1.0\nH 1.9 1.0 1.0\nH 1.0 1.9 1.0\n");
  const std::string types = "[{name: H, mass: 1.008, charge: 0.4}, {name: O, mass: 15.999, charge: -0.8}]";
  const BuiltSystem p = build_system(
      parse_config(config_for("{path: " + (dir / "p.xyz") + ", box: [15, 15, 15]}", "", types), "cfg.yaml"));
  EXPECT_EQ(p.state.type, (std::vector<int>{1, 0, 0}));
  EXPECT_EQ(p.state.mass[0], 15.999);
  EXPECT_EQ(p.state.charge[1], 0.4);
  EXPECT_EQ(p.state.box.L.z, 15.0);
  // Extended, two frames: the last one by default, its Lattice and velocities.
  write(dir / "e.xyz",
        "2\nLattice=\"12 0 0 0 13 0 0 0 14\" Properties=species:S:1:pos:R:3:vel:R:3 pbc=\"T T T\"\n"
        "O 1 2 3 0.1 0.2 0.3\nH 2 2 3 0 0 0\n"
        "2\nLattice=\"12 0 0 0 13 0 0 0 14\" Properties=species:S:1:pos:R:3:vel:R:3\n"
        "O 1.5 2 3 0.01 0.02 0.03\nH 2.5 2 3 -0.01 0 0\n");
  const BuiltSystem e =
      build_system(parse_config(config_for("{path: " + (dir / "e.xyz") + "}", "", types), "cfg.yaml"));
  EXPECT_EQ(e.state.box.L.y, 13.0);
  EXPECT_EQ(e.state.position[0].x, 1.5);
  EXPECT_EQ(e.state.velocity[1].x, -0.01);
  const BuiltSystem e0 =
      build_system(parse_config(config_for("{path: " + (dir / "e.xyz") + ", frame: 0}", "", types), "cfg.yaml"));
  EXPECT_EQ(e0.state.velocity[0].z, 0.3);
  // Errors name the line.
  write(dir / "bad.xyz", "3\nno box\nO 1 1 1\nH 2 1\nH 1 2 1\n");
  try {
    build_system(parse_config(config_for("{path: " + (dir / "bad.xyz") + ", box: [9, 9, 9]}", "", types), "cfg.yaml"));
    FAIL() << "a short line was accepted";
  } catch (const ConfigError& err) {
    EXPECT_NE(std::string(err.what()).find("bad.xyz:4: expected 4 columns (name x y z), got 3"), std::string::npos)
        << err.what();
  }
  try {
    build_system(parse_config(config_for("{path: " + (dir / "p.xyz") + "}", "", types), "cfg.yaml"));
    FAIL() << "a periodic system without a box was accepted";
  } catch (const ConfigError& err) {
    EXPECT_NE(std::string(err.what()).find("p.xyz:2: the file gives no box"), std::string::npos) << err.what();
  }
  write(dir / "x.xyz", "1\nLattice=\"9 0 0 0 9 0 0 0 9\"\nXe 1 1 1\n");
  try {
    build_system(parse_config(config_for("{path: " + (dir / "x.xyz") + "}", "", types), "cfg.yaml"));
    FAIL() << "an unknown type was accepted";
  } catch (const ConfigError& err) {
    EXPECT_NE(std::string(err.what()).find("particle type 'Xe' is not in system.types (H, O)"), std::string::npos)
        << err.what();
  }
}

// A GSD frame written by pairmd's own output.gsd starts another run: types and bond types by
// name (here in another order than the writer's), float32 positions, images, and the step.
TEST(StartFiles, GsdFrameStartsARun) {
  test::ScratchDir dir("start");
  const std::string path = (dir / "t.gsd");
  const std::string writer_cfg = R"(units: lj
system:
  types: [{name: M, mass: 1.0, charge: -1.0}, {name: C, mass: 2.0, charge: 1.0}]
  chains: {count: 4, length: 10, density: 0.3, bond: fene, monomer_type: M, charged_every: 2, counterion_type: C, seed: 3}
force_field:
  exclusions: none
  bonds: [{name: harm, potential: harmonic, k: 10, r0: 1}, {name: fene, potential: fene, k: 30, r0: 1.5}]
  pair: [{potential: wca, coeffs: [{types: [M, M]}, {types: [M, C]}, {types: [C, C]}]}]
integrator: {kind: langevin, dt: 0.005, temperature: 1.0, seed: 5}
output: {gsd: {every: 100, velocities: false}}
)";
  RunConfig wcfg = parse_config(writer_cfg, "w.yaml");
  BuiltSystem w = build_system(wcfg);
  Model model = wcfg.model;
  model.topology = w.topology;
  Simulation sim(wcfg, w.topology, std::make_unique<CpuBackend>(model, w.state));
  sim.add_observer(std::make_unique<GsdWriter>(path, wcfg, w.state, w.topology, 3.0 * w.state.size()));
  ASSERT_EQ(sim.run(200).outcome, RunOutcome::Completed);
  SystemState end;
  sim.backend().get_state(end);

  const std::string reader_cfg = R"(units: lj
system:
  types: [{name: C, mass: 5.0}, {name: M, mass: 5.0}]
  file: {path: )" + path + R"(}
force_field:
  exclusions: none
  bonds: [{name: fene, potential: fene, k: 30, r0: 1.5}]
  pair: [{potential: wca, coeffs: [{types: [M, M]}, {types: [M, C]}, {types: [C, C]}]}]
integrator: {kind: langevin, dt: 0.005, temperature: 1.0, seed: 9}
)";
  const BuiltSystem r = build_system(parse_config(reader_cfg, "r.yaml"));
  ASSERT_EQ(r.state.size(), end.size());
  EXPECT_EQ(r.state.step, 200);
  for (size_t i = 0; i < end.size(); ++i) {
    EXPECT_EQ(r.state.type[i], end.type[i] == 0 ? 1 : 0);  // M is type 1 in the reader's config
    EXPECT_EQ(r.state.mass[i], end.mass[i]);               // the file's masses, not the config's
    // The same place relative to the box's lower corner (HOOMD's box is centred on the origin).
    const Vec3d a = r.state.unwrapped(i) - r.state.box.lo, b = end.unwrapped(i) - end.box.lo;
    EXPECT_NEAR(a.x, b.x, 1e-5 * std::max(1.0, std::fabs(b.x)));
    EXPECT_NEAR(a.z, b.z, 1e-5 * std::max(1.0, std::fabs(b.z)));
  }
  ASSERT_EQ(r.topology.bonds.size(), w.topology.bonds.size());
  EXPECT_EQ(r.topology.bonds[0].type, 0);  // "fene" is the reader's bond type 0
  std::string notes;
  for (const std::string& n : r.notes) notes += n + "\n";
  EXPECT_NE(notes.find("velocities: the start file has none; drawn from Maxwell-Boltzmann at T = 1"), std::string::npos)
      << notes;
}

// Missing velocities are drawn at the integrator's temperature: seeded (the same seed gives the
// same velocities, another seed others), at the right temperature (each type's velocity
// variance is k_B T / m within its statistical error), and zero on request.
TEST(StartFiles, MissingVelocitiesAreDrawnReproduciblyAtTheIntegratorTemperature) {
  test::ScratchDir dir("start");
  // 2 x 2000 atoms of masses 1 and 16 on a grid, no Velocities section.
  std::ostringstream d;
  const int n = 4000;
  d << "grid\n\n"
    << n
    << " atoms\n2 atom types\n\n0 40 xlo xhi\n0 40 ylo yhi\n0 40 zlo zhi\n\nMasses\n\n1 1.0\n2 16.0\n\nAtoms # "
       "atomic\n\n";
  for (int i = 0; i < n; ++i)
    d << i + 1 << " " << 1 + i % 2 << " " << 2.5 * (i % 16) << " " << 2.5 * ((i / 16) % 16) << " " << 2.5 * (i / 256)
      << "\n";
  write(dir / "g.data", d.str());
  auto build = [&](const std::string& extra) {
    return build_system(parse_config(
        "units: real\nsystem:\n  types: [{name: H}, {name: O}]\n  file: {path: " + (dir / "g.data") + "}\n" + extra +
            "force_field:\n  pair: [{potential: lj, cutoff: 2.0, coeffs: [{types: [H, H], epsilon: 0.01}, {types: [H, "
            "O], epsilon: 0.01}, "
            "{types: [O, O], epsilon: 0.01}]}]\nintegrator: {kind: langevin, dt: 1.0, temperature: 300, seed: 42}\n",
        "cfg.yaml"));
  };
  const BuiltSystem a = build(""), b = build(""), c = build("  velocities: {seed: 43}\n"),
                    z = build("  velocities: {missing: zero}\n");
  EXPECT_EQ(a.state.velocity.size(), static_cast<size_t>(n));
  EXPECT_EQ(std::memcmp(a.state.velocity.data(), b.state.velocity.data(), n * sizeof(Vec3d)), 0);
  EXPECT_NE(a.state.velocity[7].x, c.state.velocity[7].x);
  for (const Vec3d& v : z.state.velocity) ASSERT_EQ(v.x * v.x + v.y * v.y + v.z * v.z, 0.0);
  const Units u = Units::real();
  // The total is scaled to 3N k_B T / 2 exactly: a Langevin run's thermo counts 3N degrees of
  // freedom (docs/config.md), so step 0 reads 300 K.
  double ke2 = 0;
  for (int i = 0; i < n; ++i) ke2 += a.state.mass[i] * dot(a.state.velocity[i], a.state.velocity[i]);
  EXPECT_NEAR(ke2 / u.force_to_accel, 3.0 * n * u.kB * 300, 1e-9 * ke2 / u.force_to_accel);
  // Per type: <v_x^2> m / (k_B T f2a) = 1 within 5 standard errors (sqrt(2 / 3000) for 3 x 1000... components).
  for (int t = 0; t < 2; ++t) {
    double sum = 0;
    int count = 0;
    for (int i = 0; i < n; ++i) {
      if (a.state.type[i] != t) continue;
      const Vec3d& v = a.state.velocity[i];
      sum += a.state.mass[i] * (v.x * v.x + v.y * v.y + v.z * v.z) / (u.kB * 300 * u.force_to_accel);
      count += 3;
    }
    EXPECT_NEAR(sum / count, 1.0, 5 * std::sqrt(2.0 / count)) << "type " << t;
  }
  std::string notes;
  for (const std::string& x : a.notes) notes += x + "\n";
  EXPECT_NE(notes.find("velocities: the start file has none; drawn from Maxwell-Boltzmann at T = 300 K (seed 42"),
            std::string::npos)
      << notes;
  std::string znotes;
  for (const std::string& x : z.notes) znotes += x + "\n";
  EXPECT_NE(znotes.find("they start at zero (system.velocities.missing: zero)"), std::string::npos) << znotes;
}

// The run says so: the note is in its first lines.
TEST(StartFiles, TheRunSaysWhereVelocitiesCameFrom) {
  test::ScratchDir dir("start");
  write(dir / "s.xyz", "2\nLattice=\"12 0 0 0 12 0 0 0 12\"\nA 1 1 1\nA 3 1 1\n");
  write(dir / "cfg.yaml",
        "units: lj\nsteps: 10\nsystem:\n  types: [{name: A}]\n  file: {path: s.xyz}\n"
        "force_field:\n  pair: [{potential: lj, cutoff: 2.5, coeffs: [{types: [A, A]}]}]\n"
        "integrator: {kind: langevin, dt: 0.005, temperature: 1.5, seed: 4}\noutput: {progress: off}\n");
  const test::ChildResult r = test::run_pairmd_shell("run cfg.yaml --backend cpu", dir.path);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(
      r.out.find("velocities: the start file has none; drawn from Maxwell-Boltzmann at T = 1.5 epsilon/k_B (seed 4"),
      std::string::npos)
      << r.out;
}

// An H5MD start file's unit attributes are honoured: nm and Angstrom/ps (MDAnalysis's units, and
// pairmd's own real-units files from when time was ps) become Angstrom and Angstrom/fs.
TEST(StartFiles, H5mdUnitsAreConverted) {
  test::ScratchDir dir("start");
  const std::string path = (dir / "u.h5");
  {
    h5::LibraryLock lock(h5::library_mutex());
    h5::Handle f(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
    const double pos[6] = {0.1, 0.2, 0.3, 0.5, 0.5, 0.5}, vel[6] = {1, 2, 3, 0, 0, 0}, box[3] = {2.0, 2.0, 2.0};
    const int64_t step = 0;
    const double time = 0;
    h5::write_dataset(f, "particles/all/position/value", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, {1, 2, 3}, pos);
    h5::write_dataset(f, "particles/all/position/step", H5T_STD_I64LE, H5T_NATIVE_INT64, {1}, &step);
    h5::write_dataset(f, "particles/all/position/time", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, {1}, &time);
    h5::write_dataset(f, "particles/all/velocity/value", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, {1, 2, 3}, vel);
    h5::write_dataset(f, "particles/all/velocity/step", H5T_STD_I64LE, H5T_NATIVE_INT64, {1}, &step);
    h5::write_dataset(f, "particles/all/box/edges/value", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, {1, 3}, box);
    h5::write_dataset(f, "particles/all/box/edges/step", H5T_STD_I64LE, H5T_NATIVE_INT64, {1}, &step);
    h5::Handle p(H5Dopen2(f, "particles/all/position/value", H5P_DEFAULT));
    h5::write_string_attr(p, "unit", "nm");
    h5::Handle v(H5Dopen2(f, "particles/all/velocity/value", H5P_DEFAULT));
    h5::write_string_attr(v, "unit", "nm ps-1");
  }
  const BuiltSystem b = build_system(parse_config(
      "units: real\nsystem:\n  types: [{name: A, mass: 40}]\n  file: {path: " + path +
          "}\n"
          "force_field:\n  pair: [{potential: lj, cutoff: 8, coeffs: [{types: [A, A], epsilon: 0.2, sigma: 3.4}]}]\n"
          "integrator: {kind: langevin, dt: 2, temperature: 100}\n",
      "cfg.yaml"));
  EXPECT_DOUBLE_EQ(b.state.box.L.x, 20.0);
  EXPECT_DOUBLE_EQ(b.state.position[1].y, 5.0);
  EXPECT_DOUBLE_EQ(b.state.velocity[0].y, 0.02);  // 2 nm/ps = 0.02 A/fs
}

}  // namespace
}  // namespace pairmd
