// Reading one frame of an H5MD file: the files pairmd writes (docs/output.md) and, as far as
// they go, other H5MD files with particles/<group>/position. Every problem becomes one
// std::runtime_error naming the file; HDF5's own error printing is off.
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "base/text.h"
#include "engine/resources.h"
#include "io/child_read.h"
#include "io/h5md.h"
#include "io/hdf5_util.h"
#include "io/start_readers.h"

namespace pairmd {

using h5::Handle;

namespace {

struct Fail : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// `count` items of `bytes_each` read from `where`: refused (room_for) before they are allocated.
void require_room(double count, double max_count, double bytes_each, const std::string& what,
                  const std::string& where) {
  const std::string problem = room_for(count, max_count, bytes_each, what);
  if (!problem.empty()) throw Fail(where + ": " + problem);
}

// A dataset compressed with a filter this HDF5 library lacks (a plugin not installed) is named
// as such; HDF5 itself reports only that its plugin directory cannot be opened.
void require_filters(hid_t dataset, const std::string& where) {
  Handle dcpl(H5Dget_create_plist(dataset));
  if (!dcpl.valid()) return;
  const int n = H5Pget_nfilters(dcpl);
  for (int k = 0; k < n; ++k) {
    unsigned flags = 0, config = 0;
    size_t nvalues = 0;
    char name[256] = "";
    const H5Z_filter_t id =
        H5Pget_filter2(dcpl, static_cast<unsigned>(k), &flags, &nvalues, nullptr, sizeof name, name, &config);
    if (id < 0 || H5Zfilter_avail(id) > 0) continue;
    H5Eclear2(H5E_DEFAULT);
    throw Fail(where + " is compressed with HDF5 filter " + std::to_string(id) + " (" + printable(name) +
               "), which this pairmd's HDF5 library does not have (install its plugin, or write the file without it: "
               "h5repack -f NONE)");
  }
}

// A time-dependent element (group with value, step) or a time-independent dataset.
struct Element {
  Handle value;  // the value dataset (or the dataset itself)
  bool time_dependent = false;
  std::vector<int64_t> steps;  // per frame, when time dependent
  std::vector<double> times;
  std::vector<hsize_t> dims;  // of value
};

std::vector<int64_t> read_steps(hid_t group, hsize_t frames, const std::string& where) {
  require_room(static_cast<double>(frames), 1e15, 32, "frames", where);
  std::vector<int64_t> steps(frames);
  if (!h5::exists(group, "step")) {
    for (hsize_t i = 0; i < frames; ++i) steps[i] = static_cast<int64_t>(i);
    return steps;
  }
  Handle d(h5::check_id(H5Dopen2(group, "step", H5P_DEFAULT), "cannot open " + where + "/step"));
  require_filters(d, where + "/step");
  const auto dims = h5::dims_of(d);
  if (dims.empty()) {
    // H5MD fixed interval: step is a scalar, frame i is at offset + i * step.
    int64_t every = 0, offset = 0;
    h5::check(H5Dread(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, &every), "cannot read " + where + "/step");
    if (H5Aexists(d, "offset") > 0) {
      Handle a(H5Aopen(d, "offset", H5P_DEFAULT));
      h5::check(H5Aread(a, H5T_NATIVE_INT64, &offset), "cannot read " + where + "/step offset");
    }
    for (hsize_t i = 0; i < frames; ++i) steps[i] = offset + static_cast<int64_t>(i) * every;
    return steps;
  }
  if (dims.size() != 1 || dims[0] < frames)
    throw Fail(where + "/step has " + std::to_string(dims.empty() ? 0 : dims[0]) + " entries for " +
               std::to_string(frames) + " frames");
  require_room(static_cast<double>(dims[0]), 1e15, 16, "steps", where + "/step");
  std::vector<int64_t> all(dims[0]);
  if (dims[0] > 0)
    h5::check(H5Dread(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, all.data()),
              "cannot read " + where + "/step");
  all.resize(frames);
  return all;
}

std::vector<double> read_times(hid_t group, const std::vector<int64_t>& steps, const std::string& where) {
  std::vector<double> t(steps.size(), 0.0);
  if (!h5::exists(group, "time")) return t;
  Handle d(h5::check_id(H5Dopen2(group, "time", H5P_DEFAULT), "cannot open " + where + "/time"));
  require_filters(d, where + "/time");
  const auto dims = h5::dims_of(d);
  if (dims.empty()) {
    double every = 0, offset = 0;
    h5::check(H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, &every), "cannot read " + where + "/time");
    if (H5Aexists(d, "offset") > 0) {
      Handle a(H5Aopen(d, "offset", H5P_DEFAULT));
      h5::check(H5Aread(a, H5T_NATIVE_DOUBLE, &offset), "cannot read " + where + "/time offset");
    }
    for (size_t i = 0; i < t.size(); ++i) t[i] = offset + static_cast<double>(i) * every;
    return t;
  }
  if (dims.size() != 1 || dims[0] < steps.size()) throw Fail(where + "/time has fewer entries than frames");
  require_room(static_cast<double>(dims[0]), 1e15, 16, "times", where + "/time");
  std::vector<double> all(dims[0]);
  if (dims[0] > 0)
    h5::check(H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, all.data()),
              "cannot read " + where + "/time");
  all.resize(steps.size());
  return all;
}

