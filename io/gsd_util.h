// Small helpers around the GSD reference C library (gsd/gsd.h, built from GSD's PyPI source
// distribution, see CMakeLists.txt): error text, and reading one chunk of a HOOMD frame with
// the schema's fallback to frame 0.
#pragma once

#include <gsd/gsd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace pairmd::gsdio {

inline std::string error_text(int rc) {
  switch (rc) {
    case GSD_SUCCESS:
      return "success";
    case GSD_ERROR_IO:
      return std::string("I/O error: ") + std::strerror(errno);
    case GSD_ERROR_INVALID_ARGUMENT:
      return "invalid argument";
    case GSD_ERROR_NOT_A_GSD_FILE:
      return "not a GSD file";
    case GSD_ERROR_INVALID_GSD_FILE_VERSION:
      return "a GSD file version this library cannot read";
    case GSD_ERROR_FILE_CORRUPT:
      return "the file is corrupt";
    case GSD_ERROR_MEMORY_ALLOCATION_FAILED:
      return "out of memory";
    case GSD_ERROR_NAMELIST_FULL:
      return "the file's list of chunk names is full";
    case GSD_ERROR_FILE_MUST_BE_WRITABLE:
      return "the file is not open for writing";
    case GSD_ERROR_FILE_MUST_BE_READABLE:
      return "the file is not open for reading";
  }
  return "GSD error " + std::to_string(rc);
}

inline void check(int rc, const std::string& what) {
  if (rc != GSD_SUCCESS) throw std::runtime_error(what + ": " + error_text(rc));
}

// The chunk `name` of `frame`, or (HOOMD schema: data absent from a frame is frame 0's) of
// frame 0; nullptr when neither has it.
inline const gsd_index_entry* find_chunk(gsd_handle& h, uint64_t frame, const char* name) {
  const gsd_index_entry* e = gsd_find_chunk(&h, frame, name);
  if (!e && frame != 0) e = gsd_find_chunk(&h, 0, name);
  return e;
}

// Reads a chunk as T (the chunk must hold `type` elements, N x M of them). Throws naming the
// chunk when its type or shape is not what is asked.
template <typename T>
std::vector<T> read_chunk(gsd_handle& h, const gsd_index_entry* e, gsd_type type, uint64_t rows, uint32_t cols,
                          const std::string& name) {
  if (e->type != type || gsd_sizeof_type(type) != sizeof(T))
    throw std::runtime_error("chunk " + name + " has an unexpected data type (" + std::to_string(e->type) + ")");
  if ((rows != 0 && e->N != rows) || e->M != cols)
    throw std::runtime_error("chunk " + name + " is " + std::to_string(e->N) + " x " + std::to_string(e->M) +
                             ", expected " + (rows ? std::to_string(rows) : std::string("N")) + " x " +
                             std::to_string(cols));
  if (e->N > (uint64_t(1) << 34) / cols) throw std::runtime_error("chunk " + name + " is implausibly large");
  std::vector<T> v(e->N * e->M);
  if (!v.empty()) check(gsd_read_chunk(&h, v.data(), e), "cannot read chunk " + name);
  return v;
}

// HOOMD stores names (particles/types, bonds/types) as an int8 array of N rows of M bytes,
// each row NUL-padded.
inline std::vector<std::string> read_names(gsd_handle& h, const gsd_index_entry* e, const std::string& name) {
  if (e->type != GSD_TYPE_INT8 && e->type != GSD_TYPE_UINT8 && e->type != GSD_TYPE_CHARACTER)
    throw std::runtime_error("chunk " + name + " is not a list of names");
  if (e->N > 1000000 || e->M > 4096) throw std::runtime_error("chunk " + name + " is implausibly large");
  std::vector<char> buf(e->N * e->M);
  if (!buf.empty()) check(gsd_read_chunk(&h, buf.data(), e), "cannot read chunk " + name);
  std::vector<std::string> out;
  for (uint64_t i = 0; i < e->N; ++i) out.emplace_back(buf.data() + i * e->M, strnlen(buf.data() + i * e->M, e->M));
  return out;
}

inline std::vector<int8_t> pack_names(const std::vector<std::string>& names, uint32_t* width) {
  size_t m = 1;
  for (const std::string& n : names) m = std::max(m, n.size() + 1);
  std::vector<int8_t> buf(names.size() * m, 0);
  for (size_t i = 0; i < names.size(); ++i) std::memcpy(buf.data() + i * m, names[i].data(), names[i].size());
  *width = static_cast<uint32_t>(m);
  return buf;
}

}  // namespace pairmd::gsdio
