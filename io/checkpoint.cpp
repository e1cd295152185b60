#include "io/checkpoint.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "base/text.h"
#include "base/version.h"
#include "engine/config.h"
#include "engine/resources.h"
#include "io/child_read.h"
#include "io/hdf5_util.h"
#include "io/output_files.h"
#include "io/start_readers.h"

namespace pairmd {

using h5::Handle;

namespace {

// topology/angles [m, 4] (i, j, k, type), dihedrals and impropers [m, 5]; written only when
// there are some (older checkpoints and runs without them have none).
void write_bonded_topology(hid_t topo, const Topology& t) {
  auto write = [&](const char* name, size_t count, size_t width, auto row) {
    if (count == 0) return;
    std::vector<int32_t> v;
    v.reserve(count * width);
    for (size_t k = 0; k < count; ++k) row(k, v);
    h5::write_dataset(topo, name, H5T_STD_I32LE, H5T_NATIVE_INT32, {count, width}, v.data());
  };
  write("angles", t.angles.size(), 4, [&](size_t k, std::vector<int32_t>& v) {
    const Angle& a = t.angles[k];
    v.insert(v.end(), {a.i, a.j, a.k, a.type});
  });
  auto quad = [](const std::vector<Dihedral>& q) {
    return [&q](size_t k, std::vector<int32_t>& v) { v.insert(v.end(), {q[k].i, q[k].j, q[k].k, q[k].l, q[k].type}); };
  };
  write("dihedrals", t.dihedrals.size(), 5, quad(t.dihedrals));
  write("impropers", t.impropers.size(), 5, quad(t.impropers));
}

void read_bonded_topology(hid_t topo, int64_t n, Topology& t) {
  auto read = [&](const char* name, size_t width, auto add) {
    if (!h5::exists(topo, name)) return;
    Handle d(h5::check_id(H5Dopen2(topo, name, H5P_DEFAULT), std::string("cannot open topology/") + name));
    const auto dims = h5::dims_of(d);
    if (dims.size() != 2 || dims[1] != width)
      throw std::runtime_error(std::string("topology/") + name + " is not shaped [" + name + ", " +
                               std::to_string(width) + "]");
    const std::string room = room_for(static_cast<double>(dims[0]), 2147483647.0, 8.0 * width, name);
    if (!room.empty()) throw std::runtime_error(std::string("topology/") + name + ": " + room);
    std::vector<int32_t> v(dims[0] * width);
    if (!v.empty())
      h5::check(H5Dread(d, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()),
                std::string("cannot read ") + name);
    for (size_t k = 0; k < dims[0]; ++k) {
      const int32_t* r = &v[k * width];
      for (size_t q = 0; q < width - 1; ++q) {
        bool ok = r[q] >= 0 && r[q] < n;
        for (size_t p = 0; p < q; ++p) ok = ok && r[p] != r[q];
        if (!ok) throw std::runtime_error(std::string(name) + " " + std::to_string(k) + " is invalid");
      }
      if (r[width - 1] < 0) throw std::runtime_error(std::string(name) + " " + std::to_string(k) + " is invalid");
      add(r);
    }
  };
  read("angles", 4, [&](const int32_t* r) { t.angles.push_back({r[0], r[1], r[2], r[3]}); });
  read("dihedrals", 5, [&](const int32_t* r) { t.dihedrals.push_back({r[0], r[1], r[2], r[3], r[4]}); });
  read("impropers", 5, [&](const int32_t* r) { t.impropers.push_back({r[0], r[1], r[2], r[3], r[4]}); });
}

constexpr char kMagic[8] = {'P', 'M', 'D', 'C', 'K', 'P', 'T', '1'};
constexpr size_t kTrailer = 24;  // magic, payload length, FNV-1a 64 of the payload

uint64_t fnv1a(const unsigned char* p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 1099511628211ull;
  }
  return h;
}

std::string errno_text() { return std::strerror(errno); }

std::vector<unsigned char> read_all(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) throw std::runtime_error("cannot open '" + path + "': " + errno_text());
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw std::runtime_error("'" + path + "' is not a regular file");
  }
  std::vector<unsigned char> buf(static_cast<size_t>(st.st_size));
  size_t got = 0;
  while (got < buf.size()) {
    const ssize_t r = ::read(fd, buf.data() + got, buf.size() - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      ::close(fd);
      throw std::runtime_error("cannot read '" + path + "': " + (r < 0 ? errno_text() : "unexpected end"));
    }
    got += static_cast<size_t>(r);
  }
  ::close(fd);
  return buf;
}

