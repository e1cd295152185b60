#include "io/h5md_writer.h"

#include <unistd.h>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "base/observables.h"
#include "base/version.h"
#include "io/h5md.h"
#include "io/hdf5_ordered_driver.h"
#include "io/hdf5_util.h"

namespace pairmd {

using h5::Handle;

// One H5MD time-dependent element: a group with step [frames] int64, time [frames] float64
// and value [frames, ...].
struct H5mdWriter::Series {
  std::string path;
  Handle group, step, time, value;
  std::vector<hsize_t> frame_dims;
  hsize_t count = 0;
  int64_t last_step = INT64_MIN;
  // step and time are hard links to another series' (image and box/edges share position's, as
  // H5MD asks of elements sampled together): that series appends them.
  bool linked = false;
  bool unflushed = false;  // frames appended since the last flush
};

namespace {

// Chunks of at most this many bytes per frame; a frame is never split across time, so a chunk
// is written once and never rewritten (what keeps a killed file consistent).
constexpr size_t kMaxChunkBytes = size_t(16) << 20;
constexpr hsize_t kScalarChunk = 1024;

std::vector<hsize_t> chunk_for(const std::vector<hsize_t>& frame_dims, size_t elem) {
  std::vector<hsize_t> c{1};
  if (frame_dims.empty()) return {kScalarChunk};
  size_t rest = elem;
  for (size_t d = 1; d < frame_dims.size(); ++d) rest *= std::max<hsize_t>(1, frame_dims[d]);
  const hsize_t first =
      std::max<hsize_t>(1, std::min<hsize_t>(std::max<hsize_t>(1, frame_dims[0]), kMaxChunkBytes / rest));
  c.push_back(first);
  for (size_t d = 1; d < frame_dims.size(); ++d) c.push_back(std::max<hsize_t>(1, frame_dims[d]));
  return c;
}

Handle create_extendible(hid_t loc, const char* name, hid_t type, const std::vector<hsize_t>& frame_dims,
                         int compression) {
  std::vector<hsize_t> dims{0}, maxdims{H5S_UNLIMITED};
  for (hsize_t d : frame_dims) {
    dims.push_back(d);
    maxdims.push_back(d);
  }
  Handle space(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), maxdims.data()));
  Handle dcpl(H5Pcreate(H5P_DATASET_CREATE));
  const std::vector<hsize_t> chunk = chunk_for(frame_dims, H5Tget_size(type));
  h5::check(H5Pset_chunk(dcpl, static_cast<int>(chunk.size()), chunk.data()), std::string("cannot chunk ") + name);
  if (compression > 0 && !frame_dims.empty()) {
    H5Pset_shuffle(dcpl);
    H5Pset_deflate(dcpl, static_cast<unsigned>(compression));
  }
  return Handle(h5::check_id(H5Dcreate2(loc, name, type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT),
                             std::string("cannot create dataset ") + name));
}

void append_rows(hid_t dset, hsize_t row, const std::vector<hsize_t>& frame_dims, hid_t mem_type, const void* data) {
  std::vector<hsize_t> dims{row + 1}, start{row}, count{1};
  for (hsize_t d : frame_dims) {
    dims.push_back(d);
    start.push_back(0);
    count.push_back(d);
  }
  h5::check(H5Dset_extent(dset, dims.data()), "cannot extend a dataset");
  Handle fspace(H5Dget_space(dset));
  h5::check(H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr),
            "cannot select a frame");
  Handle mspace(H5Screate_simple(static_cast<int>(count.size()), count.data(), nullptr));
  h5::check(H5Dwrite(dset, mem_type, mspace, fspace, H5P_DEFAULT, data), "cannot write a frame");
}

std::string author() {
  const char* u = std::getenv("USER");
  if (!u || !*u) u = std::getenv("LOGNAME");
  return u && *u ? u : "unknown";
}

// The run id stored in a trajectory's /parameters ("" for files written before run ids).
std::string trajectory_run_id(hid_t f) {
  if (!h5::exists(f, "parameters")) return "";
  Handle params = h5::open_group(f, "parameters");
  if (H5Aexists(params, "run_id") <= 0) return "";
  Handle a(h5::check_id(H5Aopen(params, "run_id", H5P_DEFAULT), "cannot open parameters/run_id"));
  return h5::read_string(a, true, "run_id");
}

// The one string attribute that stays variable-length: H5MD's modules/units asks for a
// fixed-length ASCII `unit`, but h5py reads fixed-length strings as bytes, and MDAnalysis (2.4,
// and its H5MD reader since) looks the unit up as a str and refuses to open the file at all,
// convert_units=False included. Every other string of the file is fixed-length.
void write_unit(hid_t obj, const std::string& unit) {
  Handle t(H5Tcopy(H5T_C_S1));
  H5Tset_size(t, H5T_VARIABLE);
  H5Tset_cset(t, H5T_CSET_ASCII);
  Handle space(H5Screate(H5S_SCALAR));
  if (H5Aexists(obj, "unit") > 0) H5Adelete(obj, "unit");
  Handle a(h5::check_id(H5Acreate2(obj, "unit", t, space, H5P_DEFAULT, H5P_DEFAULT), "cannot create attribute unit"));
  const char* p = unit.c_str();
  h5::check(H5Awrite(a, t, &p), "cannot write attribute unit");
}

// Whether two open objects are the same object of the file (hard links to one dataset).
bool same_object(hid_t a, hid_t b) {
  H5O_info_t x, y;
  if (H5Oget_info(a, &x) < 0 || H5Oget_info(b, &y) < 0) {
    H5Eclear2(H5E_DEFAULT);
    return false;
  }
  return x.fileno == y.fileno && x.addr == y.addr;
}