// Opens element `name` of `group` ("" if absent: returns false).
bool open_element(hid_t group, const std::string& name, const std::string& where, Element& e) {
  if (!h5::exists(group, name)) return false;
  H5O_info_t oi;
  h5::check(H5Oget_info_by_name(group, name.c_str(), &oi, H5P_DEFAULT), "cannot inspect " + where);
  if (oi.type == H5O_TYPE_DATASET) {
    e.value = Handle(h5::check_id(H5Dopen2(group, name.c_str(), H5P_DEFAULT), "cannot open " + where));
    require_filters(e.value, where);
    e.dims = h5::dims_of(e.value);
    return true;
  }
  if (oi.type != H5O_TYPE_GROUP) throw Fail(where + " is neither a dataset nor a group");
  Handle g(h5::check_id(H5Gopen2(group, name.c_str(), H5P_DEFAULT), "cannot open " + where));
  if (!h5::exists(g, "value")) throw Fail(where + " has no value dataset");
  e.value = Handle(h5::check_id(H5Dopen2(g, "value", H5P_DEFAULT), "cannot open " + where + "/value"));
  require_filters(e.value, where + "/value");
  e.dims = h5::dims_of(e.value);
  if (e.dims.empty()) throw Fail(where + "/value is a scalar, expected frames");
  e.time_dependent = true;
  e.steps = read_steps(g, e.dims[0], where);
  e.times = read_times(g, e.steps, where);
  return true;
}

// The `unit` attribute of `obj`'s dataset `name` ("" when absent or not a string).
std::string unit_of(hid_t group, const std::string& name) {
  if (!h5::exists(group, name)) return "";
  Handle d(H5Dopen2(group, name.c_str(), H5P_DEFAULT));
  if (!d.valid() || H5Aexists(d, "unit") <= 0) {
    H5Eclear2(H5E_DEFAULT);
    return "";
  }
  Handle a(h5::check_id(H5Aopen(d, "unit", H5P_DEFAULT), "cannot open the unit of " + name));
  return h5::read_string(a, true, "the unit of " + name);
}

// Index of the frame of `e` at `step` (time-dependent), -1 if it has none.
int64_t frame_at(const Element& e, int64_t step) {
  for (size_t i = 0; i < e.steps.size(); ++i)
    if (e.steps[i] == step) return static_cast<int64_t>(i);
  return -1;
}