void write_all(int fd, const void* data, size_t n, const std::string& path) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) throw std::runtime_error("cannot write '" + path + "': " + errno_text());
    p += w;
    n -= static_cast<size_t>(w);
  }
}

template <typename T>
void attr(hid_t obj, const char* name, hid_t type, T value) {
  h5::write_attr<T>(obj, name, type, {value});
}

template <typename T>
T read_attr(hid_t obj, const char* name, hid_t mem_type) {
  if (H5Aexists(obj, name) <= 0) throw std::runtime_error(std::string("attribute ") + name + " is missing");
  Handle a(h5::check_id(H5Aopen(obj, name, H5P_DEFAULT), std::string("cannot open attribute ") + name));
  Handle sp(H5Aget_space(a));
  if (H5Sget_simple_extent_npoints(sp) != 1)
    throw std::runtime_error(std::string("attribute ") + name + " is not a scalar");
  T v{};
  h5::check(H5Aread(a, mem_type, &v), std::string("cannot read attribute ") + name);
  return v;
}

std::vector<double> read_attr3(hid_t obj, const char* name) {
  if (H5Aexists(obj, name) <= 0) throw std::runtime_error(std::string("attribute ") + name + " is missing");
  Handle a(h5::check_id(H5Aopen(obj, name, H5P_DEFAULT), std::string("cannot open attribute ") + name));
  Handle sp(H5Aget_space(a));
  if (H5Sget_simple_extent_npoints(sp) != 3)
    throw std::runtime_error(std::string("attribute ") + name + " is not 3 numbers");
  std::vector<double> v(3);
  h5::check(H5Aread(a, H5T_NATIVE_DOUBLE, v.data()), std::string("cannot read attribute ") + name);
  return v;
}

std::string read_string_ds(hid_t loc, const char* name) {
  if (!h5::exists(loc, name)) throw std::runtime_error(std::string(name) + " is missing");
  Handle d(h5::check_id(H5Dopen2(loc, name, H5P_DEFAULT), std::string("cannot open ") + name));
  return h5::read_string(d, false, name);
}

// Reads dataset `name` as `count` values of `mem_type`, checking its size.
template <typename T>
std::vector<T> read_array(hid_t loc, const char* name, size_t count, hid_t mem_type) {
  if (!h5::exists(loc, name)) throw std::runtime_error(std::string(name) + " is missing");
  Handle d(h5::check_id(H5Dopen2(loc, name, H5P_DEFAULT), std::string("cannot open ") + name));
  size_t total = 1;
  for (hsize_t x : h5::dims_of(d)) total *= x;
  if (total != count)
    throw std::runtime_error(std::string(name) + " holds " + std::to_string(total) + " values, expected " +
                             std::to_string(count));
  std::vector<T> v(count);
  if (count > 0)
    h5::check(H5Dread(d, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()), std::string("cannot read ") + name);
  return v;
}

void write_pulling(hid_t run, const PullSettings& p) {
  Handle g = h5::create_group(run, "pulling");
  attr<int32_t>(g, "mode", H5T_STD_I32LE, static_cast<int32_t>(p.mode));
  attr<int64_t>(g, "pulled", H5T_STD_I64LE, p.pulled);
  attr<int64_t>(g, "tethered", H5T_STD_I64LE, p.tethered);
  h5::write_attr<double>(g, "anchor", H5T_IEEE_F64LE, {p.anchor.x, p.anchor.y, p.anchor.z});
  h5::write_attr<double>(g, "direction", H5T_IEEE_F64LE, {p.direction.x, p.direction.y, p.direction.z});
  h5::write_attr<double>(g, "tether", H5T_IEEE_F64LE, {p.tether.x, p.tether.y, p.tether.z});
}