// connectivity/<name> [m, width] of particle indices into /particles/all, and <name>_type with
// the type names (as connectivity/bonds): the angles, dihedrals and impropers. Tools that know
// H5MD's connectivity module read them as they read the bonds.
template <typename Term, typename Kind, typename Atoms>
void write_connectivity(hid_t file, const std::string& name, const std::vector<Term>& terms, size_t width,
                        const std::vector<BondedType<Kind>>& types, Atoms atoms) {
  if (terms.empty()) return;
  const hsize_t m = terms.size();
  std::vector<int32_t> idx(width * m), type(m);
  for (size_t k = 0; k < terms.size(); ++k) {
    atoms(terms[k], &idx[width * k]);
    type[k] = terms[k].type;
  }
  const std::string type_name = name.substr(0, name.size() - 1) + "_type";  // angle_type, as bond_type
  Handle conn = h5::open_or_create_group(file, "connectivity");
  h5::write_dataset(conn, name, H5T_STD_I32LE, H5T_NATIVE_INT32, {m, static_cast<hsize_t>(width)}, idx.data());
  h5::write_dataset(conn, type_name, H5T_STD_I32LE, H5T_NATIVE_INT32, {m}, type.data());
  Handle d(H5Dopen2(conn, name.c_str(), H5P_DEFAULT));
  hobj_ref_t ref;
  h5::check(H5Rcreate(&ref, file, "/particles/all", H5R_OBJECT, -1), "cannot reference /particles/all");
  Handle space(H5Screate(H5S_SCALAR));
  Handle a(h5::check_id(H5Acreate2(d, "particles_group", H5T_STD_REF_OBJ, space, H5P_DEFAULT, H5P_DEFAULT),
                        "cannot create attribute particles_group"));
  h5::check(H5Awrite(a, H5T_STD_REF_OBJ, &ref), "cannot write attribute particles_group");
  std::vector<std::string> names;
  for (const auto& t : types) names.push_back(t.name);
  Handle td(H5Dopen2(conn, type_name.c_str(), H5P_DEFAULT));
  if (!names.empty()) h5::write_string_array_attr(td, "names", names);
}

void write_bonded_connectivity(hid_t file, const Topology& t, const ForceField& ff) {
  write_connectivity(file, "angles", t.angles, 3, ff.angle_types,
                     [](const Angle& a, int32_t* x) { x[0] = a.i, x[1] = a.j, x[2] = a.k; });
  auto quad = [](const Dihedral& d, int32_t* x) { x[0] = d.i, x[1] = d.j, x[2] = d.k, x[3] = d.l; };
  write_connectivity(file, "dihedrals", t.dihedrals, 4, ff.dihedral_types, quad);
  write_connectivity(file, "impropers", t.impropers, 4, ff.improper_types, quad);
}

}  // namespace

namespace {

// The trajectory's file access: metadata stays in memory until an explicit flush (the file on
// disk is always the state of the last flush plus raw data beyond it, never a half-updated
// index), through the ordered driver: a kill in the middle of a flush leaves a file that reads
// with every frame of the flushes before (io/hdf5_ordered_driver.h), where HDF5's own driver can
// leave metadata pointing past the recorded end of the file, or an extent whose chunk is missing.
Handle trajectory_access() {
  Handle fapl(H5Pcreate(H5P_FILE_ACCESS));
  H5AC_cache_config_t mdc;
  mdc.version = H5AC__CURR_CACHE_CONFIG_VERSION;
  h5::check(H5Pget_mdc_config(fapl, &mdc), "cannot read the HDF5 cache configuration");
  mdc.evictions_enabled = 0;
  mdc.incr_mode = H5C_incr__off;
  mdc.flash_incr_mode = H5C_flash_incr__off;
  mdc.decr_mode = H5C_decr__off;
  mdc.set_initial_size = 1;
  mdc.initial_size = 8 << 20;
  mdc.max_size = std::max<size_t>(mdc.max_size, 8 << 20);
  h5::check(H5Pset_mdc_config(fapl, &mdc), "cannot configure the HDF5 cache");
  h5::check(H5Pset_driver(fapl, h5::ordered_driver(), nullptr), "cannot select the trajectory's file driver");
  return fapl;
}

}  // namespace

H5mdWriter::H5mdWriter(const std::string& path, const RunConfig& cfg, const SystemState& initial,
                       const Topology& topology, double dof, int64_t restart_step)
    : path_(path), cfg_(cfg), dof_(dof) {
  h5::LibraryLock lock(h5::library_mutex());
  h5::quiet();
  const TrajectorySpec& t = cfg.output.trajectory;
  every_ = t.every;
  velocities_every_ = t.velocities_every;
  forces_every_ = t.forces_every;
  observables_every_ = t.observables_every > 0 ? t.observables_every : cfg.output.thermo_every;
  compression_ = t.compression;
  flush_seconds_ = t.flush_seconds;
  n_ = initial.size();
  // Room for a few frames of everything (positions, images, velocities, forces), at least 1 MiB.
  reserve_bytes_ = std::max<size_t>(size_t(1) << 20, 4 * n_ * (24 + 12 + 24 + 24) + (64 << 10));
  const Units& u = cfg.model.units;
  // Unit strings in H5MD notation (space-separated factors, negative powers), as MDAnalysis
  // translates them. Reduced LJ values are dimensionless numbers: no unit attribute (H5MD's
  // reading of a missing unit), the unit system is named in h5md/modules/units and parameters.
  length_unit_ = u.h5md_length();
  time_unit_ = u.h5md_time();
  velocity_unit_ = u.h5md_velocity();
  force_unit_ = u.h5md_force();
  energy_unit_ = u.h5md_energy();
  temperature_unit_ = u.h5md_temperature();
  pressure_unit_ = u.h5md_pressure();

  const Handle fapl = trajectory_access();
  // A restart continues the file its run wrote, where there is one.
  appending_ = restart_step >= 0 && access(path.c_str(), F_OK) == 0;
  if (appending_)
    continue_file(fapl, initial, restart_step);
  else
    create_file(fapl, initial, topology);
  last_flush_ = std::chrono::steady_clock::now();
  flusher_.start(flush_seconds_, h5::library_mutex(), [this] { return timed_flush_locked(); });
  // With flush_seconds 0 every frame is on disk before the run goes on (and before its thermo
  // row): no frame is left to a thread.
  if (flush_seconds_ > 0) writer_ = std::thread([this] { writer_loop(); });
}

