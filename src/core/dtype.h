// Element types, their sizes and names, and the bfloat16 storage type.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>

namespace vt {

enum class DType : uint8_t { f64, f32, bf16, i32, i64, u8 };

/// Brain float: the top 16 bits of an IEEE float. Converts with round-to-nearest-even, NaN kept quiet.
struct bf16 {
  uint16_t bits = 0;
  bf16() = default;
  explicit bf16(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) {
      bits = static_cast<uint16_t>((u >> 16) | 0x40u);
    } else {
      u += 0x7fffu + ((u >> 16) & 1u);
      bits = static_cast<uint16_t>(u >> 16);
    }
  }
  operator float() const {
    uint32_t u = static_cast<uint32_t>(bits) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
};

size_t dtype_size(DType t);
const char* dtype_name(DType t);
bool is_floating(DType t);

// clang-format off
template <typename T> struct dtype_of;
template <> struct dtype_of<double> { static constexpr DType value = DType::f64; };
template <> struct dtype_of<float> { static constexpr DType value = DType::f32; };
template <> struct dtype_of<bf16> { static constexpr DType value = DType::bf16; };
template <> struct dtype_of<int32_t> { static constexpr DType value = DType::i32; };
template <> struct dtype_of<int64_t> { static constexpr DType value = DType::i64; };
template <> struct dtype_of<uint8_t> { static constexpr DType value = DType::u8; };
// clang-format on

}  // namespace vt

// clang-format off
// Runs the body with `scalar_t` bound to the C++ type of a floating dtype (f32/f64 compute types).
#define VT_DISPATCH_FLOAT(dtype, opname, ...)                                                   \
  [&] {                                                                                         \
    switch (dtype) {                                                                            \
      case ::vt::DType::f32: { using scalar_t = float; return __VA_ARGS__(); }                  \
      case ::vt::DType::f64: { using scalar_t = double; return __VA_ARGS__(); }                 \
      default: VT_FAIL("[", opname, "] needs f32 or f64, got ", ::vt::dtype_name(dtype));       \
    }                                                                                           \
  }()

// Same for every dtype.
#define VT_DISPATCH_ALL(dtype, opname, ...)                                                     \
  [&] {                                                                                         \
    switch (dtype) {                                                                            \
      case ::vt::DType::f64: { using scalar_t = double; return __VA_ARGS__(); }                 \
      case ::vt::DType::f32: { using scalar_t = float; return __VA_ARGS__(); }                  \
      case ::vt::DType::bf16: { using scalar_t = ::vt::bf16; return __VA_ARGS__(); }            \
      case ::vt::DType::i32: { using scalar_t = int32_t; return __VA_ARGS__(); }                \
      case ::vt::DType::i64: { using scalar_t = int64_t; return __VA_ARGS__(); }                \
      case ::vt::DType::u8: { using scalar_t = uint8_t; return __VA_ARGS__(); }                 \
    }                                                                                           \
    VT_FAIL("[", opname, "] unknown dtype");                                                    \
  }()
// clang-format on
