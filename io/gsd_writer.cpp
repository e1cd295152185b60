#include "io/gsd_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "base/observables.h"
#include "base/version.h"
#include "io/gsd_util.h"

namespace pairmd {

namespace {

// HOOMD schema version of the frames written (gsd.hoomd 2.x and 5.x read 1.x).
constexpr unsigned kSchemaMajor = 1, kSchemaMinor = 4;

// The diameter OVITO and HOOMD draw a particle of type t with: sigma of the first LJ/WCA term's
// (t, t) pair, else HOOMD's default 1.
float type_diameter(const RunConfig& cfg, int t) {
  const ForceField& ff = cfg.model.force_field;
  for (const PairTerm& term : ff.pair_terms) {
    if (term.kind != PairKind::LennardJones && term.kind != PairKind::WCA) continue;
    const PairCoeffs& c = term.coeffs[t * ff.ntypes + t];
    if (c.epsilon > 0) return static_cast<float>(c.sigma);
  }
  return 1.0f;
}

void sync_directory_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd >= 0) {
    fsync(fd);
    ::close(fd);
  }
}

// Copies frames [0, keep) of the open (read-only) `in` into a new file `out`, chunk by chunk.
void copy_frames(gsd_handle& in, uint64_t keep, const std::string& out) {
  gsd_handle h{};
  gsdio::check(gsd_create_and_open(&h, out.c_str(), in.header.application, in.header.schema, in.header.schema_version,
                                   GSD_OPEN_APPEND, 1),
               "cannot create '" + out + "'");
  std::vector<std::string> names;
  for (const char* n = gsd_find_matching_chunk_name(&in, "", nullptr); n; n = gsd_find_matching_chunk_name(&in, "", n))
    names.emplace_back(n);
  std::vector<char> buf;
  try {
    for (uint64_t f = 0; f < keep; ++f) {
      for (const std::string& n : names) {
        const gsd_index_entry* e = gsd_find_chunk(&in, f, n.c_str());
        if (!e) continue;
        buf.resize(std::max<size_t>(1, e->N * e->M * gsd_sizeof_type(static_cast<gsd_type>(e->type))));
        gsdio::check(gsd_read_chunk(&in, buf.data(), e), "cannot read chunk " + n);
        gsdio::check(gsd_write_chunk(&h, n.c_str(), static_cast<gsd_type>(e->type), e->N, e->M, 0, buf.data()),
                     "cannot write chunk " + n + " to '" + out + "'");
      }
      gsdio::check(gsd_end_frame(&h), "cannot end a frame of '" + out + "'");
    }
    gsdio::check(gsd_close(&h), "cannot close '" + out + "'");
  } catch (...) {
    h.open_flags = GSD_OPEN_READONLY;  // close without flushing
    gsd_close(&h);
    std::remove(out.c_str());
    throw;
  }
}

}  // namespace

GsdWriter::GsdWriter(const std::string& path, const RunConfig& cfg, const SystemState& initial,
                     const Topology& topology, double dof, int64_t restart_step)
    : path_(path), cfg_(cfg), topology_(topology), dof_(dof) {
  const GsdSpec& g = cfg.output.gsd;
  every_ = g.every;
  velocities_ = g.velocities;
  flush_seconds_ = g.flush_seconds;
  frame_bytes_ = initial.size() * (12 + 12 + (velocities_ ? 12 : 0)) + 512;
  static_bytes_ = initial.size() * 16 + topology.bonds.size() * 12 + 64 * (initial.type_names.size() + 8) + 4096;
  frames_left_ = static_cast<uint64_t>(std::max<int64_t>(cfg.steps, 0) / std::max<int64_t>(every_, 1)) + 2;
  std::lock_guard<std::mutex> lock(mutex_);
  if (restart_step >= 0 && access(path.c_str(), F_OK) == 0) {
    open_existing(initial, restart_step);
    appending_ = true;
  } else {
    // Never replaces a file: `pairmd run` removes the files it replaces on purpose
    // (--overwrite) before it creates new ones.
    if (access(path.c_str(), F_OK) == 0)
      throw std::runtime_error("cannot create the GSD trajectory '" + path + "': the file exists");
    const std::string app = std::string("pairmd ") + PAIRMD_VERSION;
    const int rc = gsd_create_and_open(&handle_, path.c_str(), app.c_str(), "hoomd",
                                       gsd_make_version(kSchemaMajor, kSchemaMinor), GSD_OPEN_APPEND, 1);
    if (rc != GSD_SUCCESS)
      throw std::runtime_error("cannot create the GSD trajectory '" + path + "': " + gsdio::error_text(rc));
    open_ = true;
    try {
      flush_locked();
    } catch (const std::runtime_error& e) {
      close_locked();
      throw std::runtime_error("cannot create the GSD trajectory '" + path + "': " + e.what());
    }
  }
  flusher_.start(flush_seconds_, mutex_, [this] { return timed_flush_locked(); });
}