void H5mdWriter::continue_file(int64_t fapl, const SystemState& initial, int64_t restart_step) {
  // A damaged file can crash HDF5: read it once in a child process first (read_h5md_frame
  // forks); only a crash or hang stops us here, other problems are reported below.
  try {
    (void)read_h5md_frame(path_, -1);
  } catch (const std::runtime_error& e) {
    const std::string m = e.what();
    if (m.find("is damaged") != std::string::npos || m.find("did not finish") != std::string::npos)
      throw std::runtime_error("cannot continue the trajectory: " + m + " (move it away to start a new file)");
  }
  file_ = H5Fopen(path_.c_str(), H5F_ACC_RDWR, static_cast<hid_t>(fapl));
  if (file_ < 0)
    throw std::runtime_error("cannot open the trajectory '" + path_ + "' to continue it (" + h5::last_error() + ")");
  try {
    open_existing(initial, restart_step);
  } catch (const std::runtime_error& e) {
    H5Fclose(file_);
    file_ = -1;
    throw std::runtime_error("trajectory '" + path_ + "': " + e.what());
  }
}

void H5mdWriter::create_file(int64_t fapl, const SystemState& initial, const Topology& topology) {
  // Never truncates: an existing file is an error here (`pairmd run` removes the files it
  // replaces on purpose, --overwrite, before it creates new ones).
  if (access(path_.c_str(), F_OK) == 0)
    throw std::runtime_error("cannot create the trajectory '" + path_ + "': the file exists");
  file_ = H5Fcreate(path_.c_str(), H5F_ACC_EXCL, H5P_DEFAULT, static_cast<hid_t>(fapl));
  if (file_ < 0) throw std::runtime_error("cannot create the trajectory '" + path_ + "' (" + h5::last_error() + ")");
  try {
    write_static(cfg_, initial, topology);
    flush_locked();
  } catch (const std::runtime_error& e) {
    H5Fclose(file_);
    file_ = -1;
    throw std::runtime_error("trajectory '" + path_ + "': " + e.what());
  }
}

H5mdWriter::~H5mdWriter() {
  stop_writer();
  flusher_.stop();
  try {
    h5::LibraryLock lock(h5::library_mutex());
    close_locked();
  } catch (...) {
  }
}

// The flush timer's flush (io/timed_flusher.h), with the library lock held. A failure leaves
// the file as its last flush made it; the timer keeps the message, which the run's next write
// reports.
bool H5mdWriter::timed_flush_locked() {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);  // this thread's HDF5 prints nothing (pairmd reports)
  write_pending_locked();                       // the frames handed over before the clock ran out
  if (failed_ || file_ < 0) return false;
  try {
    flush_locked();
  } catch (...) {
    fail_locked();
    throw;
  }
  return !failed_;
}

void H5mdWriter::write_static(const RunConfig& cfg, const SystemState& st, const Topology& topology) {
  const hid_t f = static_cast<hid_t>(file_);
  {
    Handle h5md = h5::create_group(f, "h5md");
    h5::write_attr<int32_t>(h5md, "version", H5T_STD_I32LE, {1, 1});
    Handle a = h5::create_group(h5md, "author");
    h5::write_string_attr(a, "name", author());
    Handle c = h5::create_group(h5md, "creator");
    h5::write_string_attr(c, "name", "pairmd");
    h5::write_string_attr(c, "version", PAIRMD_VERSION);
    Handle units = h5::create_group(h5md, "modules/units");
    h5::write_attr<int32_t>(units, "version", H5T_STD_I32LE, {1, 0});
    h5::write_string_attr(units, "system",
                          cfg.model.units.reduced() ? "lj (reduced: sigma, tau, epsilon, m)"
                                                    : "real (as LAMMPS: Angstrom, fs, kcal/mol, g/mol, e, K, atm)");
  }
  const hsize_t n = st.size();
  Handle all = h5::create_group(f, "particles/all");
  {
    Handle box = h5::create_group(all, "box");
    h5::write_attr<int32_t>(box, "dimension", H5T_STD_I32LE, {3});
    const std::string b = st.box.periodic ? "periodic" : "none";
    h5::write_string_array_attr(box, "boundary", {b, b, b});
    const double lo[3] = {st.box.lo.x, st.box.lo.y, st.box.lo.z};
    h5::write_dataset(box, "offset", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, {3}, lo);
    Handle off(H5Dopen2(box, "offset", H5P_DEFAULT));
    if (!length_unit_.empty()) write_unit(off, length_unit_);
  }
  std::vector<int32_t> species(st.type.begin(), st.type.end());
  h5::write_dataset(all, "species", H5T_STD_I32LE, H5T_NATIVE_INT32, {n}, species.data());
  h5::write_dataset(all, "mass", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, {n}, st.mass.data());
  h5::write_dataset(all, "charge", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, {n}, st.charge.data());
  {
    if (!cfg.model.units.reduced()) {
      Handle m(H5Dopen2(all, "mass", H5P_DEFAULT));
      write_unit(m, cfg.model.units.h5md_mass());
      Handle q(H5Dopen2(all, "charge", H5P_DEFAULT));
      write_unit(q, cfg.model.units.h5md_charge());
    }
    Handle s(H5Dopen2(all, "species", H5P_DEFAULT));
    h5::write_string_array_attr(s, "names", st.type_names);
  }
  if (!topology.bonds.empty()) {
    const hsize_t m = topology.bonds.size();
    std::vector<int32_t> pairs(2 * m), types(m);
    for (size_t b = 0; b < m; ++b) {
      pairs[2 * b] = topology.bonds[b].i;
      pairs[2 * b + 1] = topology.bonds[b].j;
      types[b] = topology.bonds[b].type;
    }
    Handle conn = h5::create_group(f, "connectivity");
    h5::write_dataset(conn, "bonds", H5T_STD_I32LE, H5T_NATIVE_INT32, {m, 2}, pairs.data());
    h5::write_dataset(conn, "bond_type", H5T_STD_I32LE, H5T_NATIVE_INT32, {m}, types.data());
    Handle bonds(H5Dopen2(conn, "bonds", H5P_DEFAULT));
    hobj_ref_t ref;
    h5::check(H5Rcreate(&ref, f, "/particles/all", H5R_OBJECT, -1), "cannot reference /particles/all");
    Handle space(H5Screate(H5S_SCALAR));
    Handle a(h5::check_id(H5Acreate2(bonds, "particles_group", H5T_STD_REF_OBJ, space, H5P_DEFAULT, H5P_DEFAULT),
                          "cannot create attribute particles_group"));
    h5::check(H5Awrite(a, H5T_STD_REF_OBJ, &ref), "cannot write attribute particles_group");
    std::vector<std::string> names;
    for (const BondType& bt : cfg.model.force_field.bond_types) names.push_back(bt.name);
    Handle bt(H5Dopen2(conn, "bond_type", H5P_DEFAULT));
    if (!names.empty()) h5::write_string_array_attr(bt, "names", names);
  }
  write_bonded_connectivity(f, topology, cfg.model.force_field);
  Handle params = h5::create_group(f, "parameters");
  h5::write_string_dataset(params, "config", cfg.text);
  h5::write_string_dataset(params, "config_path", cfg.path);
  std::string overrides;
  for (const auto& [k, v] : cfg.overrides) overrides += k + "=" + v + "\n";
  h5::write_string_dataset(params, "overrides", overrides);
  h5::write_string_dataset(params, "units", cfg.model.units.name);
  if (!cfg.run_id.empty()) h5::write_string_attr(params, "run_id", cfg.run_id);
  const double dt = cfg.model.integrator.dt;
  h5::write_dataset(params, "dt", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, {}, &dt);
}