// Reads frame `frame` (or the whole dataset when not time dependent) as `count` values.
template <typename T>
std::vector<T> read_values(const Element& e, int64_t frame, size_t expect, hid_t mem_type, const std::string& where) {
  std::vector<hsize_t> start(e.dims.size(), 0), count = e.dims;
  if (e.time_dependent) {
    start[0] = static_cast<hsize_t>(frame);
    count[0] = 1;
  }
  size_t total = 1;
  for (hsize_t c : count) total *= c;
  if (total != expect)
    throw Fail(where + " has " + std::to_string(total) + " values per frame, expected " + std::to_string(expect));
  std::vector<T> out(total);
  if (total == 0) return out;
  Handle fs(H5Dget_space(e.value));
  h5::check(H5Sselect_hyperslab(fs, H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr),
            "cannot select in " + where);
  const hsize_t n = total;
  Handle ms(H5Screate_simple(1, &n, nullptr));
  h5::check(H5Dread(e.value, mem_type, ms, fs, H5P_DEFAULT, out.data()), "cannot read " + where);
  return out;
}

// The frame of element `e` that goes with the position frame at `step`: the one at the same
// step, or the only one of a time-independent element. -1: none.
int64_t matching(const Element& e, int64_t step) { return e.time_dependent ? frame_at(e, step) : 0; }

// The particle group (particles/all, else the first one) and its positions: the frame's shape,
// step and time are those of the position element.
struct FrameSource {
  std::string pg;  // the particle group's path
  Handle all;      // the particle group
  Element pos;     // its position element
  int64_t frames = 0;
  int64_t frame = 0;  // the frame read (-1 resolved)
  size_t n = 0;
};

void open_positions(hid_t file, int64_t frame, FrameSource& src, H5mdFrame& out) {
  if (!h5::exists(file, "particles")) throw Fail("no particles group (not an H5MD trajectory)");
  std::string& pg = src.pg;
  pg = "particles/all";
  if (!h5::exists(file, pg)) {
    Handle p = h5::open_group(file, "particles");
    char name[256];
    if (H5Lget_name_by_idx(p, ".", H5_INDEX_NAME, H5_ITER_INC, 0, name, sizeof name, H5P_DEFAULT) < 0)
      throw Fail("particles has no particle group");
    pg = std::string("particles/") + name;
  }
  src.all = h5::open_group(file, pg);
  const hid_t all = src.all;
  Element& pos = src.pos;
  if (!open_element(all, "position", pg + "/position", pos)) throw Fail(pg + " has no position");
  if (!pos.time_dependent || pos.dims.size() != 3 || pos.dims[2] != 3)
    throw Fail(pg + "/position/value is not shaped [frames, particles, 3]");
  const int64_t frames = src.frames = static_cast<int64_t>(pos.dims[0]);
  if (frames == 0) throw Fail(pg + "/position holds no frames");
  if (frame < 0) frame = frames - 1;
  if (frame >= frames)
    throw Fail("frame " + std::to_string(frame) + " is out of range (the file holds " + std::to_string(frames) +
               " frames, 0.." + std::to_string(frames - 1) + "; -1 is the last)");
  const size_t n = src.n = pos.dims[1];
  // Positions, velocities, images, types, masses and charges as read, as state, and twice on
  // their way from the reading child.
  require_room(static_cast<double>(n), static_cast<double>(kMaxParticles), 320, "particles", pg + "/position");
  SystemState& s = out.state;
  s.step = pos.steps[frame];
  out.time = pos.times[frame];
  if (!std::isfinite(out.time)) throw Fail("the time of frame " + std::to_string(frame) + " is not finite");

  const std::vector<double> x = read_values<double>(pos, frame, 3 * n, H5T_NATIVE_DOUBLE, pg + "/position");
  out.length_unit = unit_of(all, "position/value");
  out.time_unit = unit_of(all, "position/time");
  s.position.resize(n);
  for (size_t i = 0; i < n; ++i) s.position[i] = {x[3 * i], x[3 * i + 1], x[3 * i + 2]};

  src.frame = out.frame = frame;
}