GsdWriter::~GsdWriter() {
  flusher_.stop();
  std::lock_guard<std::mutex> lock(mutex_);
  try {
    close_locked();
  } catch (...) {
  }
}

// Not shared with H5mdWriter::open_existing, which checks the same things (run id, particle
// count) through HDF5: a GSD file's index only grows, so the frames after the restart step go
// by copying the others into a new file, where HDF5 shrinks each time series in place.
void GsdWriter::open_existing(const SystemState& st, int64_t restart_step) {
  auto fail = [&](const std::string& what) {
    throw std::runtime_error("cannot continue the GSD trajectory '" + path_ + "': " + what);
  };
  gsd_handle in{};
  int rc = gsd_open(&in, path_.c_str(), GSD_OPEN_READONLY);
  if (rc != GSD_SUCCESS) fail(gsdio::error_text(rc) + " (move it away to start a new file)");
  uint64_t keep = 0, frames = 0;
  try {
    if (std::strcmp(in.header.schema, "hoomd") != 0) fail("it is not a HOOMD-schema GSD file");
    frames = gsd_get_nframes(&in);
    if (frames > 0) {
      const gsd_index_entry* e = gsd_find_chunk(&in, 0, "particles/N");
      const std::vector<uint32_t> n =
          e ? gsdio::read_chunk<uint32_t>(in, e, GSD_TYPE_UINT32, 1, 1, "particles/N") : std::vector<uint32_t>{0};
      if (n[0] != st.size())
        fail("it holds " + std::to_string(n[0]) + " particles, the run has " + std::to_string(st.size()) +
             " (a different system)");
      // Files of another run on the same prefix are not continued; nothing in them is touched.
      if (const gsd_index_entry* id = gsd_find_chunk(&in, 0, "log/pairmd/run_id")) {
        const std::vector<uint8_t> b = gsdio::read_chunk<uint8_t>(in, id, GSD_TYPE_UINT8, 0, 1, "log/pairmd/run_id");
        const std::string theirs(b.begin(), b.end());
        if (!theirs.empty() && !cfg_.run_id.empty() && theirs != cfg_.run_id)
          fail("it belongs to another run (run id " + theirs + ", the checkpoint's is " + cfg_.run_id +
               "); it is left as it is");
      }
      if (const gsd_index_entry* t = gsd_find_chunk(&in, 0, "particles/types"))
        if (gsdio::read_names(in, t, "particles/types") != st.type_names)
          fail("its particle types differ from the run's");
    }
    for (; keep < frames; ++keep) {
      const gsd_index_entry* e = gsd_find_chunk(&in, keep, "configuration/step");
      const uint64_t step = e ? gsdio::read_chunk<uint64_t>(in, e, GSD_TYPE_UINT64, 1, 1, "configuration/step")[0] : 0;
      if (static_cast<int64_t>(step) > restart_step) break;
      last_step_ = static_cast<int64_t>(step);
    }
    frames_dropped_ = static_cast<int64_t>(frames - keep);
    if (keep < frames) {
      // Frames after the restart step (written after the checkpoint) go: the frames before are
      // copied into PATH.tmp.PID, which replaces the file (synced, then renamed).
      const std::string tmp = path_ + ".tmp." + std::to_string(getpid());
      copy_frames(in, keep, tmp);
      if (std::rename(tmp.c_str(), path_.c_str()) != 0) {
        const std::string why = std::strerror(errno);
        std::remove(tmp.c_str());
        fail("cannot replace it with its first " + std::to_string(keep) + " frames: " + why);
      }
      sync_directory_of(path_);
    }
  } catch (...) {
    gsd_close(&in);
    throw;
  }
  gsd_close(&in);
  rc = gsd_open(&handle_, path_.c_str(), GSD_OPEN_APPEND);
  if (rc != GSD_SUCCESS) fail(gsdio::error_text(rc));
  open_ = true;
  frames_ = keep;
  flush_locked();
}