// The points of the run's pulling (run/pulling); the rest of its settings come from the config.
PullSettings read_pulling(hid_t run, int64_t n) {
  PullSettings p;
  Handle g = h5::open_group(run, "pulling");
  const int32_t mode = read_attr<int32_t>(g, "mode", H5T_NATIVE_INT32);
  if (mode != static_cast<int32_t>(PullMode::Ramp) && mode != static_cast<int32_t>(PullMode::Constant))
    throw std::runtime_error("run/pulling has an unknown mode");
  p.mode = static_cast<PullMode>(mode);
  p.pulled = read_attr<int64_t>(g, "pulled", H5T_NATIVE_INT64);
  p.tethered = read_attr<int64_t>(g, "tethered", H5T_NATIVE_INT64);
  if (p.pulled < 0 || p.pulled >= n || p.tethered < -1 || p.tethered >= n)
    throw std::runtime_error("run/pulling names particles the state does not have");
  const auto a = read_attr3(g, "anchor"), d = read_attr3(g, "direction"), t = read_attr3(g, "tether");
  for (int k = 0; k < 3; ++k)
    if (!std::isfinite(a[k]) || !std::isfinite(d[k]) || !std::isfinite(t[k]))
      throw std::runtime_error("run/pulling holds a non-finite point");
  p.anchor = {a[0], a[1], a[2]};
  p.direction = {d[0], d[1], d[2]};
  p.tether = {t[0], t[1], t[2]};
  return p;
}

void write_file(const std::string& tmp, const SystemState& s, const Topology& topology, const CheckpointRun& r) {
  h5::quiet();
  const hid_t fid = H5Fcreate(tmp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  if (fid < 0) throw std::runtime_error("cannot create '" + tmp + "' (" + h5::last_error() + ")");
  Handle f(fid);
  const hsize_t n = s.size();
  {
    Handle root = h5::open_group(f, "/");
    h5::write_string_attr(root, "format", "pairmd checkpoint");
    attr<int32_t>(root, "format_version", H5T_STD_I32LE, 1);
    h5::write_string_attr(root, "pairmd_version", PAIRMD_VERSION);
  }
  Handle st = h5::create_group(f, "state");
  attr<int64_t>(st, "step", H5T_STD_I64LE, s.step);
  attr<int64_t>(st, "particles", H5T_STD_I64LE, static_cast<int64_t>(n));
  h5::write_attr<double>(st, "box_lo", H5T_IEEE_F64LE, {s.box.lo.x, s.box.lo.y, s.box.lo.z});
  h5::write_attr<double>(st, "box_L", H5T_IEEE_F64LE, {s.box.L.x, s.box.L.y, s.box.L.z});
  attr<int32_t>(st, "periodic", H5T_STD_I32LE, s.box.periodic ? 1 : 0);
  h5::write_dataset(st, "position", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, {n, 3}, s.position.data());
  h5::write_dataset(st, "velocity", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, {n, 3}, s.velocity.data());
  h5::write_dataset(st, "image", H5T_STD_I32LE, H5T_NATIVE_INT32, {n, 3}, s.image.data());
  std::vector<int32_t> type(s.type.begin(), s.type.end());
  h5::write_dataset(st, "type", H5T_STD_I32LE, H5T_NATIVE_INT32, {n}, type.data());
  h5::write_dataset(st, "mass", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, {n}, s.mass.data());
  h5::write_dataset(st, "charge", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, {n}, s.charge.data());
  h5::write_string_array_attr(st, "type_names", s.type_names.empty() ? std::vector<std::string>{} : s.type_names);
  attr<int64_t>(st, "ntypes", H5T_STD_I64LE, static_cast<int64_t>(s.type_names.size()));

  Handle topo = h5::create_group(f, "topology");
  std::vector<int32_t> bonds;
  for (const Bond& b : topology.bonds) {
    bonds.push_back(b.i);
    bonds.push_back(b.j);
    bonds.push_back(b.type);
  }
  h5::write_dataset(topo, "bonds", H5T_STD_I32LE, H5T_NATIVE_INT32, {topology.bonds.size(), 3}, bonds.data());
  write_bonded_topology(topo, topology);

  Handle rng = h5::create_group(f, "rng");
  h5::write_string_attr(rng, "generator", "Philox4x32-10 keyed by (seed, step, particle tag); the counter is the step");
  attr<uint64_t>(rng, "seed", H5T_STD_U64LE, r.seed);
  attr<int64_t>(rng, "step", H5T_STD_I64LE, s.step);

  Handle run = h5::create_group(f, "run");
  attr<int64_t>(run, "first_step", H5T_STD_I64LE, r.first_step);
  attr<int64_t>(run, "last_step", H5T_STD_I64LE, r.last_step);
  h5::write_string_attr(run, "prefix", r.prefix);
  h5::write_string_attr(run, "run_id", r.run_id);
  attr<double>(run, "dt", H5T_IEEE_F64LE, r.dt);
  // The unit of dt and of the velocities: `real` time was ps before it became LAMMPS's fs.
  h5::write_string_attr(run, "time_unit", r.time_unit);
  h5::write_string_attr(run, "integrator", r.integrator);
  h5::write_string_attr(run, "backend", r.backend);
  h5::write_string_dataset(run, "config", r.config_text);
  h5::write_string_dataset(run, "config_path", r.config_path);
  std::string ov;
  for (const std::string& spec : r.overrides) ov += spec + "\n";
  h5::write_string_dataset(run, "overrides", ov);
  if (!r.ensemble.empty()) h5::write_string_dataset(run, "ensemble", r.ensemble);
  if (r.pulling.active()) write_pulling(run, r.pulling);
  h5::check(H5Fflush(f, H5F_SCOPE_LOCAL), "cannot flush '" + tmp + "'");
  f.reset();
}

}  // namespace

