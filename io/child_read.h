// Reading a file in a forked child process: the HDF5 library (1.10) can crash or loop on a
// damaged file, and a crash there becomes an error message here. The H5MD and checkpoint readers
// read this way; what they read crosses a pipe as a flat byte stream.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/system_state.h"

namespace pairmd {

struct ByteWriter {
  std::string b;
  template <typename T>
  void put(const T& v) {
    b.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  template <typename T>
  void put_vec(const std::vector<T>& v) {
    put<uint64_t>(v.size());
    if (!v.empty()) b.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
  }
  void put_str(const std::string& s) {
    put<uint64_t>(s.size());
    b.append(s);
  }
  void put_state(const SystemState& s);
};

// Reads what a ByteWriter wrote; throws std::runtime_error when the bytes run short.
struct ByteReader {
  const std::string& b;
  size_t at = 0;
  void need(size_t n) {
    if (n > b.size() - at) throw std::runtime_error("short message from the reading process");
  }
  template <typename T>
  T get() {
    need(sizeof(T));
    T v;
    std::memcpy(&v, b.data() + at, sizeof v);
    at += sizeof v;
    return v;
  }
  template <typename T>
  std::vector<T> get_vec() {
    const uint64_t n = get<uint64_t>();
    if (n > (b.size() - at) / sizeof(T)) throw std::runtime_error("short message from the reading process");
    std::vector<T> v(n);
    if (n) std::memcpy(v.data(), b.data() + at, n * sizeof(T));
    at += n * sizeof(T);
    return v;
  }
  std::string get_str() {
    const uint64_t n = get<uint64_t>();
    need(n);
    std::string s = b.substr(at, n);
    at += n;
    return s;
  }
  SystemState get_state();
};

// Runs `read` in a child process forked while this process holds the HDF5 library lock (so
// that the child's copy of the library is consistent) and returns the bytes `read` returned.
// `what` names the file in messages ("'t.h5'", "checkpoint 'c.h5'"): what `read` threw comes back
// as a std::runtime_error of its message; a crash is "WHAT is damaged: the HDF5 library crashed
// reading it (signal 11)"; a child still reading after `seconds` is stopped and reported.
// nullopt when no child can be made (the caller then reads in this process).
std::optional<std::string> read_in_child(const std::string& what, const std::function<std::string()>& read,
                                         int seconds = 120);

}  // namespace pairmd