void GsdWriter::chunk(const char* name, gsd_type type, uint64_t n, uint32_t m, const void* data) {
  gsdio::check(gsd_write_chunk(&handle_, name, type, n, m, 0, data), std::string("cannot write ") + name);
}

// The first frame of a file holds what does not change during a run.
void GsdWriter::write_static(const SystemState& st) {
  const uint64_t n = st.size();
  const uint32_t n32 = static_cast<uint32_t>(n);
  chunk("particles/N", GSD_TYPE_UINT32, 1, 1, &n32);
  uint32_t width = 0;
  const std::vector<int8_t> types = gsdio::pack_names(st.type_names, &width);
  chunk("particles/types", GSD_TYPE_INT8, st.type_names.size(), width, types.data());
  std::vector<uint32_t> typeid_(st.type.begin(), st.type.end());
  chunk("particles/typeid", GSD_TYPE_UINT32, n, 1, typeid_.data());
  std::vector<float> f(n);
  for (size_t i = 0; i < n; ++i) f[i] = static_cast<float>(st.mass[i]);
  chunk("particles/mass", GSD_TYPE_FLOAT, n, 1, f.data());
  for (size_t i = 0; i < n; ++i) f[i] = static_cast<float>(st.charge[i]);
  chunk("particles/charge", GSD_TYPE_FLOAT, n, 1, f.data());
  std::vector<float> diameter(st.type_names.size());
  for (size_t t = 0; t < diameter.size(); ++t) diameter[t] = type_diameter(cfg_, static_cast<int>(t));
  for (size_t i = 0; i < n; ++i) f[i] = diameter[st.type[i]];
  chunk("particles/diameter", GSD_TYPE_FLOAT, n, 1, f.data());
  const std::vector<Bond>& bonds = topology_.bonds;
  if (!bonds.empty()) {
    const uint32_t nb = static_cast<uint32_t>(bonds.size());
    chunk("bonds/N", GSD_TYPE_UINT32, 1, 1, &nb);
    std::vector<std::string> names;
    for (const BondType& b : cfg_.model.force_field.bond_types) names.push_back(b.name);
    const std::vector<int8_t> bt = gsdio::pack_names(names, &width);
    chunk("bonds/types", GSD_TYPE_INT8, names.size(), width, bt.data());
    std::vector<uint32_t> type(nb), group(2 * static_cast<size_t>(nb));
    for (size_t b = 0; b < bonds.size(); ++b) {
      type[b] = static_cast<uint32_t>(bonds[b].type);
      group[2 * b] = static_cast<uint32_t>(bonds[b].i);
      group[2 * b + 1] = static_cast<uint32_t>(bonds[b].j);
    }
    chunk("bonds/typeid", GSD_TYPE_UINT32, nb, 1, type.data());
    chunk("bonds/group", GSD_TYPE_UINT32, nb, 2, group.data());
  }
  write_bonded_groups();
  if (!cfg_.run_id.empty()) chunk("log/pairmd/run_id", GSD_TYPE_UINT8, cfg_.run_id.size(), 1, cfg_.run_id.data());
  const std::string units = cfg_.model.units.name;
  chunk("log/pairmd/units", GSD_TYPE_UINT8, units.size(), 1, units.data());
}

namespace {

template <typename Kind>
std::vector<std::string> type_names(const std::vector<BondedType<Kind>>& types) {
  std::vector<std::string> names;
  for (const auto& t : types) names.push_back(t.name);
  return names;
}

}  // namespace

