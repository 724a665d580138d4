// DType names and sizes.
#include "lockstep/core/dtype.h"

#include "lockstep/core/error.h"

namespace lockstep {

namespace {
constexpr DType kAll[] = {DType::float32, DType::bfloat16, DType::float64, DType::int64,
                          DType::int32,   DType::uint8,    DType::bool_};
}

size_t dtype_size(DType t) {
  return visit_dtype(t, [](auto v) { return sizeof(v); });
}

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::float32: return "float32";
    case DType::bfloat16: return "bfloat16";
    case DType::float64: return "float64";
    case DType::int64: return "int64";
    case DType::int32: return "int32";
    case DType::uint8: return "uint8";
    case DType::bool_: return "bool";
  }
  return "unknown";
}

DType dtype_from_name(std::string_view name) {
  for (DType t : kAll)
    if (dtype_name(t) == name) return t;
  throw ValueError(make_message("unknown dtype '", name,
                                "': use one of float32, bfloat16, float64, int64, int32, uint8, bool"));
}

bool is_floating(DType t) { return t == DType::float32 || t == DType::bfloat16 || t == DType::float64; }

}  // namespace lockstep
