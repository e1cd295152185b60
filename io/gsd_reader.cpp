// A frame of a GSD file (HOOMD schema) as a start structure, read with GSD's reference library.
#include <cmath>

#include "io/gsd_util.h"
#include "io/start_readers.h"

namespace pairmd {

namespace {

// angles/, dihedrals/ or impropers/ of a frame: each term's particles (checked against n) and
// type, to `add`; the type names to `names` (matched to the config's by name).
template <typename Chunk, typename Fail, typename Add>
void read_bonded_group(Chunk&& chunk, gsd_handle& h, uint32_t n, const std::string& prefix, uint32_t width,
                       std::vector<std::string>& names, Fail&& fail, Add&& add) {
  const gsd_index_entry* e = chunk((prefix + "/N").c_str());
  if (!e) return;
  const uint32_t count = gsdio::read_chunk<uint32_t>(h, e, GSD_TYPE_UINT32, 1, 1, (prefix + "/N").c_str())[0];
  if (count == 0) return;
  const gsd_index_entry* g = chunk((prefix + "/group").c_str());
  if (!g) fail(prefix + "/N is " + std::to_string(count) + " but there is no " + prefix + "/group");
  const std::vector<uint32_t> group =
      gsdio::read_chunk<uint32_t>(h, g, GSD_TYPE_UINT32, count, width, (prefix + "/group").c_str());
  std::vector<uint32_t> type(count, 0);
  if ((e = chunk((prefix + "/typeid").c_str())))
    type = gsdio::read_chunk<uint32_t>(h, e, GSD_TYPE_UINT32, count, 1, (prefix + "/typeid").c_str());
  names = {"A"};
  if ((e = chunk((prefix + "/types").c_str()))) names = gsdio::read_names(h, e, (prefix + "/types").c_str());
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
      fail(prefix.substr(0, prefix.size() - 1) + " " + std::to_string(k) + " (" + atoms + ", type " +
           std::to_string(type[k]) + ") is not valid for " + std::to_string(n) + " particles");
    }
    add(a, static_cast<int>(type[k]));
  }
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
  auto fail = [&](const std::string& what) { throw StartFileError("'" + path + "': " + what); };
  try {
    if (std::string(h.header.schema) != "hoomd")
      fail("not a HOOMD-schema GSD file (schema '" + std::string(h.header.schema) + "')");
    const int64_t frames = static_cast<int64_t>(gsd_get_nframes(&h));
    if (frames == 0) fail("it holds no frames");
    if (frame < 0) frame = frames - 1;
    if (frame >= frames)
      fail("frame " + std::to_string(frame) + " is out of range (the file holds " + std::to_string(frames) +
           " frames, 0.." + std::to_string(frames - 1) + "; -1 is the last)");
    const uint64_t f = static_cast<uint64_t>(frame);
    auto chunk = [&](const char* name) { return gsdio::find_chunk(h, f, name); };

    StartStructure out;
    out.types_by_name = true;
    SystemState& s = out.state;
    const gsd_index_entry* e = chunk("particles/N");
    if (!e) fail("it has no particles/N");
    const uint32_t n = gsdio::read_chunk<uint32_t>(h, e, GSD_TYPE_UINT32, 1, 1, "particles/N")[0];
    if (n == 0) fail("its frame " + std::to_string(frame) + " has no particles");
    if ((e = chunk("configuration/step")))
      s.step = static_cast<int64_t>(gsdio::read_chunk<uint64_t>(h, e, GSD_TYPE_UINT64, 1, 1, "configuration/step")[0]);
    if ((e = chunk("configuration/dimensions")) &&
        gsdio::read_chunk<uint8_t>(h, e, GSD_TYPE_UINT8, 1, 1, "configuration/dimensions")[0] != 3)
      fail("the system is not three-dimensional");
    std::vector<float> box{1, 1, 1, 0, 0, 0};  // the schema's default
    if ((e = chunk("configuration/box")))
      box = gsdio::read_chunk<float>(h, e, GSD_TYPE_FLOAT, 6, 1, "configuration/box");
    if (box[3] != 0 || box[4] != 0 || box[5] != 0)
      fail("the box is triclinic (tilt factors not zero); pairmd supports orthorhombic boxes only");
    for (int d = 0; d < 3; ++d)
      if (!(std::isfinite(box[d]) && box[d] > 0))
        fail("box edge " + std::to_string(box[d]) + " is not a positive number");
    s.box.L = {box[0], box[1], box[2]};
    s.box.lo = {-0.5 * box[0], -0.5 * box[1], -0.5 * box[2]};  // HOOMD's box is centred on the origin
    s.box.periodic = true;

    s.type_names = {"A"};  // the schema's default
    if ((e = chunk("particles/types"))) s.type_names = gsdio::read_names(h, e, "particles/types");
    s.type.assign(n, 0);
    if ((e = chunk("particles/typeid"))) {
      const std::vector<uint32_t> t = gsdio::read_chunk<uint32_t>(h, e, GSD_TYPE_UINT32, n, 1, "particles/typeid");
      for (uint32_t i = 0; i < n; ++i) {
        if (t[i] >= s.type_names.size())
          fail("particle " + std::to_string(i) + " has typeid " + std::to_string(t[i]) + ", outside particles/types");
        s.type[i] = static_cast<int>(t[i]);
      }
    }
    auto per_particle = [&](const char* name, std::vector<double>& v, double def, bool* given) {
      v.assign(n, def);
      const gsd_index_entry* c = chunk(name);
      if (given) *given = c != nullptr;
      if (!c) return;
      const std::vector<float> x = gsdio::read_chunk<float>(h, c, GSD_TYPE_FLOAT, n, 1, name);
      for (uint32_t i = 0; i < n; ++i) v[i] = x[i];
    };
    per_particle("particles/mass", s.mass, 1.0, &out.has_masses);
    per_particle("particles/charge", s.charge, 0.0, &out.has_charges);
    auto vectors = [&](const gsd_index_entry* c, const char* name, std::vector<Vec3d>& v) {
      v.assign(n, Vec3d{0, 0, 0});
      if (!c) return;
      const std::vector<float> x = gsdio::read_chunk<float>(h, c, GSD_TYPE_FLOAT, n, 3, name);
      for (uint32_t i = 0; i < n; ++i) v[i] = {x[3 * i], x[3 * i + 1], x[3 * i + 2]};
    };
    vectors(chunk("particles/position"), "particles/position", s.position);
    // Velocities of this frame only: the schema's fallback would hand frame 0's velocities to a
    // later frame.
    const gsd_index_entry* v = gsd_find_chunk(&h, f, "particles/velocity");
    vectors(v, "particles/velocity", s.velocity);
    out.has_velocities = v != nullptr;
    if (!v && gsd_find_chunk(&h, 0, "particles/velocity"))
      out.notes.push_back("frame " + std::to_string(frame) +
                          " of the GSD file has no velocities (frame 0 has): not used");
    s.image.assign(n, Int3{0, 0, 0});
    if ((e = chunk("particles/image"))) {
      const std::vector<int32_t> im = gsdio::read_chunk<int32_t>(h, e, GSD_TYPE_INT32, n, 3, "particles/image");
      for (uint32_t i = 0; i < n; ++i) s.image[i] = {im[3 * i], im[3 * i + 1], im[3 * i + 2]};
    }
    if ((e = chunk("bonds/N"))) {
      const uint32_t nb = gsdio::read_chunk<uint32_t>(h, e, GSD_TYPE_UINT32, 1, 1, "bonds/N")[0];
      if (nb > 0) {
        const gsd_index_entry* g = chunk("bonds/group");
        if (!g) fail("bonds/N is " + std::to_string(nb) + " but there is no bonds/group");
        const std::vector<uint32_t> group = gsdio::read_chunk<uint32_t>(h, g, GSD_TYPE_UINT32, nb, 2, "bonds/group");
        std::vector<uint32_t> type(nb, 0);
        if ((e = chunk("bonds/typeid")))
          type = gsdio::read_chunk<uint32_t>(h, e, GSD_TYPE_UINT32, nb, 1, "bonds/typeid");
        out.bond_type_names = {"A"};
        if ((e = chunk("bonds/types"))) out.bond_type_names = gsdio::read_names(h, e, "bonds/types");
        for (uint32_t b = 0; b < nb; ++b) {
          const uint32_t i = group[2 * b], j = group[2 * b + 1];
          if (i >= n || j >= n || i == j || type[b] >= out.bond_type_names.size())
            fail("bond " + std::to_string(b) + " (" + std::to_string(i) + ", " + std::to_string(j) + ", type " +
                 std::to_string(type[b]) + ") is not valid for " + std::to_string(n) + " particles");
          out.topology.bonds.push_back({static_cast<int>(i), static_cast<int>(j), static_cast<int>(type[b])});
        }
      }
    }
    read_bonded_group(chunk, h, n, "angles", 3, out.angle_type_names, fail, [&](const uint32_t* a, int type) {
      out.topology.angles.push_back({int(a[0]), int(a[1]), int(a[2]), type});
    });
    read_bonded_group(chunk, h, n, "dihedrals", 4, out.dihedral_type_names, fail, [&](const uint32_t* a, int type) {
      out.topology.dihedrals.push_back({int(a[0]), int(a[1]), int(a[2]), int(a[3]), type});
    });
    read_bonded_group(chunk, h, n, "impropers", 4, out.improper_type_names, fail, [&](const uint32_t* a, int type) {
      out.topology.impropers.push_back({int(a[0]), int(a[1]), int(a[2]), int(a[3]), type});
    });
    for (const char* unused : {"constraints/N", "pairs/N"})
      if ((e = chunk(unused)) && gsdio::read_chunk<uint32_t>(h, e, GSD_TYPE_UINT32, 1, 1, unused)[0] > 0)
        out.notes.push_back(std::string("warning: the GSD file's ") +
                            std::string(unused).substr(0, std::string(unused).find('/')) +
                            " are not used: pairmd has no such terms");
    if ((e = chunk("log/time"))) out.time = gsdio::read_chunk<double>(h, e, GSD_TYPE_DOUBLE, 1, 1, "log/time")[0];
    return out;
  } catch (const StartFileError&) {
    throw;
  } catch (const std::runtime_error& e) {
    fail(e.what());
  }
  return {};
}

}  // namespace pairmd