void write_checkpoint(const std::string& path, const SystemState& state, const Topology& topology,
                      const CheckpointRun& run) {
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  bool created = false;
  try {
    // Created exclusively first (HDF5 would follow a link of that name and truncate its target).
    ::close(create_new_file(tmp));
    created = true;
    {
      // HDF5's lock for HDF5's calls only: the checksum, the syncs and the rename below take
      // none, so the replicas of one process sync their checkpoints side by side (64 replicas
      // on one GPU waited for each other's fsync, 2 ms a replica on the H100 machine).
      h5::LibraryLock lock(h5::library_mutex());
      write_file(tmp, state, topology, run);
    }
    // Trailer: lets the reader reject truncated or damaged files before HDF5 parses them
    // (HDF5 ignores bytes past its end-of-file address).
    std::vector<unsigned char> payload = read_all(tmp);
    const uint64_t len = payload.size(), hash = fnv1a(payload.data(), payload.size());
    unsigned char trailer[kTrailer];
    std::memcpy(trailer, kMagic, 8);
    for (int k = 0; k < 8; ++k) {
      trailer[8 + k] = static_cast<unsigned char>(len >> (8 * k));
      trailer[16 + k] = static_cast<unsigned char>(hash >> (8 * k));
    }
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_APPEND);
    if (fd < 0) throw std::runtime_error("cannot open '" + tmp + "': " + errno_text());
    try {
      write_all(fd, trailer, kTrailer, tmp);
    } catch (...) {
      ::close(fd);
      throw;
    }
    if (fsync(fd) != 0) {
      const std::string e = errno_text();
      ::close(fd);
      throw std::runtime_error("cannot sync '" + tmp + "': " + e);
    }
    if (::close(fd) != 0) throw std::runtime_error("cannot close '" + tmp + "': " + errno_text());
    if (std::rename(tmp.c_str(), path.c_str()) != 0)
      throw std::runtime_error("cannot rename '" + tmp + "' to '" + path + "': " + errno_text());
  } catch (const std::runtime_error& e) {
    if (created) ::unlink(tmp.c_str());
    throw std::runtime_error(std::string("writing checkpoint '") + path + "' failed: " + e.what() +
                             " (an earlier checkpoint there is unchanged)");
  }
  // Make the rename durable too.
  const size_t slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (dfd >= 0) {
    fsync(dfd);
    ::close(dfd);
  }
}