// angles/, dihedrals/, impropers/ (GSD's N, types, typeid, group): what OVITO and HOOMD read.
void GsdWriter::write_bonded_groups() {
  const Topology& t = topology_;
  const ForceField& ff = cfg_.model.force_field;
  auto group = [&](const std::string& prefix, const std::vector<std::string>& names, size_t count, uint32_t width,
                   auto member) {
    if (count == 0) return;
    const uint32_t n = static_cast<uint32_t>(count);
    chunk((prefix + "/N").c_str(), GSD_TYPE_UINT32, 1, 1, &n);
    uint32_t name_width = 0;
    const std::vector<int8_t> packed = gsdio::pack_names(names, &name_width);
    chunk((prefix + "/types").c_str(), GSD_TYPE_INT8, names.size(), name_width, packed.data());
    std::vector<uint32_t> type(count), atoms(count * width);
    for (size_t k = 0; k < count; ++k) member(k, type[k], &atoms[k * width]);
    chunk((prefix + "/typeid").c_str(), GSD_TYPE_UINT32, count, 1, type.data());
    chunk((prefix + "/group").c_str(), GSD_TYPE_UINT32, count, width, atoms.data());
  };
  group("angles", type_names(ff.angle_types), t.angles.size(), 3, [&](size_t k, uint32_t& type, uint32_t* a) {
    const Angle& x = t.angles[k];
    type = static_cast<uint32_t>(x.type);
    a[0] = x.i, a[1] = x.j, a[2] = x.k;
  });
  auto quads = [&](const std::vector<Dihedral>& q) {
    return [&q](size_t k, uint32_t& type, uint32_t* a) {
      type = static_cast<uint32_t>(q[k].type);
      a[0] = q[k].i, a[1] = q[k].j, a[2] = q[k].k, a[3] = q[k].l;
    };
  };
  group("dihedrals", type_names(ff.dihedral_types), t.dihedrals.size(), 4, quads(t.dihedrals));
  group("impropers", type_names(ff.improper_types), t.impropers.size(), 4, quads(t.impropers));
}

void GsdWriter::write_frame(const RunContext& ctx, const Frame& frame) {
  const SystemState& st = frame.state;
  const size_t n = st.size();
  const uint64_t step = static_cast<uint64_t>(st.step);
  chunk("configuration/step", GSD_TYPE_UINT64, 1, 1, &step);
  const bool first = frames_ == 0;
  if (first) {
    const uint8_t dim = 3;
    chunk("configuration/dimensions", GSD_TYPE_UINT8, 1, 1, &dim);
  }
  const float box[6] = {
      static_cast<float>(st.box.L.x), static_cast<float>(st.box.L.y), static_cast<float>(st.box.L.z), 0, 0, 0};
  chunk("configuration/box", GSD_TYPE_FLOAT, 6, 1, box);
  if (first) write_static(st);
  // HOOMD's box is centred on the origin: x_gsd = x - (lo + L/2).
  const double c[3] = {st.box.lo.x + 0.5 * st.box.L.x, st.box.lo.y + 0.5 * st.box.L.y, st.box.lo.z + 0.5 * st.box.L.z};
  buf3_.resize(3 * n);
  for (size_t i = 0; i < n; ++i) {
    buf3_[3 * i] = static_cast<float>(st.position[i].x - c[0]);
    buf3_[3 * i + 1] = static_cast<float>(st.position[i].y - c[1]);
    buf3_[3 * i + 2] = static_cast<float>(st.position[i].z - c[2]);
  }
  chunk("particles/position", GSD_TYPE_FLOAT, n, 3, buf3_.data());
  image_.resize(3 * n);
  for (size_t i = 0; i < n; ++i) {
    image_[3 * i] = st.image[i].x;
    image_[3 * i + 1] = st.image[i].y;
    image_[3 * i + 2] = st.image[i].z;
  }
  chunk("particles/image", GSD_TYPE_INT32, n, 3, image_.data());
  if (velocities_) {
    for (size_t i = 0; i < n; ++i) {
      buf3_[3 * i] = static_cast<float>(st.velocity[i].x);
      buf3_[3 * i + 1] = static_cast<float>(st.velocity[i].y);
      buf3_[3 * i + 2] = static_cast<float>(st.velocity[i].z);
    }
    chunk("particles/velocity", GSD_TYPE_FLOAT, n, 3, buf3_.data());
  }
  const Observables& o = frame.observables;
  const Units& u = cfg_.model.units;
  const double values[6] = {frame.time,
                            o.potential,
                            o.kinetic,
                            o.total(),
                            temperature(o, dof_, u.kB),
                            u.pressure_out * pressure(o, st.box.periodic ? st.box.volume() : 0.0)};
  const char* names[6] = {"log/time",         "log/potential_energy", "log/kinetic_energy",
                          "log/total_energy", "log/temperature",      "log/pressure"};
  for (int k = 0; k < 6; ++k) chunk(names[k], GSD_TYPE_DOUBLE, 1, 1, &values[k]);
  gsdio::check(gsd_end_frame(&handle_), "cannot end the frame");
  ++frames_;
  last_step_ = st.step;
  // Frames at the later multiples of `every`, and the last step's.
  frames_left_ = static_cast<uint64_t>(std::max<int64_t>(ctx.last_step - st.step, 0) / every_) + 1;
  flusher_.mark_unflushed();
  bytes_since_flush_ += frame_bytes_;
  // Also flush before the frames since the last flush outgrow half the reserved space.
  if (flush_seconds_ <= 0 || 2 * bytes_since_flush_ > reserve_) flush_locked();
}