// Box: boundary attribute, edges (time-dependent, a vector, or a diagonal matrix), offset.
void read_box(const FrameSource& src, SystemState& s) {
  const std::string& pg = src.pg;
  const hid_t all = src.all;
  const int64_t frames = src.frames, frame = src.frame;
  s.box.periodic = true;
  s.box.lo = {0, 0, 0};
  if (!h5::exists(all, "box")) throw Fail(pg + " has no box");
  Handle box = h5::open_group(all, "box");
  if (H5Aexists(box, "boundary") > 0) {
    const std::vector<std::string> b = h5::read_string_array_attr(box, "boundary", 3);
    if (!b.empty()) s.box.periodic = b[0] == "periodic";
  }
  Element edges;
  if (!open_element(box, "edges", pg + "/box/edges", edges)) throw Fail(pg + "/box has no edges");
  std::vector<double> L;
  const size_t per = edges.time_dependent ? (edges.dims.size() == 3 ? 9 : 3) : (edges.dims.size() == 2 ? 9 : 3);
  int64_t ef = matching(edges, s.step);
  if (ef < 0) ef = edges.dims[0] == static_cast<hsize_t>(frames) ? frame : static_cast<int64_t>(edges.dims[0]) - 1;
  if (ef < 0) throw Fail(pg + "/box/edges holds no frames");
  L = read_values<double>(edges, ef, per, H5T_NATIVE_DOUBLE, pg + "/box/edges");
  if (per == 9) {
    if (L[1] != 0 || L[2] != 0 || L[3] != 0 || L[5] != 0 || L[6] != 0 || L[7] != 0)
      throw Fail("the box is triclinic; pairmd supports orthorhombic boxes only");
    L = {L[0], L[4], L[8]};
  }
  s.box.L = {L[0], L[1], L[2]};
  if (h5::exists(box, "offset")) {
    Element off;
    open_element(box, "offset", pg + "/box/offset", off);
    int64_t of = matching(off, s.step);
    if (of < 0) of = 0;
    const std::vector<double> lo = read_values<double>(off, of, 3, H5T_NATIVE_DOUBLE, pg + "/box/offset");
    s.box.lo = {lo[0], lo[1], lo[2]};
  }
  const std::string problem = box_problem(s.box.lo, s.box.L);
  if (!problem.empty()) throw Fail(problem);
}