namespace {

// Checks the trailer (magic, length, checksum) of a checkpoint's bytes.
void check_trailer(const std::vector<unsigned char>& buf) {
  if (buf.size() < kTrailer || std::memcmp(buf.data() + buf.size() - kTrailer, kMagic, 8) != 0)
    throw std::runtime_error("not a pairmd checkpoint, or truncated (no end marker)");
  uint64_t len = 0, hash = 0;
  for (int k = 0; k < 8; ++k) {
    len |= uint64_t(buf[buf.size() - kTrailer + 8 + k]) << (8 * k);
    hash |= uint64_t(buf[buf.size() - kTrailer + 16 + k]) << (8 * k);
  }
  if (len != buf.size() - kTrailer)
    throw std::runtime_error("truncated or extended (length does not match its end marker)");
  if (fnv1a(buf.data(), len) != hash) throw std::runtime_error("corrupted (checksum mismatch)");
}

// A string attribute of run/ that may be absent ("" then).
std::string optional_string_attr(hid_t run, const char* name) {
  if (H5Aexists(run, name) <= 0) return "";
  Handle a(h5::check_id(H5Aopen(run, name, H5P_DEFAULT), std::string("cannot open run/") + name));
  return h5::read_string(a, true, name);
}

// The root's format attributes; the version of pairmd that wrote the file.
void read_format(hid_t f, Checkpoint& ck) {
  Handle root = h5::open_group(f, "/");
  if (H5Aexists(root, "format") <= 0) throw std::runtime_error("not a pairmd checkpoint (no format attribute)");
  {
    Handle a(H5Aopen(root, "format", H5P_DEFAULT));
    if (h5::read_string(a, true, "format") != "pairmd checkpoint") throw std::runtime_error("not a pairmd checkpoint");
  }
  if (read_attr<int32_t>(root, "format_version", H5T_NATIVE_INT32) != 1)
    throw std::runtime_error("written in a checkpoint format this pairmd does not read");
  Handle a(H5Aopen(root, "pairmd_version", H5P_DEFAULT));
  if (a.valid()) ck.pairmd_version = h5::read_string(a, true, "pairmd_version");
}

// state/: the step, the box and the particle count.
int64_t read_box(hid_t st, SystemState& s) {
  s.step = read_attr<int64_t>(st, "step", H5T_NATIVE_INT64);
  const int64_t n = read_attr<int64_t>(st, "particles", H5T_NATIVE_INT64);
  if (n < 0) throw std::runtime_error("state/particles is " + std::to_string(n));
  // The arrays as read and as state, before they are allocated.
  const std::string room = room_for(static_cast<double>(n), static_cast<double>(kMaxParticles), 200, "particles");
  if (!room.empty()) throw std::runtime_error("state/particles: " + room);
  const auto lo = read_attr3(st, "box_lo"), L = read_attr3(st, "box_L");
  s.box.lo = {lo[0], lo[1], lo[2]};
  s.box.L = {L[0], L[1], L[2]};
  s.box.periodic = read_attr<int32_t>(st, "periodic", H5T_NATIVE_INT32) != 0;
  const std::string problem = box_problem(s.box.lo, s.box.L);
  if (!problem.empty()) throw std::runtime_error(problem);
  return n;
}

// state/: the n particles and the type names, each particle checked.
void read_particles(hid_t st, size_t un, SystemState& s) {
  const auto x = read_array<double>(st, "position", 3 * un, H5T_NATIVE_DOUBLE);
  const auto v = read_array<double>(st, "velocity", 3 * un, H5T_NATIVE_DOUBLE);
  const auto im = read_array<int32_t>(st, "image", 3 * un, H5T_NATIVE_INT32);
  const auto ty = read_array<int32_t>(st, "type", un, H5T_NATIVE_INT32);
  s.mass = read_array<double>(st, "mass", un, H5T_NATIVE_DOUBLE);
  s.charge = read_array<double>(st, "charge", un, H5T_NATIVE_DOUBLE);
  const int64_t ntypes = read_attr<int64_t>(st, "ntypes", H5T_NATIVE_INT64);
  if (ntypes < 0 || ntypes > 100000) throw std::runtime_error("implausible type count");
  s.type_names = h5::read_string_array_attr(st, "type_names", static_cast<size_t>(ntypes));
  if (static_cast<int64_t>(s.type_names.size()) != ntypes) throw std::runtime_error("type_names do not match ntypes");
  s.position.resize(un);
  s.velocity.resize(un);
  s.image.resize(un);
  s.type.resize(un);
  for (size_t i = 0; i < un; ++i) {
    s.position[i] = {x[3 * i], x[3 * i + 1], x[3 * i + 2]};
    s.velocity[i] = {v[3 * i], v[3 * i + 1], v[3 * i + 2]};
    s.image[i] = {im[3 * i], im[3 * i + 1], im[3 * i + 2]};
    s.type[i] = ty[i];
    auto fail = [&](const std::string& what) {
      throw std::runtime_error("particle " + std::to_string(i) + ": " + what);
    };
    if (ty[i] < 0 || ty[i] >= ntypes)
      fail("type " + std::to_string(ty[i]) + " is not one of its " + std::to_string(ntypes));
    if (!(s.mass[i] > 0) || !std::isfinite(s.mass[i]))
      fail("the mass " + number_text(s.mass[i]) + " is not a number > 0");
    if (!std::isfinite(s.charge[i])) fail("the charge " + number_text(s.charge[i]) + " is not finite");
    const std::string problem = position_problem(s.position[i], s.box);
    if (!problem.empty()) fail(problem);
    // A checkpoint's positions are in its box; a damaged one's are put there (the backends'
    // cell lists take nothing else). A no-op for every position pairmd writes.
    if (s.box.periodic && !wrap_into_box(s.position[i], s.image[i], s.box))
      fail("its image and the box crossings of its position overflow a 32-bit image counter");
    const Vec3d& u = s.velocity[i];
    if (!(std::isfinite(u.x) && std::isfinite(u.y) && std::isfinite(u.z)))
      fail("the velocity (" + number_text(u.x) + ", " + number_text(u.y) + ", " + number_text(u.z) + ") is not finite");
  }
}

void read_topology(hid_t f, int64_t n, Topology& topology) {
  Handle topo = h5::open_group(f, "topology");
  Handle d(h5::check_id(H5Dopen2(topo, "bonds", H5P_DEFAULT), "cannot open topology/bonds"));
  const auto dims = h5::dims_of(d);
  if (dims.size() != 2 || dims[1] != 3) throw std::runtime_error("topology/bonds is not shaped [bonds, 3]");
  const std::string room = room_for(static_cast<double>(dims[0]), 2147483647.0, 48, "bonds");
  if (!room.empty()) throw std::runtime_error("topology/bonds: " + room);
  std::vector<int32_t> b(dims[0] * 3);
  if (!b.empty()) h5::check(H5Dread(d, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, b.data()), "cannot read bonds");
  for (size_t k = 0; k < dims[0]; ++k) {
    const Bond bond{b[3 * k], b[3 * k + 1], b[3 * k + 2]};
    if (bond.i < 0 || bond.j < 0 || bond.i >= n || bond.j >= n || bond.i == bond.j || bond.type < 0)
      throw std::runtime_error("bond " + std::to_string(k) + " is invalid");
    topology.bonds.push_back(bond);
  }
  read_bonded_topology(topo, n, topology);
}

// rng/ and run/'s attributes: seed, steps, prefix, run id, time step and its unit, integrator,
// backend.
void read_run_attrs(hid_t f, Checkpoint& ck) {
  Handle rng = h5::open_group(f, "rng");
  ck.seed = read_attr<uint64_t>(rng, "seed", H5T_NATIVE_UINT64);
  if (read_attr<int64_t>(rng, "step", H5T_NATIVE_INT64) != ck.state.step)
    throw std::runtime_error("rng step differs from the state's");
  Handle run = h5::open_group(f, "run");
  ck.first_step = read_attr<int64_t>(run, "first_step", H5T_NATIVE_INT64);
  // Written since the restart continues the same run; older checkpoints lack them.
  if (H5Aexists(run, "last_step") > 0) ck.last_step = read_attr<int64_t>(run, "last_step", H5T_NATIVE_INT64);
  ck.prefix = optional_string_attr(run, "prefix");
  ck.run_id = optional_string_attr(run, "run_id");
  ck.dt = read_attr<double>(run, "dt", H5T_NATIVE_DOUBLE);
  ck.time_unit = optional_string_attr(run, "time_unit");
  if (!(std::isfinite(ck.dt) && ck.dt > 0)) throw std::runtime_error("its time step is not a number > 0");
  if (ck.first_step < 0 || ck.first_step > ck.state.step)
    throw std::runtime_error("its run's first step is not before its step");
  Handle a(h5::check_id(H5Aopen(run, "integrator", H5P_DEFAULT), "cannot open run/integrator"));
  ck.integrator = h5::read_string(a, true, "integrator");
  Handle b(h5::check_id(H5Aopen(run, "backend", H5P_DEFAULT), "cannot open run/backend"));
  ck.backend = h5::read_string(b, true, "backend");
}

// run/'s texts: the config, its path, the ensemble and the overrides (one per line).
void read_run_texts(hid_t f, Checkpoint& ck) {
  Handle run = h5::open_group(f, "run");
  ck.config_text = read_string_ds(run, "config");
  if (H5Lexists(run, "ensemble", H5P_DEFAULT) > 0) ck.ensemble = read_string_ds(run, "ensemble");
  if (H5Lexists(run, "pulling", H5P_DEFAULT) > 0) ck.pulling = read_pulling(run, static_cast<int64_t>(ck.state.size()));
  ck.config_path = read_string_ds(run, "config_path");
  const std::string ov = read_string_ds(run, "overrides");
  size_t start = 0;
  while (start < ov.size()) {
    const size_t nl = ov.find('\n', start);
    const std::string line = ov.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
    if (!line.empty()) ck.overrides.push_back(override_spec(line));
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
}

// Reads in this process without the library lock: for the reading child of read_checkpoint,
// which has one thread (and a copy of the lock as the parent held it at fork, owned by a thread
// the child does not have), or for a caller that holds the lock.
Checkpoint read_unlocked(const std::string& path) {
  h5::quiet();
  auto fail = [&](const std::string& what) -> std::runtime_error {
    return std::runtime_error("checkpoint '" + path + "': " + what);
  };
  const std::vector<unsigned char> buf = read_all(path);
  try {
    check_trailer(buf);
  } catch (const std::runtime_error& e) {
    throw fail(e.what());
  }
  const hid_t fid = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (fid < 0) throw fail("cannot open as HDF5 (" + h5::last_error() + ")");
  Handle f(fid);
  Checkpoint ck;
  try {
    read_format(f, ck);
    Handle st = h5::open_group(f, "state");
    const int64_t n = read_box(st, ck.state);
    read_particles(st, static_cast<size_t>(n), ck.state);
    read_topology(f, n, ck.topology);
    read_run_attrs(f, ck);
    read_run_texts(f, ck);
  } catch (const std::runtime_error& e) {
    throw fail(e.what());
  }
  return ck;
}

std::string encode(const Checkpoint& ck) {
  ByteWriter o;
  o.put_state(ck.state);
  o.put_vec(ck.topology.bonds);
  o.put_vec(ck.topology.angles);
  o.put_vec(ck.topology.dihedrals);
  o.put_vec(ck.topology.impropers);
  for (const int64_t v : {ck.first_step, ck.last_step}) o.put(v);
  o.put(ck.seed);
  o.put(ck.dt);
  for (const std::string* t : {&ck.prefix, &ck.run_id, &ck.integrator, &ck.backend, &ck.config_text, &ck.config_path,
                               &ck.pairmd_version, &ck.time_unit, &ck.ensemble})
    o.put_str(*t);
  o.put<uint64_t>(ck.overrides.size());
  for (const std::string& ov : ck.overrides) o.put_str(ov);
  o.put(ck.pulling);  // plain data: the same program reads it back
  return o.b;
}

Checkpoint decode(const std::string& bytes) {
  ByteReader in{bytes};
  Checkpoint ck;
  ck.state = in.get_state();
  ck.topology.bonds = in.get_vec<Bond>();
  ck.topology.angles = in.get_vec<Angle>();
  ck.topology.dihedrals = in.get_vec<Dihedral>();
  ck.topology.impropers = in.get_vec<Dihedral>();
  ck.first_step = in.get<int64_t>();
  ck.last_step = in.get<int64_t>();
  ck.seed = in.get<uint64_t>();
  ck.dt = in.get<double>();
  for (std::string* t : {&ck.prefix, &ck.run_id, &ck.integrator, &ck.backend, &ck.config_text, &ck.config_path,
                         &ck.pairmd_version, &ck.time_unit, &ck.ensemble})
    *t = in.get_str();
  const uint64_t n = in.get<uint64_t>();
  for (uint64_t k = 0; k < n; ++k) ck.overrides.push_back(in.get_str());
  ck.pulling = in.get<PullSettings>();
  return ck;
}

}  // namespace

Checkpoint read_checkpoint(const std::string& path) {
  // HDF5 may crash on a damaged file that still carries a valid checksum (written so on purpose,
  // or by a faulty writer): read in a child, as H5MD trajectories are.
  const std::optional<std::string> bytes =
      read_in_child("checkpoint '" + path + "'", [&] { return encode(read_unlocked(path)); });
  if (!bytes) {
    h5::LibraryLock lock(h5::library_mutex());
    return read_unlocked(path);
  }
  try {
    return decode(*bytes);
  } catch (const std::exception& e) {
    throw std::runtime_error("checkpoint '" + path + "': " + e.what());
  }
}

}  // namespace pairmd