namespace {

// A trajectory a restart continues is of its run and its system: the run id (where the file has
// one), the particle count, and (`box_fixed`: no barostat) the box. Throws std::runtime_error
// saying which differs.
void check_continuable(hid_t f, const std::string& run_id, const SystemState& st, bool box_fixed) {
  if (!h5::exists(f, "particles/all"))
    throw std::runtime_error("it has no particles/all group (not a pairmd trajectory?)");
  // Files of another run on the same prefix (a prefix reused with --overwrite after this
  // checkpoint was taken) are not continued: nothing in them is touched.
  const std::string theirs = trajectory_run_id(f);
  if (!theirs.empty() && !run_id.empty() && theirs != run_id)
    throw std::runtime_error("it belongs to another run (run id " + theirs + ", the checkpoint's is " + run_id +
                             "); it is left as it is");
  if (h5::exists(f, "particles/all/species")) {
    Handle d(H5Dopen2(f, "particles/all/species", H5P_DEFAULT));
    const auto dims = h5::dims_of(d);
    if (dims.size() != 1 || dims[0] != st.size())
      throw std::runtime_error("it holds " + std::to_string(dims.empty() ? 0 : dims[0]) + " particles, the run has " +
                               std::to_string(st.size()) + " (a different system)");
  }
  // The first frame's box is the run's start box, unless a barostat has been changing it.
  if (!box_fixed || !h5::exists(f, "particles/all/box/edges/value")) return;
  Handle d(H5Dopen2(f, "particles/all/box/edges/value", H5P_DEFAULT));
  const auto dims = h5::dims_of(d);
  // A vector of edges per frame, or (files from before) a 3 x 3 diagonal matrix.
  const bool matrix = dims.size() == 3 && dims[1] == 3 && dims[2] == 3;
  if (!(matrix || (dims.size() == 2 && dims[1] == 3)) || dims[0] == 0) return;
  double L[9];
  const hsize_t start[3] = {0, 0, 0}, count[3] = {1, 3, 3};
  Handle fs(H5Dget_space(d));
  H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, nullptr, count, nullptr);
  Handle ms(H5Screate_simple(static_cast<int>(dims.size()), count, nullptr));
  h5::check(H5Dread(d, H5T_NATIVE_DOUBLE, ms, fs, H5P_DEFAULT, L), "cannot read the box");
  const double want[3] = {st.box.L.x, st.box.L.y, st.box.L.z};
  for (int k = 0; k < 3; ++k)
    if (std::fabs(L[matrix ? 4 * k : k] - want[k]) > 1e-9 * std::fabs(want[k]))
      throw std::runtime_error("its box differs from the run's (a different system)");
}

}  // namespace

void H5mdWriter::open_existing(const SystemState& st, int64_t restart_step) {
  const hid_t f = static_cast<hid_t>(file_);
  check_continuable(f, cfg_.run_id, st, !cfg_.model.barostat.active());
  // Every time series (a group with step and value) loses its frames after restart_step: a run
  // killed after its last checkpoint continues without duplicate or out-of-order frames.
  std::vector<std::string> groups{"particles/all", "observables", "fields"};
  while (!groups.empty()) {
    const std::string g = groups.back();
    groups.pop_back();
    if (!h5::exists(f, g)) continue;
    Handle grp = h5::open_group(f, g);
    H5G_info_t info;
    h5::check(H5Gget_info(grp, &info), "cannot list " + g);
    for (hsize_t k = 0; k < info.nlinks; ++k) {
      char name[1024];
      if (H5Lget_name_by_idx(grp, ".", H5_INDEX_NAME, H5_ITER_INC, k, name, sizeof name, H5P_DEFAULT) < 0) continue;
      const std::string child = g + "/" + name;
      H5O_info_t oi;
      if (H5Oget_info_by_name(f, child.c_str(), &oi, H5P_DEFAULT) < 0 || oi.type != H5O_TYPE_GROUP) continue;
      if (!h5::exists(f, child + "/step") || !h5::exists(f, child + "/value"))
        groups.push_back(child);
      else
        truncate_series(child, restart_step);
    }
  }
  // Files written since image and box/edges share position's step and time (hard links).
  auto pos = series_.find("particles/all/position");
  for (const char* name : {"particles/all/image", "particles/all/box/edges"}) {
    auto it = series_.find(name);
    if (pos != series_.end() && it != series_.end() && same_object(it->second->step, pos->second->step))
      it->second->linked = true;
  }
  flush_locked();
}