template <typename F>
void GsdWriter::guarded(const char* what, F&& f) {
  const std::string timer_error = flusher_.take_error();
  if (!timer_error.empty())
    throw std::runtime_error("writing the GSD trajectory '" + path_ + "' failed in a timed flush: " + timer_error +
                             "; the file keeps the frames up to its last flush");
  if (failed_ || !open_) return;
  try {
    f();
  } catch (const std::runtime_error& e) {
    fail_locked();
    throw std::runtime_error("writing the GSD trajectory '" + path_ + "' failed while " + what + ": " + e.what() +
                             "; the file keeps the frames up to its last flush");
  }
}

void GsdWriter::observe(const RunContext& ctx, const Frame& frame) {
  std::lock_guard<std::mutex> lock(mutex_);
  const int64_t step = frame.state.step;
  // Frames at multiples of `every`, plus the first frame of a new file.
  const bool due = step > last_step_ && (step % every_ == 0 || (frames_ == 0 && step == ctx.first_step));
  if (!due) return;
  guarded("writing a frame", [&] { write_frame(ctx, frame); });
}

void GsdWriter::finish(const RunContext& ctx, const Frame& frame) {
  flusher_.stop();
  std::lock_guard<std::mutex> lock(mutex_);
  guarded("writing the last frame", [&] {
    // The last frame of a completed run, whatever the interval.
    if (frame.state.step == ctx.last_step && frame.state.step > last_step_) write_frame(ctx, frame);
    flush_locked();
  });
  if (!failed_) close_locked();
}

void GsdWriter::flush() {
  std::lock_guard<std::mutex> lock(mutex_);
  guarded("flushing", [&] { flush_locked(); });
}

int64_t GsdWriter::frames() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<int64_t>(frames_);
}

// GSD 5 moves a full index to the end of the file as it is (lseek(SEEK_END)), where its 32-byte
// entries can straddle a page boundary; a kill can cut a write there (the kernel stops a write
// between pages when a fatal signal comes), and an entry cut in two makes the whole file
// unreadable ("Corrupt GSD file"). Before a flush that moves the index, the file is extended to
// the page boundary past everything the flush writes before the index, so that the index
// starts there and every entry lies within a page. Where the index stays, entries lie at
// 32-byte offsets from the header's end already.
void GsdWriter::align_a_moving_index() {
  const uint64_t entries = handle_.buffer_index.size - handle_.pending_index_entries;
  if (entries == 0 || handle_.file_index.size + entries <= handle_.file_index.reserved) return;
  // The frames' data, then a name list GSD may move (its buffer at most doubles): an upper bound.
  const uint64_t end = static_cast<uint64_t>(handle_.file_size) + handle_.write_buffer.size +
                       2 * (handle_.file_names.data.reserved + handle_.frame_names.data.size);
  const uint64_t page = 4096, aligned = (end + page - 1) / page * page;
  struct stat s;
  if (fstat(handle_.fd, &s) != 0)
    throw std::runtime_error(std::string("cannot stat the file: ") + std::strerror(errno));
  if (static_cast<uint64_t>(s.st_size) < aligned && ftruncate(handle_.fd, static_cast<off_t>(aligned)) != 0)
    throw std::runtime_error(std::string("cannot extend the file: ") + std::strerror(errno));
}