// Images, velocities, species and their names, masses and charges: what the file has, defaults
// for the rest; whether the frame has velocities, and their unit, go to `out`.
void read_particles(const FrameSource& src, H5mdFrame& out) {
  SystemState& s = out.state;
  const std::string& pg = src.pg;
  const hid_t all = src.all;
  const size_t n = src.n;
  s.image.assign(n, Int3{0, 0, 0});
  Element img;
  if (open_element(all, "image", pg + "/image", img)) {
    const int64_t f = matching(img, s.step);
    if (f >= 0) {
      const std::vector<int32_t> im = read_values<int32_t>(img, f, 3 * n, H5T_NATIVE_INT32, pg + "/image");
      for (size_t i = 0; i < n; ++i) s.image[i] = {im[3 * i], im[3 * i + 1], im[3 * i + 2]};
    }
  }
  s.velocity.assign(n, Vec3d{0, 0, 0});
  Element vel;
  if (open_element(all, "velocity", pg + "/velocity", vel)) {
    const int64_t f = matching(vel, s.step);
    if (f >= 0) {
      const std::vector<double> v = read_values<double>(vel, f, 3 * n, H5T_NATIVE_DOUBLE, pg + "/velocity");
      for (size_t i = 0; i < n; ++i) s.velocity[i] = {v[3 * i], v[3 * i + 1], v[3 * i + 2]};
      out.has_velocity = true;
      out.velocity_unit = unit_of(all, "velocity/value");
    }
  }
  s.type.assign(n, 0);
  Element sp;
  if (open_element(all, "species", pg + "/species", sp)) {
    int64_t f = matching(sp, s.step);
    if (f < 0) f = 0;
    const std::vector<int32_t> t = read_values<int32_t>(sp, f, n, H5T_NATIVE_INT32, pg + "/species");
    s.type.assign(t.begin(), t.end());
    if (H5Aexists(sp.value, "names") > 0) s.type_names = h5::read_string_array_attr(sp.value, "names", 100000);
  }
  for (size_t i = 0; i < n; ++i) {
    if (s.type[i] < 0 || (!s.type_names.empty() && s.type[i] >= static_cast<int>(s.type_names.size())))
      throw Fail("particle " + std::to_string(i) + " has species " + std::to_string(s.type[i]) + ", outside the " +
                 std::to_string(s.type_names.size()) + " named types");
  }
  s.mass.assign(n, 1.0);
  s.charge.assign(n, 0.0);
  for (const char* name : {"mass", "charge"}) {
    Element e;
    if (!open_element(all, name, pg + "/" + name, e)) continue;
    int64_t f = matching(e, s.step);
    if (f < 0) f = 0;
    std::vector<double> v = read_values<double>(e, f, n, H5T_NATIVE_DOUBLE, pg + "/" + name);
    for (size_t i = 0; i < n; ++i) {
      if (!std::isfinite(v[i]) || (name[0] == 'm' && !(v[i] > 0)))
        throw Fail("particle " + std::to_string(i) + " has " + name + " " + number_text(v[i]));
    }
    (name[0] == 'm' ? s.mass : s.charge) = std::move(v);
  }
}

// Sanity: finite values, positions in (or wrapped into) a periodic box.
void check_and_wrap(SystemState& s, int64_t frame) {
  for (size_t i = 0; i < s.position.size(); ++i) {
    auto fail = [&](const std::string& what) {
      throw Fail("frame " + std::to_string(frame) + ", particle " + std::to_string(i) + ": " + what);
    };
    const std::string problem = position_problem(s.position[i], s.box);
    if (!problem.empty()) fail(problem);
    const Vec3d v = s.velocity[i];
    if (!(std::isfinite(v.x) && std::isfinite(v.y) && std::isfinite(v.z)))
      fail("the velocity (" + number_text(v.x) + ", " + number_text(v.y) + ", " + number_text(v.z) + ") is not finite");
    if (s.box.periodic && !wrap_into_box(s.position[i], s.image[i], s.box))
      fail("its image and the box crossings of its position overflow a 32-bit image counter");
  }
}

// Bonds from connectivity/, checked against the particle count.
void read_bonds(hid_t file, size_t n, Topology& topology) {
  if (h5::exists(file, "connectivity/bonds")) {
    Handle d(h5::check_id(H5Dopen2(file, "connectivity/bonds", H5P_DEFAULT), "cannot open connectivity/bonds"));
    require_filters(d, "connectivity/bonds");
    const auto dims = h5::dims_of(d);
    if (dims.size() != 2 || dims[1] != 2) throw Fail("connectivity/bonds is not shaped [bonds, 2]");
    require_room(static_cast<double>(dims[0]), 2147483647.0, 48, "bonds", "connectivity/bonds");
    std::vector<int32_t> pairs(dims[0] * 2), types(dims[0], 0);
    if (dims[0] > 0)
      h5::check(H5Dread(d, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, pairs.data()),
                "cannot read connectivity/bonds");
    if (h5::exists(file, "connectivity/bond_type")) {
      Handle t(
          h5::check_id(H5Dopen2(file, "connectivity/bond_type", H5P_DEFAULT), "cannot open connectivity/bond_type"));
      const auto td = h5::dims_of(t);
      if (td.size() != 1 || td[0] != dims[0]) throw Fail("connectivity/bond_type does not match connectivity/bonds");
      if (dims[0] > 0)
        h5::check(H5Dread(t, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, types.data()),
                  "cannot read connectivity/bond_type");
    }
    for (size_t b = 0; b < dims[0]; ++b) {
      const int i = pairs[2 * b], j = pairs[2 * b + 1];
      if (i < 0 || j < 0 || static_cast<size_t>(i) >= n || static_cast<size_t>(j) >= n || i == j || types[b] < 0)
        throw Fail("bond " + std::to_string(b) + " (" + std::to_string(i) + ", " + std::to_string(j) + ", type " +
                   std::to_string(types[b]) + ") is not valid for " + std::to_string(n) + " particles");
      topology.bonds.push_back({i, j, types[b]});
    }
  }
}