void H5mdWriter::truncate_series(const std::string& child, int64_t restart_step) {
  const hid_t f = static_cast<hid_t>(file_);
  auto s = std::make_unique<Series>();
  s->path = child;
  s->group = h5::open_group(f, child);
  s->step = Handle(h5::check_id(H5Dopen2(s->group, "step", H5P_DEFAULT), "cannot open " + child + "/step"));
  s->value = Handle(h5::check_id(H5Dopen2(s->group, "value", H5P_DEFAULT), "cannot open " + child + "/value"));
  if (h5::exists(s->group, "time"))
    s->time = Handle(h5::check_id(H5Dopen2(s->group, "time", H5P_DEFAULT), "cannot open " + child + "/time"));
  const auto vd = h5::dims_of(s->value);
  const auto sd = h5::dims_of(s->step);
  if (vd.empty() || sd.size() != 1) throw std::runtime_error(child + " is not a time series pairmd can extend");
  s->frame_dims.assign(vd.begin() + 1, vd.end());
  hsize_t count = std::min(vd[0], sd[0]);
  if (s->time.valid()) count = std::min(count, h5::dims_of(s->time).at(0));
  std::vector<int64_t> steps(count);
  if (count > 0)
    h5::check(H5Dread(s->step, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, steps.data()),
              "cannot read " + child + "/step");
  hsize_t keep = 0;
  while (keep < count && steps[keep] <= restart_step) ++keep;
  frames_dropped_ = std::max<int64_t>(frames_dropped_, static_cast<int64_t>(vd[0] - keep));
  std::vector<hsize_t> dims = vd;
  dims[0] = keep;
  h5::check(H5Dset_extent(s->value, dims.data()), "cannot truncate " + child);
  h5::check(H5Dset_extent(s->step, &keep), "cannot truncate " + child);
  if (s->time.valid()) h5::check(H5Dset_extent(s->time, &keep), "cannot truncate " + child);
  s->count = keep;
  s->last_step = keep > 0 ? steps[keep - 1] : INT64_MIN;
  series_[child] = std::move(s);
}

H5mdWriter::Series& H5mdWriter::series(const std::string& path, hid_t file_type,
                                       const std::vector<unsigned long long>& frame_dims_in, const std::string& unit,
                                       bool compress, Series* clock) {
  const std::string key = path[0] == '/' ? path.substr(1) : path;
  const std::vector<hsize_t> frame_dims(frame_dims_in.begin(), frame_dims_in.end());
  auto it = series_.find(key);
  if (it != series_.end()) {
    if (it->second->frame_dims != frame_dims)
      throw std::runtime_error(key + " in the file has another shape than the frames written now");
    return *it->second;
  }
  auto s = std::make_unique<Series>();
  s->path = key;
  s->frame_dims = frame_dims;
  const hid_t f = static_cast<hid_t>(file_);
  s->group = h5::open_or_create_group(f, key);
  if (clock) {
    h5::check(H5Lcreate_hard(clock->group, "step", s->group, "step", H5P_DEFAULT, H5P_DEFAULT),
              "cannot link " + key + "/step");
    h5::check(H5Lcreate_hard(clock->group, "time", s->group, "time", H5P_DEFAULT, H5P_DEFAULT),
              "cannot link " + key + "/time");
    s->step = Handle(h5::check_id(H5Dopen2(s->group, "step", H5P_DEFAULT), "cannot open " + key + "/step"));
    s->time = Handle(h5::check_id(H5Dopen2(s->group, "time", H5P_DEFAULT), "cannot open " + key + "/time"));
    s->linked = true;
  } else {
    s->step = create_extendible(s->group, "step", H5T_STD_I64LE, {}, 0);
    s->time = create_extendible(s->group, "time", H5T_IEEE_F64LE, {}, 0);
    if (!time_unit_.empty()) write_unit(s->time, time_unit_);
  }
  s->value = create_extendible(s->group, "value", file_type, frame_dims, compress ? compression_ : 0);
  if (!unit.empty()) write_unit(s->value, unit);
  Series& ref = *s;
  series_[key] = std::move(s);
  return ref;
}

void H5mdWriter::append(Series& s, int64_t step, double time, const void* data, hid_t mem_type) {
  size_t bytes = 16 + H5Tget_size(mem_type);
  for (hsize_t d : s.frame_dims) bytes *= d;
  bytes_since_flush_ += bytes;
  flusher_.mark_unflushed();
  append_rows(s.value, s.count, s.frame_dims, mem_type, data);
  if (!s.linked) {
    append_rows(s.step, s.count, {}, H5T_NATIVE_INT64, &step);
    if (s.time.valid()) append_rows(s.time, s.count, {}, H5T_NATIVE_DOUBLE, &time);
  }
  ++s.count;
  s.last_step = step;
  s.unflushed = true;
}

int64_t H5mdWriter::frames_written(const std::string& name) {
  h5::LibraryLock lock(h5::library_mutex());
  write_pending_locked();
  auto it = series_.find(name[0] == '/' ? name.substr(1) : name);
  return it == series_.end() ? 0 : static_cast<int64_t>(it->second->count);
}

int64_t H5mdWriter::next_step(int64_t step) const {
  int64_t next = INT64_MAX;
  for (int64_t every : {every_, velocities_every_, forces_every_, observables_every_})
    next = std::min(next, next_multiple(step, every));
  return next;
}

bool H5mdWriter::due(int64_t step, int64_t every, int64_t first_step) const {
  if (every <= 0) return false;
  // Frames at multiples of the interval, plus the first frame of a new file.
  return step % every == 0 || (!appending_ && step == first_step);
}

std::string H5mdWriter::timed_flush_error(const std::string& why) const {
  return "writing the trajectory '" + path_ + "' failed in a timed flush: " + why +
         "; the file keeps the frames up to its last flush";
}

