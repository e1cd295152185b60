// Small helpers over the HDF5 C API shared by the trajectory writer, its reader and the
// checkpoints: an owning handle, quiet error handling with one readable message, and the few
// dataset/attribute shapes pairmd writes. Internal to io/ (not a general wrapper), but for the
// lock and quiet_library, which every command that reads or writes HDF5 files takes.
#pragma once

#include <hdf5.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

namespace pairmd::h5 {

// Every HDF5 call in the process goes through this one lock (the trajectory's flush timer runs
// on a thread of its own, replicas of an ensemble on threads of theirs): a build without thread
// safety allows no concurrent calls, and a thread-safe one (Debian's, H5TS) keeps a lock of its
// own that a forked child (io/child_read.cpp forks under this lock) inherits held if another
// thread was inside HDF5 then, and waits on forever. Recursive, so a locked function may call
// another.
inline std::recursive_mutex& library_mutex() {
  static std::recursive_mutex m;
  return m;
}
using LibraryLock = std::lock_guard<std::recursive_mutex>;

// A command's (or a replica thread's) set-up: HDF5 prints no errors of its own (pairmd reports
// them), and with `no_exit_handler` flushes no files at exit (a trajectory whose write failed
// must not be flushed half-written). Under the lock: these calls, unlocked in each replica
// thread, raced another replica's fork and hung its child (`replicas.nompi`, 2026-11-27).
inline void quiet_library(bool no_exit_handler) {
  LibraryLock lock(library_mutex());
  if (no_exit_handler) H5dont_atexit();
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
}

// Owns one HDF5 identifier of any kind and releases it (H5Idec_ref closes at zero references).
class Handle {
 public:
  Handle() = default;
  explicit Handle(hid_t id) : id_(id) {}
  ~Handle() { reset(); }
  Handle(Handle&& o) noexcept : id_(o.id_) { o.id_ = H5I_INVALID_HID; }
  Handle& operator=(Handle&& o) noexcept {
    if (this != &o) {
      reset();
      id_ = o.id_;
      o.id_ = H5I_INVALID_HID;
    }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;

  hid_t get() const { return id_; }
  operator hid_t() const { return id_; }
  bool valid() const { return id_ >= 0; }
  void reset() {
    if (id_ >= 0 && H5Iis_valid(id_) > 0) H5Idec_ref(id_);
    id_ = H5I_INVALID_HID;
  }
  // Forget the identifier without closing it (a failed trajectory is left as it is on disk).
  void abandon() { id_ = H5I_INVALID_HID; }

 private:
  hid_t id_ = H5I_INVALID_HID;
};

// Turns off HDF5's printing of its error stack to stderr; pairmd reports one message instead.
inline void quiet() { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }

// The most specific message on HDF5's current error stack ("" when empty), e.g.
// "truncated file: eof = 1000, sblock->base_addr = 0, stored_eof = 5000".
inline std::string last_error() {
  struct Msgs {
    std::string outer, inner;
  } msgs;
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_DOWNWARD,
      [](unsigned n, const H5E_error2_t* e, void* data) -> herr_t {
        auto* m = static_cast<Msgs*>(data);
        const std::string d = e->desc ? e->desc : "";
        if (n == 0) m->outer = d;
        if (!d.empty()) m->inner = d;
        return 0;
      },
      &msgs);
  H5Eclear2(H5E_DEFAULT);
  if (msgs.inner.empty()) return msgs.outer;
  if (msgs.outer.empty() || msgs.outer == msgs.inner) return msgs.inner;
  return msgs.outer + ": " + msgs.inner;
}

// Throws std::runtime_error("<what>: <HDF5 detail>") when `status` is negative.
inline void check(herr_t status, const std::string& what) {
  if (status < 0) {
    const std::string detail = last_error();
    throw std::runtime_error(detail.empty() ? what : what + " (" + detail + ")");
  }
}
inline hid_t check_id(hid_t id, const std::string& what) {
  if (id < 0) check(-1, what);
  return id;
}

inline bool exists(hid_t loc, const std::string& path) {
  // H5Lexists on "a/b" needs "a" to exist: walk the components.
  std::string sofar;
  size_t start = path[0] == '/' ? 1 : 0;
  if (start == 1) sofar = "/";
  while (start <= path.size()) {
    const size_t slash = path.find('/', start);
    const std::string part = path.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    if (part.empty()) break;
    sofar += (sofar.empty() || sofar == "/" ? "" : "/") + part;
    if (H5Lexists(loc, sofar.c_str(), H5P_DEFAULT) <= 0) {
      H5Eclear2(H5E_DEFAULT);
      return false;
    }
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  return true;
}

inline Handle open_group(hid_t loc, const std::string& path) {
  return Handle(check_id(H5Gopen2(loc, path.c_str(), H5P_DEFAULT), "cannot open group '" + path + "'"));
}
inline Handle create_group(hid_t loc, const std::string& path) {
  Handle lcpl(H5Pcreate(H5P_LINK_CREATE));
  H5Pset_create_intermediate_group(lcpl, 1);
  return Handle(
      check_id(H5Gcreate2(loc, path.c_str(), lcpl, H5P_DEFAULT, H5P_DEFAULT), "cannot create group '" + path + "'"));
}
inline Handle open_or_create_group(hid_t loc, const std::string& path) {
  return exists(loc, path) ? open_group(loc, path) : create_group(loc, path);
}

// A fixed-length string type of `n` bytes (at least 1), NUL-padded.
inline Handle string_type(size_t n) {
  Handle t(H5Tcopy(H5T_C_S1));
  H5Tset_size(t, n == 0 ? 1 : n);
  H5Tset_strpad(t, H5T_STR_NULLPAD);
  return t;
}

// Variable-length UTF-8 strings: only for reading files that hold them (h5py writes str
// attributes so).
inline Handle vlen_string_type() {
  Handle t(H5Tcopy(H5T_C_S1));
  H5Tset_size(t, H5T_VARIABLE);
  H5Tset_cset(t, H5T_CSET_UTF8);
  return t;
}

// Attributes are written as H5MD asks (h5md.nongnu.org: "fixed-length string datatype", the
// unit attribute "using the ASCII character set"): fixed-length, NUL-padded, ASCII; UTF-8 where
// the text is not ASCII (a user name, a path). h5py reads them as bytes.
inline Handle fixed_string_type(const std::vector<std::string>& values) {
  size_t n = 1;
  bool ascii = true;
  for (const std::string& v : values) {
    n = std::max(n, v.size());
    for (unsigned char c : v) ascii = ascii && c < 0x80;
  }
  Handle t = string_type(n);
  H5Tset_cset(t, ascii ? H5T_CSET_ASCII : H5T_CSET_UTF8);
  return t;
}

inline void write_string_attr(hid_t obj, const char* name, const std::string& value) {
  Handle t = fixed_string_type({value});
  Handle space(H5Screate(H5S_SCALAR));
  if (H5Aexists(obj, name) > 0) H5Adelete(obj, name);
  Handle a(check_id(H5Acreate2(obj, name, t, space, H5P_DEFAULT, H5P_DEFAULT),
                    std::string("cannot create attribute ") + name));
  std::vector<char> buf(H5Tget_size(t), '\0');
  std::memcpy(buf.data(), value.data(), value.size());
  check(H5Awrite(a, t, buf.data()), std::string("cannot write attribute ") + name);
}

inline void write_string_array_attr(hid_t obj, const char* name, const std::vector<std::string>& values) {
  Handle t = fixed_string_type(values);
  const size_t n = H5Tget_size(t);
  std::vector<char> buf(n * values.size(), '\0');
  for (size_t k = 0; k < values.size(); ++k) std::memcpy(buf.data() + k * n, values[k].data(), values[k].size());
  const hsize_t dims[1] = {values.size()};
  Handle space(H5Screate_simple(1, dims, nullptr));
  if (H5Aexists(obj, name) > 0) H5Adelete(obj, name);
  Handle a(check_id(H5Acreate2(obj, name, t, space, H5P_DEFAULT, H5P_DEFAULT),
                    std::string("cannot create attribute ") + name));
  if (!values.empty()) check(H5Awrite(a, t, buf.data()), std::string("cannot write attribute ") + name);
}

// Reads a string-array attribute (fixed or variable length); throws on anything else.
inline std::vector<std::string> read_string_array_attr(hid_t obj, const char* name, size_t max_count) {
  Handle a(check_id(H5Aopen(obj, name, H5P_DEFAULT), std::string("cannot open attribute ") + name));
  Handle t(check_id(H5Aget_type(a), std::string("cannot read attribute ") + name));
  Handle sp(check_id(H5Aget_space(a), std::string("cannot read attribute ") + name));
  const hssize_t cnt = H5Sget_simple_extent_npoints(sp);
  if (H5Tget_class(t) != H5T_STRING || cnt < 0 || static_cast<size_t>(cnt) > max_count)
    throw std::runtime_error(std::string("attribute ") + name + " is not a list of strings");
  std::vector<std::string> out;
  if (cnt == 0) return out;
  if (H5Tis_variable_str(t) > 0) {
    Handle mem = vlen_string_type();
    H5Tset_cset(mem, H5Tget_cset(t));  // HDF5 does not convert between ASCII and UTF-8
    std::vector<char*> ptrs(cnt, nullptr);
    check(H5Aread(a, mem, ptrs.data()), std::string("cannot read attribute ") + name);
    for (char* p : ptrs) out.emplace_back(p ? p : "");
    H5Dvlen_reclaim(mem, sp, H5P_DEFAULT, ptrs.data());
    return out;
  }
  const size_t sz = H5Tget_size(t);
  if (sz == 0 || sz > 4096) throw std::runtime_error(std::string("attribute ") + name + " has implausible strings");
  std::vector<char> buf(static_cast<size_t>(cnt) * sz, '\0');
  Handle mem = string_type(sz);
  H5Tset_cset(mem, H5Tget_cset(t));
  check(H5Aread(a, mem, buf.data()), std::string("cannot read attribute ") + name);
  for (hssize_t k = 0; k < cnt; ++k) out.emplace_back(buf.data() + k * sz, strnlen(buf.data() + k * sz, sz));
  return out;
}

template <typename T>
inline void write_attr(hid_t obj, const char* name, hid_t type, const std::vector<T>& values) {
  const hsize_t dims[1] = {values.size()};
  Handle space(values.size() == 1 ? H5Screate(H5S_SCALAR) : H5Screate_simple(1, dims, nullptr));
  if (H5Aexists(obj, name) > 0) H5Adelete(obj, name);
  Handle a(check_id(H5Acreate2(obj, name, type, space, H5P_DEFAULT, H5P_DEFAULT),
                    std::string("cannot create attribute ") + name));
  check(H5Awrite(a, type, values.data()), std::string("cannot write attribute ") + name);
}

// A whole small dataset in one call (time-independent data). `dims` empty: a scalar.
inline void write_dataset(hid_t loc, const std::string& name, hid_t file_type, hid_t mem_type,
                          const std::vector<hsize_t>& dims, const void* data) {
  if (exists(loc, name)) check(H5Ldelete(loc, name.c_str(), H5P_DEFAULT), "cannot replace '" + name + "'");
  Handle space(dims.empty() ? H5Screate(H5S_SCALAR)
                            : H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr));
  Handle lcpl(H5Pcreate(H5P_LINK_CREATE));
  H5Pset_create_intermediate_group(lcpl, 1);
  Handle d(check_id(H5Dcreate2(loc, name.c_str(), file_type, space, lcpl, H5P_DEFAULT, H5P_DEFAULT),
                    "cannot create dataset '" + name + "'"));
  size_t total = 1;
  for (hsize_t x : dims) total *= x;
  if (total > 0)
    check(H5Dwrite(d, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data), "cannot write dataset '" + name + "'");
}

inline void write_string_dataset(hid_t loc, const std::string& name, const std::string& value) {
  Handle t = fixed_string_type({value});
  write_dataset(loc, name, t, t, {}, value.empty() ? "" : value.data());
}

// Dimensions of a dataset or attribute's dataspace.
inline std::vector<hsize_t> dims_of_space(hid_t space) {
  const int rank = H5Sget_simple_extent_ndims(space);
  if (rank < 0) check(-1, "cannot read a dataspace");
  std::vector<hsize_t> d(rank);
  if (rank > 0) H5Sget_simple_extent_dims(space, d.data(), nullptr);
  return d;
}
inline std::vector<hsize_t> dims_of(hid_t dataset) {
  Handle space(check_id(H5Dget_space(dataset), "cannot read a dataset's shape"));
  return dims_of_space(space);
}

// Reads a string dataset or attribute (fixed or variable length). `is_attr` picks the kind.
inline std::string read_string(hid_t obj, bool is_attr, const std::string& what) {
  Handle type(check_id(is_attr ? H5Aget_type(obj) : H5Dget_type(obj), "cannot read the type of " + what));
  if (H5Tget_class(type) != H5T_STRING) throw std::runtime_error(what + " is not a string");
  Handle space(check_id(is_attr ? H5Aget_space(obj) : H5Dget_space(obj), "cannot read the shape of " + what));
  if (H5Sget_simple_extent_npoints(space) != 1) throw std::runtime_error(what + " is not a single string");
  if (H5Tis_variable_str(type) > 0) {
    Handle mem = vlen_string_type();
    H5Tset_cset(mem, H5Tget_cset(type));  // HDF5 does not convert between ASCII and UTF-8 (unit attributes are ASCII)
    char* p = nullptr;
    check(is_attr ? H5Aread(obj, mem, &p) : H5Dread(obj, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, &p),
          "cannot read " + what);
    std::string s = p ? p : "";
    H5free_memory(p);
    return s;
  }
  const size_t n = H5Tget_size(type);
  if (n == 0 || n > (size_t(1) << 30)) throw std::runtime_error(what + " has an implausible size");
  std::vector<char> buf(n + 1, '\0');
  Handle mem = string_type(n);
  H5Tset_cset(mem, H5Tget_cset(type));
  check(is_attr ? H5Aread(obj, mem, buf.data()) : H5Dread(obj, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.data()),
        "cannot read " + what);
  return std::string(buf.data(), strnlen(buf.data(), n));
}

}  // namespace pairmd::h5
