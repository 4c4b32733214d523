// Operand descriptions shared by the providers: the GEMM and convolution operand lists and the
// launch-time check.
#include <cstdint>
#include <string>

#include "kselect/provider.h"

namespace kselect {

std::string_view OperandAccessName(OperandAccess access) {
  switch (access) {
    case OperandAccess::kRead:
      return "read";
    case OperandAccess::kWrite:
      return "write";
    case OperandAccess::kReadWrite:
      return "read_write";
  }
  return "unknown";
}

std::vector<OperandSpec> GemmOperandSpecs(const GemmProblem& p, int64_t alignment) {
  auto bytes = [&](int64_t rows, int64_t cols, DataType type) {
    return p.batch * rows * cols * DataTypeBits(type) / 8;
  };
  // C is read only when beta != 0: with beta == 0 a kernel that leaves an element unwritten is
  // caught by poisoning C first, which a read operand would forbid.
  const OperandAccess c_access = p.beta != 0.0 ? OperandAccess::kReadWrite : OperandAccess::kWrite;
  return {
      {"a", p.dtype_a, bytes(p.m, p.k, p.dtype_a), alignment, OperandAccess::kRead},
      {"b", p.dtype_b, bytes(p.k, p.n, p.dtype_b), alignment, OperandAccess::kRead},
      {"c", p.dtype_c, bytes(p.m, p.n, p.dtype_c), alignment, c_access},
  };
}

std::vector<OperandSpec> ConvOperandSpecs(const ConvProblem& p, int64_t alignment) {
  const int64_t element_bytes = DataTypeBits(p.dtype) / 8;
  const int64_t x_bytes = p.n * p.di * p.hi * p.wi * p.c * element_bytes;
  const int64_t w_bytes = p.k * p.z * p.y * p.x * (p.c / p.g) * element_bytes;
  const int64_t y_bytes = p.n * p.Do() * p.Ho() * p.Wo() * p.k * element_bytes;
  auto access = [&](ConvDirection written) {
    return p.direction == written ? OperandAccess::kWrite : OperandAccess::kRead;
  };
  return {
      {"x", p.dtype, x_bytes, alignment, access(ConvDirection::kBackwardData)},
      {"w", p.dtype, w_bytes, alignment, access(ConvDirection::kBackwardWeight)},
      {"y", p.dtype, y_bytes, alignment, access(ConvDirection::kForward)},
  };
}

Status CheckOperands(std::span<const OperandSpec> specs, const KernelOperands& operands,
                     int64_t workspace_bytes) {
  if (operands.buffers.size() != specs.size()) {
    return InvalidArgumentError("the launch takes " + std::to_string(specs.size()) +
                                " operands, got " + std::to_string(operands.buffers.size()));
  }
  for (size_t i = 0; i < specs.size(); ++i) {
    const auto address = reinterpret_cast<uintptr_t>(operands.buffers[i]);
    if (address == 0) return InvalidArgumentError("operand " + specs[i].name + " is null");
    if (specs[i].alignment > 1 && address % static_cast<uintptr_t>(specs[i].alignment) != 0) {
      return InvalidArgumentError("operand " + specs[i].name + " must be " +
                                  std::to_string(specs[i].alignment) + "-byte aligned");
    }
  }
  if (operands.workspace_bytes < workspace_bytes) {
    return InvalidArgumentError("workspace of " + std::to_string(operands.workspace_bytes) +
                                " bytes, the kernel needs " + std::to_string(workspace_bytes));
  }
  if (workspace_bytes > 0 && operands.workspace == nullptr) {
    return InvalidArgumentError("the kernel needs a workspace of " +
                                std::to_string(workspace_bytes) + " bytes, got none");
  }
  return Status::Ok();
}

}  // namespace kselect