void GsdWriter::flush_locked() {
  if (!open_ || failed_) return;
  align_a_moving_index();
  gsdio::check(gsd_flush(&handle_), "cannot flush");
  struct stat s;
  if (fstat(handle_.fd, &s) != 0)
    throw std::runtime_error(std::string("cannot stat the file: ") + std::strerror(errno));
  flushed_size_ = s.st_size;
  bytes_since_flush_ = 0;
  flusher_.flushed();
  // Reserve disk blocks past the end for what the next flush interval writes: the frames and,
  // should the index grow, its copy (GSD moves a full index to the end of the file). A full
  // disk is then found here, right after a complete flush, not in the middle of a flush, where
  // the library's error handling could leave a file that no longer opens. Never more than the
  // rest of the run writes: a short run starts where its whole file fits.
  const uint64_t index_bytes = handle_.header.index_allocated_entries * sizeof(gsd_index_entry);
  const uint64_t interval = std::max<uint64_t>(uint64_t(1) << 20, 4 * frame_bytes_ + 2 * index_bytes + (64 << 10));
  const uint64_t rest = frames_left_ * frame_bytes_ + (frames_ == 0 ? static_bytes_ : 0) + 2 * index_bytes + (64 << 10);
  reserve_ = std::min(interval, rest);
  const uint64_t reserve = reserve_;
  if (fallocate(handle_.fd, FALLOC_FL_KEEP_SIZE, static_cast<off_t>(s.st_size), static_cast<off_t>(reserve)) != 0) {
    const int e = errno;
    if (e != EOPNOTSUPP && e != ENOSYS && e != EINVAL) {
      fail_locked();
      throw std::runtime_error("no room to go on writing (reserving " + std::to_string(reserve >> 10) +
                               " KiB: " + std::strerror(e) + ")");
    }
  }
}

void GsdWriter::fail_locked() {
  if (failed_) return;
  failed_ = true;
  if (!open_) return;
  // Give back what was written after the last flush, and the reserved blocks, so that the
  // checkpoint of the last good state finds room on a full disk; only when the header on disk
  // still points inside the flushed part (a failed flush may have moved the index).
  gsd_header h;
  if (flushed_size_ > 0 && pread(handle_.fd, &h, sizeof h, 0) == static_cast<ssize_t>(sizeof h) &&
      h.index_location + h.index_allocated_entries * sizeof(gsd_index_entry) <= static_cast<uint64_t>(flushed_size_) &&
      h.namelist_location + h.namelist_allocated_entries * GSD_NAME_SIZE <= static_cast<uint64_t>(flushed_size_)) {
    if (ftruncate(handle_.fd, flushed_size_) != 0) {
      // The file stays valid with trailing bytes.
    }
  }
}

void GsdWriter::close_locked() {
  if (!open_) return;
  open_ = false;
  if (failed_) {
    // Close without the implicit flush, which would index frames that may be half on disk.
    handle_.open_flags = GSD_OPEN_READONLY;
    gsd_close(&handle_);
    return;
  }
  const int fd = handle_.fd;
  align_a_moving_index();
  gsdio::check(gsd_flush(&handle_), "cannot flush the GSD trajectory '" + path_ + "'");
  struct stat s;
  if (fstat(fd, &s) == 0 && ftruncate(fd, s.st_size) != 0) {
    // Harmless: the reserved blocks past the end stay allocated.
  }
  gsdio::check(gsd_close(&handle_), "cannot close the GSD trajectory '" + path_ + "'");
}

// The flush timer's flush (io/timed_flusher.h), with mutex_ held. A failure leaves the file as
// its last flush made it; the timer keeps the message, which the run's next write reports.
bool GsdWriter::timed_flush_locked() {
  if (failed_ || !open_) return false;
  try {
    flush_locked();
  } catch (...) {
    fail_locked();
    throw;
  }
  return !failed_;
}

}  // namespace pairmd
