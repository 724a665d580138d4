// Element types of tensors: names, sizes, and the bfloat16 storage type.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace lockstep {

enum class DType : uint8_t { float32, bfloat16, float64, int64, int32, uint8, bool_ };

// Size of one element in bytes.
size_t dtype_size(DType t);
// TensorFlow's spelling: "float32", "bfloat16", "float64", "int64", "int32", "uint8", "bool".
std::string_view dtype_name(DType t);
// Parses a TensorFlow dtype name; throws ValueError listing the valid names.
DType dtype_from_name(std::string_view name);
bool is_floating(DType t);

// bfloat16: the upper 16 bits of an IEEE float32; conversion rounds to nearest even.
struct bfloat16 {
  uint16_t bits = 0;
  bfloat16() = default;
  explicit bfloat16(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) {
      bits = static_cast<uint16_t>((u >> 16) | 0x40u);  // keep NaN a quiet NaN
    } else {
      bits = static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    }
  }
  explicit operator float() const {
    uint32_t u = static_cast<uint32_t>(bits) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
};

// C++ type for a DType, and back.
template <typename T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::float32; }
template <> constexpr DType dtype_of<bfloat16>() { return DType::bfloat16; }
template <> constexpr DType dtype_of<double>() { return DType::float64; }
template <> constexpr DType dtype_of<int64_t>() { return DType::int64; }
template <> constexpr DType dtype_of<int32_t>() { return DType::int32; }
template <> constexpr DType dtype_of<uint8_t>() { return DType::uint8; }
template <> constexpr DType dtype_of<bool>() { return DType::bool_; }

// Calls f(T{}) with T the C++ type of `t`, for all seven dtypes.
template <typename F> decltype(auto) visit_dtype(DType t, F&& f) {
  switch (t) {
    case DType::float32: return f(float{});
    case DType::bfloat16: return f(bfloat16{});
    case DType::float64: return f(double{});
    case DType::int64: return f(int64_t{});
    case DType::int32: return f(int32_t{});
    case DType::uint8: return f(uint8_t{});
    case DType::bool_: return f(bool{});
  }
  return f(float{});
}

}  // namespace lockstep