// connectivity/angles, dihedrals, impropers (as pairmd writes them), checked against n.
void read_bonded(hid_t file, size_t n, Topology& topology) {
  auto read = [&](const std::string& name, size_t width, auto add) {
    const std::string path = "connectivity/" + name;
    if (!h5::exists(file, path)) return;
    Handle d(h5::check_id(H5Dopen2(file, path.c_str(), H5P_DEFAULT), "cannot open " + path));
    require_filters(d, path);
    const auto dims = h5::dims_of(d);
    if (dims.size() != 2 || dims[1] != width)
      throw Fail(path + " is not shaped [" + name + ", " + std::to_string(width) + "]");
    require_room(static_cast<double>(dims[0]), 2147483647.0, 8.0 * (width + 1), name, path);
    std::vector<int32_t> idx(dims[0] * width), types(dims[0], 0);
    if (dims[0] > 0)
      h5::check(H5Dread(d, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, idx.data()), "cannot read " + path);
    const std::string type_path = path.substr(0, path.size() - 1) + "_type";  // connectivity/angle_type
    if (h5::exists(file, type_path)) {
      Handle t(h5::check_id(H5Dopen2(file, type_path.c_str(), H5P_DEFAULT), "cannot open " + type_path));
      const auto td = h5::dims_of(t);
      if (td.size() != 1 || td[0] != dims[0]) throw Fail(type_path + " does not match " + path);
      if (dims[0] > 0)
        h5::check(H5Dread(t, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, types.data()),
                  "cannot read " + type_path);
    }
    for (size_t k = 0; k < dims[0]; ++k) {
      const int32_t* a = &idx[k * width];
      bool ok = types[k] >= 0;
      for (size_t q = 0; q < width; ++q) {
        ok = ok && a[q] >= 0 && static_cast<size_t>(a[q]) < n;
        for (size_t r = 0; r < q; ++r) ok = ok && a[r] != a[q];
      }
      if (!ok) throw Fail(path + " row " + std::to_string(k) + " is not valid for " + std::to_string(n) + " particles");
      add(a, types[k]);
    }
  };
  read("angles", 3, [&](const int32_t* a, int t) { topology.angles.push_back({a[0], a[1], a[2], t}); });
  read("dihedrals", 4, [&](const int32_t* a, int t) { topology.dihedrals.push_back({a[0], a[1], a[2], a[3], t}); });
  read("impropers", 4, [&](const int32_t* a, int t) { topology.impropers.push_back({a[0], a[1], a[2], a[3], t}); });
}

H5mdFrame read_frame(hid_t file, int64_t frame) {
  H5mdFrame out;
  FrameSource src;
  open_positions(file, frame, src, out);
  read_box(src, out.state);
  read_particles(src, out);
  check_and_wrap(out.state, out.frame);
  read_bonds(file, src.n, out.topology);
  read_bonded(file, src.n, out.topology);
  return out;
}

}  // namespace