template <typename F>
void H5mdWriter::guarded(const char* what, F&& f) {
  const std::string timer_error = flusher_.take_error();
  if (!timer_error.empty()) throw std::runtime_error(timed_flush_error(timer_error));
  if (failed_ || file_ < 0) return;
  try {
    f();
  } catch (const std::runtime_error& e) {
    // Leave the file as its last flush made it: no close (that would flush a half-written
    // state), no further writes.
    fail_locked();
    throw std::runtime_error("writing the trajectory '" + path_ + "' failed while " + what + ": " + e.what() +
                             "; the file keeps the frames up to its last flush");
  }
}

void H5mdWriter::write_frame(const FrameParts& frame, bool final_frame) {
  const SystemState& st = frame.state;
  const int64_t step = st.step;
  const double t = frame.time;
  auto want = [&](int64_t every, const std::string& key) {
    if (every <= 0) return false;
    auto it = series_.find(key);
    if (it != series_.end() && it->second->last_step >= step) return false;
    return final_frame || due(step, every, frame.first_step);
  };
  const std::vector<unsigned long long> n3{n_, 3};
  if (want(every_, "particles/all/position")) {
    Series& pos = series("particles/all/position", H5T_IEEE_F64LE, n3, length_unit_, true);
    append(pos, step, t, st.position.data(), H5T_NATIVE_DOUBLE);
    append(series("particles/all/image", H5T_STD_I32LE, n3, "", true, &pos), step, t, st.image.data(),
           H5T_NATIVE_INT32);
    // A cuboid box is the vector of its edge lengths (H5MD; a D x D matrix means triclinic).
    // Files continued from before keep their 3 x 3 diagonal matrices.
    auto edges = series_.find("particles/all/box/edges");
    const bool matrix = edges != series_.end() && edges->second->frame_dims.size() == 2;
    const double L[9] = {st.box.L.x, 0, 0, 0, st.box.L.y, 0, 0, 0, st.box.L.z};
    const double v[3] = {st.box.L.x, st.box.L.y, st.box.L.z};
    append(series("particles/all/box/edges", H5T_IEEE_F64LE,
                  matrix ? std::vector<unsigned long long>{3, 3} : std::vector<unsigned long long>{3}, length_unit_,
                  false, &pos),
           step, t, matrix ? L : v, H5T_NATIVE_DOUBLE);
  }
  if (want(velocities_every_, "particles/all/velocity"))
    append(series("particles/all/velocity", H5T_IEEE_F64LE, n3, velocity_unit_, true), step, t, st.velocity.data(),
           H5T_NATIVE_DOUBLE);
  if (want(forces_every_, "particles/all/force") && !final_frame) {
    const std::vector<Vec3d>& f = frame.forces;
    if (f.size() == n_)
      append(series("particles/all/force", H5T_IEEE_F64LE, n3, force_unit_, true), step, t, f.data(),
             H5T_NATIVE_DOUBLE);
  }
  if (want(observables_every_, "observables/potential_energy")) {
    const Observables& o = frame.observables;
    const double T = temperature(o, dof_, cfg_.model.units.kB);
    const double P = cfg_.model.units.pressure_out * pressure(o, st.box.periodic ? st.box.volume() : 0.0);
    const double tot = o.total();
    auto put = [&](const char* name, double v, const std::string& unit) {
      append(series(std::string("observables/") + name, H5T_IEEE_F64LE, {}, unit, false), step, t, &v,
             H5T_NATIVE_DOUBLE);
    };
    put("potential_energy", o.potential, energy_unit_);
    put("kinetic_energy", o.kinetic, energy_unit_);
    put("total_energy", tot, energy_unit_);
    put("temperature", T, temperature_unit_);
    put("pressure", P, pressure_unit_);
  }
}

H5mdWriter::Pending::Pending(const FrameParts& f, bool velocities)
    : observables(f.observables), forces(f.forces), view{state, observables, f.time, forces, f.first_step} {
  state.box = f.state.box;
  state.step = f.state.step;
  state.position = f.state.position;
  state.image = f.state.image;
  if (velocities) state.velocity = f.state.velocity;
}

std::string H5mdWriter::take_unreported_error() {
  {
    std::lock_guard<std::mutex> l(pending_mutex_);
    if (!write_error_.empty()) {
      std::string e;
      e.swap(write_error_);
      return e;
    }
  }
  const std::string timer_error = flusher_.take_error();
  if (timer_error.empty()) return "";
  return timed_flush_error(timer_error);
}

void H5mdWriter::observe(const RunContext& ctx, const Frame& frame) {
  // Forces where a force frame is due, read from the backend here (on the run's thread).
  std::vector<Vec3d> forces;
  if (forces_every_ > 0 && due(frame.state.step, forces_every_, ctx.first_step)) forces = ctx.backend.forces();
  const FrameParts parts{frame.state, frame.observables, frame.time, forces, ctx.first_step};
  if (!writer_.joinable()) {  // flush_seconds 0: written and flushed here
    h5::LibraryLock lock(h5::library_mutex());
    guarded("writing a frame", [&] {
      write_frame(parts, false);
      maybe_flush();
    });
    return;
  }
  // One frame at a time: the one before is written (or failed) before this one is handed over,
  // so a failure stops the run at the next frame, as it did when frames were written here, and
  // the last good state is never beyond the file's last whole frame. (Frames far apart lose
  // nothing by it: the last one was written while the run went on to this one.)
  {
    std::unique_lock<std::mutex> l(pending_mutex_);
    pending_changed_.wait(l, [&] { return !pending_ && !writing_; });
  }
  const std::string error = take_unreported_error();  // reported once, here
  if (!error.empty()) throw std::runtime_error(error);
  if (failed_) return;
  auto p = std::make_unique<Pending>(parts, velocities_every_ > 0);
  flusher_.mark_unflushed();  // flush_seconds counts from here
  {
    std::lock_guard<std::mutex> l(pending_mutex_);
    pending_ = std::move(p);
  }
  pending_changed_.notify_all();
}

