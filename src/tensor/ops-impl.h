// Helpers shared by the tensor op files: broadcasting iterations and argument checks.
#pragma once
#include <vector>

#include "lockstep/kernels/cpu/loops.h"
#include "lockstep/tensor/tensor.h"

namespace lockstep::detail {

// Strides of `t` viewed at rank out.rank() with stride 0 on broadcast axes.
std::vector<int64_t> broadcast_strides(const Tensor& t, const Shape& out);
// An iteration over `out` reading each operand broadcast to it.
kernels::cpu::Iteration broadcast_iteration(const Shape& out, std::initializer_list<const Tensor*> operands);
// Throws naming the op when a and b have different dtypes.
void check_same_dtype(const char* op, const Tensor& a, const Tensor& b);

// The device an op on these operands runs on: the GPU of any operand on one (host operands are copied there, as
// TF copies an op's inputs to the op's device), else the CPU. Operands on two different GPUs throw.
Device op_device(std::initializer_list<const Tensor*> operands);
// True when `device` is a GPU, which it then makes current for this thread's kernels. The GPU branch of an op
// sits inside #if LOCKSTEP_WITH_CUDA, since a build without CUDA has no kernels to call.
bool run_on_gpu(Device device);

}  // namespace lockstep::detail