namespace {

// Reads in this process without the library lock: for the reading child of read_h5md_frame,
// which has one thread (and a copy of the lock as the parent held it at fork).
H5mdFrame read_unlocked(const std::string& path, int64_t frame) {
  h5::quiet();
  struct stat st;
  if (stat(path.c_str(), &st) != 0) throw std::runtime_error("cannot open '" + path + "': " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw std::runtime_error("'" + path + "' is not a regular file");
  const htri_t is = H5Fis_hdf5(path.c_str());
  if (is <= 0) {
    H5Eclear2(H5E_DEFAULT);
    throw std::runtime_error("'" + path + "' is not an HDF5 file");
  }
  Handle fapl(H5Pcreate(H5P_FILE_ACCESS));
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl);
  if (f < 0) throw std::runtime_error("cannot open '" + path + "' as HDF5 (" + h5::last_error() + ")");
  Handle file(f);
  try {
    return read_frame(file, frame);
  } catch (const std::exception& e) {
    throw std::runtime_error("'" + path + "': " + e.what());
  }
}

}  // namespace

std::vector<int64_t> h5md_position_steps(const std::string& path) {
  h5::LibraryLock lock(h5::library_mutex());
  h5::quiet();
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0) throw std::runtime_error("cannot open '" + path + "' as HDF5 (" + h5::last_error() + ")");
  Handle file(f);
  const std::string where = "particles/all/position";
  if (!h5::exists(file, where)) throw std::runtime_error("'" + path + "' has no " + where);
  Handle g = h5::open_group(file, where);
  Handle v(h5::check_id(H5Dopen2(g, "value", H5P_DEFAULT), "cannot open " + where + "/value"));
  const auto dims = h5::dims_of(v);
  if (dims.empty()) throw std::runtime_error("'" + path + "': " + where + "/value has no frames");
  try {
    return read_steps(g, dims[0], where);
  } catch (const std::exception& e) {
    throw std::runtime_error("'" + path + "': " + e.what());
  }
}

// Reads in this process (the HDF5 library may crash on a damaged file).
H5mdFrame read_h5md_frame_inprocess(const std::string& path, int64_t frame) {
  h5::LibraryLock lock(h5::library_mutex());
  return read_unlocked(path, frame);
}

namespace {

std::string encode(const H5mdFrame& f) {
  ByteWriter o;
  o.put_state(f.state);
  o.put(f.time);
  o.put(f.frame);
  o.put_vec(f.topology.bonds);
  o.put_vec(f.topology.angles);
  o.put_vec(f.topology.dihedrals);
  o.put_vec(f.topology.impropers);
  o.put<int32_t>(f.has_velocity ? 1 : 0);
  o.put_str(f.length_unit);
  o.put_str(f.velocity_unit);
  o.put_str(f.time_unit);
  return o.b;
}

H5mdFrame decode(const std::string& bytes) {
  ByteReader in{bytes};
  H5mdFrame f;
  f.state = in.get_state();
  f.time = in.get<double>();
  f.frame = in.get<int64_t>();
  f.topology.bonds = in.get_vec<Bond>();
  f.topology.angles = in.get_vec<Angle>();
  f.topology.dihedrals = in.get_vec<Dihedral>();
  f.topology.impropers = in.get_vec<Dihedral>();
  f.has_velocity = in.get<int32_t>() != 0;
  f.length_unit = in.get_str();
  f.velocity_unit = in.get_str();
  f.time_unit = in.get_str();
  return f;
}

}  // namespace

H5mdFrame read_h5md_frame(const std::string& path, int64_t frame) {
  const std::optional<std::string> bytes =
      read_in_child("'" + path + "'", [&] { return encode(read_unlocked(path, frame)); });
  if (!bytes) return read_h5md_frame_inprocess(path, frame);
  try {
    return decode(*bytes);
  } catch (const std::exception& e) {
    throw std::runtime_error("'" + path + "': " + e.what());
  }
}

}  // namespace pairmd