void H5mdWriter::write_pending_locked() {
  std::unique_ptr<Pending> p;
  {
    std::lock_guard<std::mutex> l(pending_mutex_);
    if (!pending_) return;
    p = std::move(pending_);
    writing_ = true;
  }
  std::string error;
  try {
    guarded("writing a frame", [&] {
      write_frame(p->view, false);
      maybe_flush();
    });
  } catch (const std::exception& e) {
    fail_locked();  // guarded() did for its own errors; also for anything else (no memory)
    error = e.what();
  }
  {
    std::lock_guard<std::mutex> l(pending_mutex_);
    if (write_error_.empty()) write_error_ = error;
    writing_ = false;
  }
  pending_changed_.notify_all();
}

void H5mdWriter::writer_loop() {
  {
    h5::LibraryLock lock(h5::library_mutex());
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);  // HDF5's error printing is set per thread
  }
  for (;;) {
    {
      std::unique_lock<std::mutex> l(pending_mutex_);
      pending_changed_.wait(l, [&] { return stop_writing_ || pending_; });
      if (!pending_) return;  // stopped, and nothing left
    }
    h5::LibraryLock lock(h5::library_mutex());
    write_pending_locked();
  }
}

void H5mdWriter::stop_writer() {
  if (!writer_.joinable()) return;
  {
    std::lock_guard<std::mutex> l(pending_mutex_);
    stop_writing_ = true;
  }
  pending_changed_.notify_all();
  writer_.join();
}

void H5mdWriter::finish(const RunContext& ctx, const Frame& frame) {
  stop_writer();  // the frames handed over are written first
  flusher_.stop();
  h5::LibraryLock lock(h5::library_mutex());
  const std::string error = take_unreported_error();
  if (!error.empty()) throw std::runtime_error(error);  // the file stays as its last flush left it
  guarded("writing the last frame", [&] {
    const std::vector<Vec3d> no_forces;  // a last frame writes none
    if (frame.state.step == ctx.last_step)
      write_frame(FrameParts{frame.state, frame.observables, frame.time, no_forces, ctx.first_step}, true);
    flush_locked();
  });
  if (!failed_) close_locked();
}

void H5mdWriter::maybe_flush() {
  const auto now = std::chrono::steady_clock::now();
  // Also flush before the frames since the last flush outgrow half the reserved space.
  if (std::chrono::duration<double>(now - last_flush_).count() >= flush_seconds_ ||
      2 * bytes_since_flush_ > reserve_bytes_)
    flush_locked();
}

void H5mdWriter::flush() {
  h5::LibraryLock lock(h5::library_mutex());
  write_pending_locked();
  // A frame that failed behind the run fails the flush before a checkpoint, so that no
  // checkpoint goes beyond the file's frames (a failure reported already does not).
  const std::string error = take_unreported_error();
  if (!error.empty()) throw std::runtime_error(error);
  flush_locked();
}

void H5mdWriter::flush_locked() {
  if (file_ < 0 || failed_) return;
  const hid_t f = static_cast<hid_t>(file_);
  flush_series_in_order();
  h5::check(H5Fflush(f, H5F_SCOPE_LOCAL), "cannot flush");
  last_flush_ = std::chrono::steady_clock::now();
  bytes_since_flush_ = 0;
  flusher_.flushed();
  // Reserve disk space past the end of the allocated file for what the next flush interval
  // writes (raw frames and the metadata of the next flush). A full disk is then found here,
  // right after a complete flush, and not half way through writing metadata, which would
  // leave a file that no longer opens.
  haddr_t eoa = 0;
  void* handle = nullptr;
  if (H5Fget_eoa(f, &eoa) < 0 || H5Fget_vfd_handle(f, H5P_DEFAULT, &handle) < 0 || !handle) {
    H5Eclear2(H5E_DEFAULT);
    return;
  }
  const int fd = *static_cast<int*>(handle);
  const int rc = posix_fallocate(fd, static_cast<off_t>(eoa), static_cast<off_t>(reserve_bytes_));
  if (rc != 0 && rc != EOPNOTSUPP && rc != EINVAL) {
    fail_locked();
    throw std::runtime_error("no room to go on writing the trajectory '" + path_ + "' (reserving " +
                             std::to_string(reserve_bytes_ >> 10) + " KiB: " + std::strerror(rc) + ")");
  }
}

// Each H5Dflush ends with the file driver writing what it flushed, so a kill between two of
// them leaves the earlier ones whole: the steps and times of every series before any value (no
// value without its step), and the positions last (no position frame without its image, box and
// velocity). H5Fflush then writes the rest (groups, the superblock).
void H5mdWriter::flush_series_in_order() {
  for (auto& [key, s] : series_) {
    if (s->linked || !s->unflushed) continue;
    h5::check(H5Dflush(s->step), "cannot flush " + key + "/step");
    if (s->time.valid()) h5::check(H5Dflush(s->time), "cannot flush " + key + "/time");
  }
  const std::string positions = "particles/all/position";
  for (auto& [key, s] : series_)
    if (key != positions && s->unflushed) h5::check(H5Dflush(s->value), "cannot flush " + key + "/value");
  auto pos = series_.find(positions);
  if (pos != series_.end() && pos->second->unflushed)
    h5::check(H5Dflush(pos->second->value), "cannot flush " + positions + "/value");
  for (auto& [key, s] : series_) s->unflushed = false;
}

void H5mdWriter::fail_locked() {
  if (failed_) return;
  failed_ = true;
  // Give back the space reserved past the file's end, so that the checkpoint of the last good
  // state, written next, finds room on a full disk. Everything the file's last flush refers to
  // lies below the end of its allocated space (eoa), which is where it is cut.
  haddr_t eoa = 0;
  void* handle = nullptr;
  if (file_ < 0 || H5Fget_eoa(static_cast<hid_t>(file_), &eoa) < 0 ||
      H5Fget_vfd_handle(static_cast<hid_t>(file_), H5P_DEFAULT, &handle) < 0 || !handle || eoa == 0) {
    H5Eclear2(H5E_DEFAULT);
    return;
  }
  const int fd = *static_cast<int*>(handle);
  // Not below the end the superblock on disk records, which a shrink of the allocated space
  // since the last flush leaves above eoa.
  eoa = std::max(eoa, h5::recorded_eoa(static_cast<hid_t>(file_)));
  struct stat st;
  if (fstat(fd, &st) == 0 && st.st_size > static_cast<off_t>(eoa) && ftruncate(fd, static_cast<off_t>(eoa)) != 0) {
    // The reservation stays; the file is still valid.
  }
  // Nothing more is written: let readers in (the abandoned handle keeps HDF5's lock otherwise,
  // as long as the process lives).
  flock(fd, LOCK_UN);
}

