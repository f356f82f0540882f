#include "core/dtype.hpp"

#include "core/error.hpp"

namespace cclab {

int dtype_size(DType t) { return t == DType::f32 ? 4 : 2; }

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::f32:
      return "float";
    case DType::f16:
      return "half";
    case DType::bf16:
      return "bfloat16";
  }
  return "?";
}

std::string_view redop_name(RedOp op) {
  switch (op) {
    case RedOp::sum:
      return "sum";
    case RedOp::prod:
      return "prod";
    case RedOp::min:
      return "min";
    case RedOp::max:
      return "max";
    case RedOp::avg:
      return "avg";
  }
  return "?";
}

DType parse_dtype(std::string_view s) {
  if (s == "float" || s == "f32" || s == "float32") return DType::f32;
  if (s == "half" || s == "f16" || s == "float16") return DType::f16;
  if (s == "bfloat16" || s == "bf16") return DType::bf16;
  throw_input("unknown dtype '" + std::string(s) + "' (expected float, half or bfloat16)");
}

RedOp parse_redop(std::string_view s) {
  for (RedOp op : {RedOp::sum, RedOp::prod, RedOp::min, RedOp::max, RedOp::avg})
    if (s == redop_name(op)) return op;
  throw_input("unknown reduction '" + std::string(s) + "' (expected sum, prod, min, max or avg)");
}

}  // namespace cclab
