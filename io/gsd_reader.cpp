// A frame of a GSD file (HOOMD schema) as a start structure, read with GSD's reference library.
#include <cstring>

#include "base/text.h"
#include "engine/resources.h"
#include "io/gsd_util.h"
#include "io/start_readers.h"

namespace pairmd {

namespace {

// An open GSD file and the frame being read; its chunks fall back to frame 0 (HOOMD schema).
struct GsdFrame {
  gsd_handle& h;
  std::string path;
  int64_t frame = 0;

  const gsd_index_entry* chunk(const char* name) const {
    return gsdio::find_chunk(h, static_cast<uint64_t>(frame), name);
  }
  [[noreturn]] void fail(const std::string& what) const { throw StartFileError("'" + path + "': " + what); }
};

// The frame to read (-1: the last), checked against the file's frames.
int64_t resolve_frame(gsd_handle& h, const std::string& path, int64_t frame) {
  auto fail = [&](const std::string& what) { throw StartFileError("'" + path + "': " + what); };
  // The header's schema as stored: a damaged file's may lack its NUL.
  const std::string schema(h.header.schema, strnlen(h.header.schema, sizeof h.header.schema));
  if (schema != "hoomd") fail("not a HOOMD-schema GSD file (schema '" + printable(schema) + "')");
  const int64_t frames = static_cast<int64_t>(gsd_get_nframes(&h));
  if (frames == 0) fail("it holds no frames");
  if (frame < 0) frame = frames - 1;
  if (frame >= frames)
    fail("frame " + std::to_string(frame) + " is out of range (the file holds " + std::to_string(frames) +
         " frames, 0.." + std::to_string(frames - 1) + "; -1 is the last)");
  return frame;
}

// The step, the dimensions and the box (centred on the origin, as HOOMD's).
void read_configuration(const GsdFrame& g, SystemState& s) {
  const gsd_index_entry* e;
  if ((e = g.chunk("configuration/step")))
    s.step = static_cast<int64_t>(gsdio::read_chunk<uint64_t>(g.h, e, GSD_TYPE_UINT64, 1, 1, "configuration/step")[0]);
  if ((e = g.chunk("configuration/dimensions")) &&
      gsdio::read_chunk<uint8_t>(g.h, e, GSD_TYPE_UINT8, 1, 1, "configuration/dimensions")[0] != 3)
    g.fail("the system is not three-dimensional");
  std::vector<float> box{1, 1, 1, 0, 0, 0};  // the schema's default
  if ((e = g.chunk("configuration/box")))
    box = gsdio::read_chunk<float>(g.h, e, GSD_TYPE_FLOAT, 6, 1, "configuration/box");
  if (box[3] != 0 || box[4] != 0 || box[5] != 0)
    g.fail("the box is triclinic (tilt factors not zero); pairmd supports orthorhombic boxes only");
  s.box.L = {box[0], box[1], box[2]};
  s.box.lo = {-0.5 * box[0], -0.5 * box[1], -0.5 * box[2]};
  const std::string problem = box_problem(s.box.lo, s.box.L);
  if (!problem.empty()) g.fail("configuration/box: " + problem);
  s.box.periodic = true;
}

void read_types(const GsdFrame& g, uint32_t n, SystemState& s) {
  s.type_names = {"A"};  // the schema's default
  const gsd_index_entry* e;
  if ((e = g.chunk("particles/types"))) s.type_names = gsdio::read_names(g.h, e, "particles/types");
  s.type.assign(n, 0);
  if (!(e = g.chunk("particles/typeid"))) return;
  const std::vector<uint32_t> t = gsdio::read_chunk<uint32_t>(g.h, e, GSD_TYPE_UINT32, n, 1, "particles/typeid");
  for (uint32_t i = 0; i < n; ++i) {
    if (t[i] >= s.type_names.size())
      g.fail("particle " + std::to_string(i) + " has typeid " + std::to_string(t[i]) + ", outside particles/types");
    s.type[i] = static_cast<int>(t[i]);
  }
}

// A per-particle float (`def` where the file has none); whether the file has it.
bool read_scalars(const GsdFrame& g, const char* name, uint32_t n, double def, std::vector<double>& v) {
  v.assign(n, def);
  const gsd_index_entry* c = g.chunk(name);
  if (!c) return false;
  const std::vector<float> x = gsdio::read_chunk<float>(g.h, c, GSD_TYPE_FLOAT, n, 1, name);
  for (uint32_t i = 0; i < n; ++i) v[i] = x[i];
  return true;
}

void read_vectors(const GsdFrame& g, const gsd_index_entry* c, const char* name, uint32_t n, std::vector<Vec3d>& v) {
  v.assign(n, Vec3d{0, 0, 0});
  if (!c) return;
  const std::vector<float> x = gsdio::read_chunk<float>(g.h, c, GSD_TYPE_FLOAT, n, 3, name);
  for (uint32_t i = 0; i < n; ++i) v[i] = {x[3 * i], x[3 * i + 1], x[3 * i + 2]};
}

// Positions, velocities (of this frame only: the schema's fallback would hand frame 0's
// velocities to a later frame) and images.
void read_motion(const GsdFrame& g, uint32_t n, StartStructure& out) {
  SystemState& s = out.state;
  read_vectors(g, g.chunk("particles/position"), "particles/position", n, s.position);
  const gsd_index_entry* v = gsd_find_chunk(&g.h, static_cast<uint64_t>(g.frame), "particles/velocity");
  read_vectors(g, v, "particles/velocity", n, s.velocity);
  out.has_velocities = v != nullptr;
  if (!v && gsd_find_chunk(&g.h, 0, "particles/velocity"))
    out.notes.push_back("frame " + std::to_string(g.frame) +
                        " of the GSD file has no velocities (frame 0 has): not used");
  s.image.assign(n, Int3{0, 0, 0});
  if (const gsd_index_entry* e = g.chunk("particles/image")) {
    const std::vector<int32_t> im = gsdio::read_chunk<int32_t>(g.h, e, GSD_TYPE_INT32, n, 3, "particles/image");
    for (uint32_t i = 0; i < n; ++i) s.image[i] = {im[3 * i], im[3 * i + 1], im[3 * i + 2]};
  }
}

void read_bonds(const GsdFrame& g, uint32_t n, StartStructure& out) {
  const gsd_index_entry* e = g.chunk("bonds/N");
  if (!e) return;
  const uint32_t nb = gsdio::read_chunk<uint32_t>(g.h, e, GSD_TYPE_UINT32, 1, 1, "bonds/N")[0];
  if (nb == 0) return;
  const gsd_index_entry* grp = g.chunk("bonds/group");
  if (!grp) g.fail("bonds/N is " + std::to_string(nb) + " but there is no bonds/group");
  const std::vector<uint32_t> group = gsdio::read_chunk<uint32_t>(g.h, grp, GSD_TYPE_UINT32, nb, 2, "bonds/group");
  std::vector<uint32_t> type(nb, 0);
  if ((e = g.chunk("bonds/typeid"))) type = gsdio::read_chunk<uint32_t>(g.h, e, GSD_TYPE_UINT32, nb, 1, "bonds/typeid");
  out.bond_type_names = {"A"};
  if ((e = g.chunk("bonds/types"))) out.bond_type_names = gsdio::read_names(g.h, e, "bonds/types");
  for (uint32_t b = 0; b < nb; ++b) {
    const uint32_t i = group[2 * b], j = group[2 * b + 1];
    if (i >= n || j >= n || i == j || type[b] >= out.bond_type_names.size())
      g.fail("bond " + std::to_string(b) + " (" + std::to_string(i) + ", " + std::to_string(j) + ", type " +
             std::to_string(type[b]) + ") is not valid for " + std::to_string(n) + " particles");
    out.topology.bonds.push_back({static_cast<int>(i), static_cast<int>(j), static_cast<int>(type[b])});
  }
}

// angles/, dihedrals/ or impropers/ of a frame: each term's particles (checked against n and
// each other) and type, to `add`; the type names to `names` (matched to the config's by name).
template <typename Add>
void read_bonded_group(const GsdFrame& g, uint32_t n, const std::string& prefix, uint32_t width,
                       std::vector<std::string>& names, Add&& add) {
  const gsd_index_entry* e = g.chunk((prefix + "/N").c_str());
  if (!e) return;
  const uint32_t count = gsdio::read_chunk<uint32_t>(g.h, e, GSD_TYPE_UINT32, 1, 1, (prefix + "/N").c_str())[0];
  if (count == 0) return;
  const gsd_index_entry* grp = g.chunk((prefix + "/group").c_str());
  if (!grp) g.fail(prefix + "/N is " + std::to_string(count) + " but there is no " + prefix + "/group");
  const std::vector<uint32_t> group =
      gsdio::read_chunk<uint32_t>(g.h, grp, GSD_TYPE_UINT32, count, width, (prefix + "/group").c_str());
  std::vector<uint32_t> type(count, 0);
  if ((e = g.chunk((prefix + "/typeid").c_str())))
    type = gsdio::read_chunk<uint32_t>(g.h, e, GSD_TYPE_UINT32, count, 1, (prefix + "/typeid").c_str());
  names = {"A"};
  if ((e = g.chunk((prefix + "/types").c_str()))) names = gsdio::read_names(g.h, e, (prefix + "/types").c_str());
  for (uint32_t k = 0; k < count; ++k) {
    const uint32_t* a = &group[static_cast<size_t>(k) * width];
    bool ok = type[k] < names.size();
    for (uint32_t q = 0; q < width; ++q) {
      ok = ok && a[q] < n;
      for (uint32_t r = 0; r < q; ++r) ok = ok && a[r] != a[q];
    }
    if (!ok) {
      std::string atoms;
      for (uint32_t q = 0; q < width; ++q) atoms += (q ? ", " : "") + std::to_string(a[q]);
      g.fail(prefix.substr(0, prefix.size() - 1) + " " + std::to_string(k) + " (" + atoms + ", type " +
             std::to_string(type[k]) + ") is not valid for " + std::to_string(n) + " particles");
    }
    add(a, static_cast<int>(type[k]));
  }
}

void read_bonded(const GsdFrame& g, uint32_t n, StartStructure& out) {
  read_bonded_group(g, n, "angles", 3, out.angle_type_names, [&](const uint32_t* a, int type) {
    out.topology.angles.push_back({int(a[0]), int(a[1]), int(a[2]), type});
  });
  read_bonded_group(g, n, "dihedrals", 4, out.dihedral_type_names, [&](const uint32_t* a, int type) {
    out.topology.dihedrals.push_back({int(a[0]), int(a[1]), int(a[2]), int(a[3]), type});
  });
  read_bonded_group(g, n, "impropers", 4, out.improper_type_names, [&](const uint32_t* a, int type) {
    out.topology.impropers.push_back({int(a[0]), int(a[1]), int(a[2]), int(a[3]), type});
  });
}

// Notes on what pairmd leaves out; the time.
void read_rest(const GsdFrame& g, StartStructure& out) {
  const gsd_index_entry* e;
  for (const char* unused : {"constraints/N", "pairs/N"})
    if ((e = g.chunk(unused)) && gsdio::read_chunk<uint32_t>(g.h, e, GSD_TYPE_UINT32, 1, 1, unused)[0] > 0)
      out.notes.push_back(std::string("warning: the GSD file's ") +
                          std::string(unused).substr(0, std::string(unused).find('/')) +
                          " are not used: pairmd has no such terms");
  if ((e = g.chunk("log/time"))) out.time = gsdio::read_chunk<double>(g.h, e, GSD_TYPE_DOUBLE, 1, 1, "log/time")[0];
}

StartStructure read_frame(const GsdFrame& g) {
  StartStructure out;
  out.types_by_name = true;
  SystemState& s = out.state;
  const gsd_index_entry* e = g.chunk("particles/N");
  if (!e) g.fail("it has no particles/N");
  const uint32_t n = gsdio::read_chunk<uint32_t>(g.h, e, GSD_TYPE_UINT32, 1, 1, "particles/N")[0];
  if (n == 0) g.fail("its frame " + std::to_string(g.frame) + " has no particles");
  // Each particle's chunks as read (float) and as state, before they are allocated.
  const std::string room = room_for(n, static_cast<double>(kMaxParticles), 160, "particles");
  if (!room.empty()) g.fail("particles/N: " + room);
  out.frame = g.frame;
  read_configuration(g, s);
  read_types(g, n, s);
  out.has_masses = read_scalars(g, "particles/mass", n, 1.0, s.mass);
  out.has_charges = read_scalars(g, "particles/charge", n, 0.0, s.charge);
  read_motion(g, n, out);
  read_bonds(g, n, out);
  read_bonded(g, n, out);
  read_rest(g, out);
  return out;
}

}  // namespace

StartStructure read_gsd_frame(const std::string& path, int64_t frame) {
  gsd_handle h{};
  const int rc = gsd_open(&h, path.c_str(), GSD_OPEN_READONLY);
  if (rc != GSD_SUCCESS) throw StartFileError("'" + path + "': " + gsdio::error_text(rc));
  struct Closer {
    gsd_handle& h;
    ~Closer() { gsd_close(&h); }
  } closer{h};
  try {
    const GsdFrame g{h, path, resolve_frame(h, path, frame)};
    return read_frame(g);
  } catch (const StartFileError&) {
    throw;
  } catch (const std::runtime_error& e) {
    throw StartFileError("'" + path + "': " + e.what());
  }
}

}  // namespace pairmd