void H5mdWriter::close() {
  stop_writer();
  flusher_.stop();
  h5::LibraryLock lock(h5::library_mutex());
  const std::string error = take_unreported_error();
  close_locked();
  if (!error.empty()) throw std::runtime_error(error);  // (the destructor cannot say it)
}

void H5mdWriter::close_locked() {
  if (file_ < 0) return;
  if (failed_) {
    // Abandon the handles: closing would write metadata describing frames that may be half
    // on disk. The file stays as its last flush left it.
    for (auto& [k, s] : series_) {
      s->group.abandon();
      s->step.abandon();
      s->time.abandon();
      s->value.abandon();
    }
    file_ = -1;
    return;
  }
  series_.clear();
  const herr_t st = H5Fclose(static_cast<hid_t>(file_));
  file_ = -1;
  h5::check(st, "cannot close the trajectory '" + path_ + "'");
  // Give back the space reserved past the file's end (HDF5 ignores it, but it is waste).
  const hid_t f = H5Fopen(path_.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  haddr_t eoa = 0;
  if (f >= 0 && H5Fget_eoa(f, &eoa) >= 0 && eoa > 0) {
    H5Fclose(f);
    if (truncate(path_.c_str(), static_cast<off_t>(eoa)) != 0) {
      // Harmless: the file stays valid with trailing unused bytes.
    }
  } else {
    if (f >= 0) H5Fclose(f);
    H5Eclear2(H5E_DEFAULT);
  }
}

void H5mdWriter::write_grid_frame(const std::string& name, int64_t step, double time, const Grid3& grid) {
  // A grid that does not hold together is the caller's error: it leaves the file alone.
  if (grid.values.size() != grid.size())
    throw std::runtime_error("grid '" + name + "' has values that do not match its dims");
  h5::LibraryLock lock(h5::library_mutex());
  write_pending_locked();
  guarded("writing a grid frame", [&] {
    const std::string key = grid_series_path(name).substr(1);
    auto it = series_.find(key);
    if (it != series_.end() && it->second->last_step >= step) return;
    const bool fresh = it == series_.end();
    Series& s = series(key, H5T_IEEE_F64LE,
                       {static_cast<unsigned long long>(grid.dims[2]), static_cast<unsigned long long>(grid.dims[1]),
                        static_cast<unsigned long long>(grid.dims[0])},
                       grid.unit, true);
    if (fresh) {
      h5::write_attr<double>(s.value, "origin", H5T_IEEE_F64LE, {grid.origin[0], grid.origin[1], grid.origin[2]});
      h5::write_attr<double>(s.value, "spacing", H5T_IEEE_F64LE, {grid.spacing[0], grid.spacing[1], grid.spacing[2]});
      h5::write_string_attr(s.value, "axes", "value[frame][z][y][x]; origin and spacing in x, y, z order");
    }
    append(s, step, time, grid.values.data(), H5T_NATIVE_DOUBLE);
    maybe_flush();
  });
}

void H5mdWriter::write_scalar_frame(const std::string& name, int64_t step, double time, double value,
                                    const std::string& unit) {
  h5::LibraryLock lock(h5::library_mutex());
  write_pending_locked();
  guarded("writing an observable", [&] {
    const std::string key = "observables/" + name;
    auto it = series_.find(key);
    if (it != series_.end() && it->second->last_step >= step) return;
    append(series(key, H5T_IEEE_F64LE, {}, unit, false), step, time, &value, H5T_NATIVE_DOUBLE);
    maybe_flush();
  });
}

void H5mdWriter::write_grid(const std::string& name, const Grid3& grid) {
  if (grid.values.size() != grid.size())
    throw std::runtime_error("grid '" + name + "' has values that do not match its dims");
  h5::LibraryLock lock(h5::library_mutex());
  write_pending_locked();
  guarded("writing a grid", [&] {
    const hid_t f = static_cast<hid_t>(file_);
    const std::string p = grid_average_path(name);
    const std::vector<hsize_t> dims{static_cast<hsize_t>(grid.dims[2]), static_cast<hsize_t>(grid.dims[1]),
                                    static_cast<hsize_t>(grid.dims[0])};
    Handle d;
    if (h5::exists(f, p)) {
      d = Handle(h5::check_id(H5Dopen2(f, p.c_str(), H5P_DEFAULT), "cannot open " + p));
      // Same shape: overwrite in place (no freed space that later frames could reuse).
      if (h5::dims_of(d) != dims) {
        d.reset();
        h5::check(H5Ldelete(f, p.c_str(), H5P_DEFAULT), "cannot replace " + p);
      }
    }
    if (!d.valid()) {
      Handle space(H5Screate_simple(3, dims.data(), nullptr));
      Handle lcpl(H5Pcreate(H5P_LINK_CREATE));
      H5Pset_create_intermediate_group(lcpl, 1);
      d = Handle(h5::check_id(H5Dcreate2(f, p.c_str(), H5T_IEEE_F64LE, space, lcpl, H5P_DEFAULT, H5P_DEFAULT),
                              "cannot create " + p));
    }
    h5::check(H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, grid.values.data()), "cannot write " + p);
    h5::write_attr<double>(d, "origin", H5T_IEEE_F64LE, {grid.origin[0], grid.origin[1], grid.origin[2]});
    h5::write_attr<double>(d, "spacing", H5T_IEEE_F64LE, {grid.spacing[0], grid.spacing[1], grid.spacing[2]});
    if (!grid.unit.empty()) write_unit(d, grid.unit);
    h5::write_string_attr(d, "axes", "value[z][y][x]; origin and spacing in x, y, z order");
    maybe_flush();
  });
}

}  // namespace pairmd
