// The key of a piece of GPU work: the bytes of every argument of every launch, field by field.
//
// A cached CUDA graph holds its kernels' arguments by value. It may be replayed only while the
// work due now would be launched with the same arguments; the key is that work written down
// (kernel, grid, block, shared memory and every argument), so a graph's validity is a comparison
// of two keys and nothing has to be listed by hand: a new buffer, setting or launch size is in
// the key the moment a kernel takes it (cuda/launcher.cuh records every launch of the step and
// the list build; scripts/check_launches.py fails on a launch that bypasses it).
//
// Arguments are recorded member by member (aggregates by structured bindings), not as raw
// object bytes: padding holds whatever the stack held and would make equal work look different.
// A struct with a C array member cannot be split this way (brace elision miscounts its fields):
// hold such arrays in a KernelArray, which is recorded element by element. A type that is
// neither a scalar, an aggregate nor a KernelArray does not compile.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "base/hd.h"

namespace pairmd {

// A fixed-size array that kernel argument structs hold by value (a plain C array member would
// defeat the field-by-field recording).
template <typename T, int N>
struct KernelArray {
  T items[N];
  PAIRMD_HD T& operator[](int k) { return items[k]; }
  PAIRMD_HD const T& operator[](int k) const { return items[k]; }
  static constexpr int size() { return N; }
};

namespace work_key_detail {

// Converts to anything: T{AnyField{}...} compiles for up to T's number of fields.
struct AnyField {
  template <typename U>
  operator U() const;
};

template <typename T, typename Indices, typename = void>
struct BraceConstructible : std::false_type {};
template <typename T, size_t... I>
struct BraceConstructible<T, std::index_sequence<I...>, std::void_t<decltype(T{((void)I, AnyField{})...})>>
    : std::true_type {};

template <typename T, size_t N>
constexpr size_t field_count_from() {
  if constexpr (N == 0) {
    return 0;
  } else if constexpr (BraceConstructible<T, std::make_index_sequence<N>>::value) {
    return N;
  } else {
    return field_count_from<T, N - 1>();
  }
}

template <typename T>
struct IsKernelArray : std::false_type {};
template <typename T, int N>
struct IsKernelArray<KernelArray<T, N>> : std::true_type {};

constexpr size_t kMaxFields = 40;

// The fields of `t`, an aggregate of N fields, as a tuple of references. A structured binding
// needs its count of names spelled out: one branch per count, in three functions of 13 counts
// each (kMaxFields - 1 in all).
template <size_t N, typename T>
auto tie_fields_1_to_13(const T& t) {
  if constexpr (N == 1) {
    const auto& [f0] = t;
    return std::tie(f0);
  } else if constexpr (N == 2) {
    const auto& [f0, f1] = t;
    return std::tie(f0, f1);
  } else if constexpr (N == 3) {
    const auto& [f0, f1, f2] = t;
    return std::tie(f0, f1, f2);
  } else if constexpr (N == 4) {
    const auto& [f0, f1, f2, f3] = t;
    return std::tie(f0, f1, f2, f3);
  } else if constexpr (N == 5) {
    const auto& [f0, f1, f2, f3, f4] = t;
    return std::tie(f0, f1, f2, f3, f4);
  } else if constexpr (N == 6) {
    const auto& [f0, f1, f2, f3, f4, f5] = t;
    return std::tie(f0, f1, f2, f3, f4, f5);
  } else if constexpr (N == 7) {
    const auto& [f0, f1, f2, f3, f4, f5, f6] = t;
    return std::tie(f0, f1, f2, f3, f4, f5, f6);
  } else if constexpr (N == 8) {
    const auto& [f0, f1, f2, f3, f4, f5, f6, f7] = t;
    return std::tie(f0, f1, f2, f3, f4, f5, f6, f7);
  } else if constexpr (N == 9) {
    const auto& [f0, f1, f2, f3, f4, f5, f6, f7, f8] = t;
    return std::tie(f0, f1, f2, f3, f4, f5, f6, f7, f8);
  } else if constexpr (N == 10) {
    const auto& [f0, f1, f2, f3, f4, f5, f6, f7, f8, f9] = t;
    return std::tie(f0, f1, f2, f3, f4, f5, f6, f7, f8, f9);
  } else if constexpr (N == 11) {
    const auto& [f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10] = t;
    return std::tie(f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10);
  } else if constexpr (N == 12) {
    const auto& [f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11] = t;
    return std::tie(f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11);
  } else if constexpr (N == 13) {
    const auto& [f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12] = t;
    return std::tie(f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12);
  }
}

template <size_t N, typename T>
auto tie_fields_14_to_26(const T& t) {
  if constexpr (N < 14) {
    return tie_fields_1_to_13<N>(t);
  } else if constexpr (N == 14) {
    const auto& [f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13] = t;
    return std::tie(f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13);
  } else if constexpr (N == 15) {
    const auto& [f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14] = t;
    return std::tie(f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14);
  } else if constexpr (N == 16) {
    const auto& [f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15] = t;
    return std::tie(f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15);
  } else if constexpr (N == 17) {
    const auto& [f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16] = t;
    return std::tie(f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16);
  } else if constexpr (N == 18) {
    const auto& [f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17] = t;
    return std::tie(f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17);
  } else if constexpr (N == 19) {
    const auto& [f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17, f18] = t;
    return std::tie(f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17, f18);
  } else if constexpr (N == 20) {
    const auto& [f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17, f18, f19] = t;
    return std::tie(f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17, f18, f19);
  } else if constexpr (N == 21) {
    const auto& [f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17, f18, f19, f20] = t;
    return std::tie(f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17, f18, f19, f20);
  } else if constexpr (N == 22) {
    const auto& [f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17, f18, f19, f20, f21] =
        t;
    return std::tie(f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17, f18, f19, f20, f21);
  } else if constexpr (N == 23) {
    const auto& [f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17, f18, f19, f20, f21,
                 f22] = t;
    return std::tie(f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17, f18, f19, f20, f21,
                    f22);
  } else if constexpr (N == 24) {
    const auto& [f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17, f18, f19, f20, f21,
                 f22, f23] = t;
    return std::tie(f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17, f18, f19, f20, f21,
                    f22, f23);
  } else if constexpr (N == 25) {
    const auto& [f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17, f18, f19, f20, f21,
                 f22, f23, f24] = t;
    return std::tie(f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17, f18, f19, f20, f21,
                    f22, f23, f24);
  } else if constexpr (N == 26) {
    const auto& [f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17, f18, f19, f20, f21,
                 f22, f23, f24, f25] = t;
    return std::tie(f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17, f18, f19, f20, f21,
                    f22, f23, f24, f25);
  }
}

template <size_t N, typename T>
auto tie_fields_27_to_39(const T& t) {
  if constexpr (N < 27) {
    return tie_fields_14_to_26<N>(t);
  } else if constexpr (N == 27) {
    const auto& [f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17, f18, f19, f20, f21,
                 f22, f23, f24, f25, f26] = t;
    return std::tie(f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17, f18, f19, f20, f21,
                    f22, f23, f24, f25, f26);
  } else if constexpr (N == 28) {
    const auto& [f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17, f18, f19, f20, f21,
                 f22, f23, f24, f25, f26, f27] = t;
    return std::tie(f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17, f18, f19, f20, f21,
                    f22, f23, f24, f25, f26, f27);
  } else if constexpr (N == 29) {
    const auto& [f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17, f18, f19, f20, f21,
                 f22, f23, f24, f25, f26, f27, f28] = t;
    return std::tie(f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17, f18, f19, f20, f21,
                    f22, f23, f24, f25, f26, f27, f28);
  } else if constexpr (N == 30) {
    const auto& [f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17, f18, f19, f20, f21,
                 f22, f23, f24, f25, f26, f27, f28, f29] = t;
    return std::tie(f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17, f18, f19, f20, f21,
                    f22, f23, f24, f25, f26, f27, f28, f29);
  } else if constexpr (N == 31) {
    const auto& [f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17, f18, f19, f20, f21,
                 f22, f23, f24, f25, f26, f27, f28, f29, f30] = t;
    return std::tie(f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17, f18, f19, f20, f21,
                    f22, f23, f24, f25, f26, f27, f28, f29, f30);
  } else if constexpr (N == 32) {
    const auto& [f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17, f18, f19, f20, f21,
                 f22, f23, f24, f25, f26, f27, f28, f29, f30, f31] = t;
    return std::tie(f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17, f18, f19, f20, f21,
                    f22, f23, f24, f25, f26, f27, f28, f29, f30, f31);
  } else if constexpr (N == 33) {
    const auto& [f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17, f18, f19, f20, f21,
                 f22, f23, f24, f25, f26, f27, f28, f29, f30, f31, f32] = t;
    return std::tie(f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17, f18, f19, f20, f21,
                    f22, f23, f24, f25, f26, f27, f28, f29, f30, f31, f32);
  } else if constexpr (N == 34) {
    const auto& [f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17, f18, f19, f20, f21,
                 f22, f23, f24, f25, f26, f27, f28, f29, f30, f31, f32, f33] = t;
    return std::tie(f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17, f18, f19, f20, f21,
                    f22, f23, f24, f25, f26, f27, f28, f29, f30, f31, f32, f33);
  } else if constexpr (N == 35) {
    const auto& [f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17, f18, f19, f20, f21,
                 f22, f23, f24, f25, f26, f27, f28, f29, f30, f31, f32, f33, f34] = t;
    return std::tie(f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17, f18, f19, f20, f21,
                    f22, f23, f24, f25, f26, f27, f28, f29, f30, f31, f32, f33, f34);
  } else if constexpr (N == 36) {
    const auto& [f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17, f18, f19, f20, f21,
                 f22, f23, f24, f25, f26, f27, f28, f29, f30, f31, f32, f33, f34, f35] = t;
    return std::tie(f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17, f18, f19, f20, f21,
                    f22, f23, f24, f25, f26, f27, f28, f29, f30, f31, f32, f33, f34, f35);
  } else if constexpr (N == 37) {
    const auto& [f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17, f18, f19, f20, f21,
                 f22, f23, f24, f25, f26, f27, f28, f29, f30, f31, f32, f33, f34, f35, f36] = t;
    return std::tie(f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17, f18, f19, f20, f21,
                    f22, f23, f24, f25, f26, f27, f28, f29, f30, f31, f32, f33, f34, f35, f36);
  } else if constexpr (N == 38) {
    const auto& [f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17, f18, f19, f20, f21,
                 f22, f23, f24, f25, f26, f27, f28, f29, f30, f31, f32, f33, f34, f35, f36, f37] = t;
    return std::tie(f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17, f18, f19, f20, f21,
                    f22, f23, f24, f25, f26, f27, f28, f29, f30, f31, f32, f33, f34, f35, f36, f37);
  } else if constexpr (N == 39) {
    const auto& [f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17, f18, f19, f20, f21,
                 f22, f23, f24, f25, f26, f27, f28, f29, f30, f31, f32, f33, f34, f35, f36, f37, f38] = t;
    return std::tie(f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17, f18, f19, f20, f21,
                    f22, f23, f24, f25, f26, f27, f28, f29, f30, f31, f32, f33, f34, f35, f36, f37, f38);
  }
}

template <typename T, typename G>
void for_each_field(const T& t, G&& g) {
  constexpr size_t n = field_count_from<T, kMaxFields>();
  static_assert(n > 0, "a kernel argument type with no fields the key can see");
  static_assert(n < kMaxFields, "a kernel argument type with more fields than the key's bindings");
  std::apply([&g](const auto&... field) { (g(field), ...); }, tie_fields_27_to_39<n>(t));
}

}  // namespace work_key_detail

class WorkKey {
 public:
  void clear() { bytes_.clear(); }
  bool empty() const { return bytes_.empty(); }
  size_t size() const { return bytes_.size(); }
  bool operator==(const WorkKey& o) const { return bytes_ == o.bytes_; }
  bool operator!=(const WorkKey& o) const { return !(*this == o); }

  // Appends v: scalars (numbers, enums, pointers) as their bytes, arrays and KernelArrays element
  // by element, aggregates field by field.
  template <typename T>
  void add(const T& v) {
    using U = std::remove_cv_t<T>;
    if constexpr (std::is_arithmetic_v<U> || std::is_enum_v<U> || std::is_pointer_v<U> || std::is_member_pointer_v<U> ||
                  std::is_null_pointer_v<U>) {
      add_bytes(&v, sizeof v);
    } else if constexpr (std::is_array_v<U>) {
      for (const auto& e : v) add(e);
    } else if constexpr (work_key_detail::IsKernelArray<U>::value) {
      for (int k = 0; k < U::size(); ++k) add(v[k]);
    } else {
      static_assert(std::is_aggregate_v<U>, "a kernel argument must be a scalar, an aggregate or a KernelArray");
      work_key_detail::for_each_field(v, [this](const auto& f) { add(f); });
    }
  }
  void add_bytes(const void* p, size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    bytes_.insert(bytes_.end(), b, b + n);
  }

 private:
  std::vector<unsigned char> bytes_;
};

}  // namespace pairmd
