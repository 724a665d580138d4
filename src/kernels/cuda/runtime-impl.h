// What the .cu files share: the current device's stream and library handles, error checks that name the device and
// the call, and launch geometry.
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <cstdint>

#include "lockstep/core/error.h"
#include "lockstep/kernels/cuda/runtime.h"

namespace lockstep::kernels::cuda::detail {

// The current device's stream (non-blocking, created on first use, never destroyed).
cudaStream_t stream();
// cuBLAS's entry points that lockstep uses, from libcublas loaded on first use: linked at start-up, its
// initialisation cost every process about 60 ms, GPU or not, and the CPU test suite starts some 1500 of them.
struct CublasApi {
  decltype(&cublasCreate_v2) create;
  decltype(&cublasSetStream_v2) set_stream;
  decltype(&cublasSetMathMode) set_math_mode;
  decltype(&cublasSgemmStridedBatched) sgemm_strided_batched;
  decltype(&cublasDgemmStridedBatched) dgemm_strided_batched;
  decltype(&cublasGetStatusString) status_string;
};
const CublasApi& cublas_api();
// The calling thread's cuBLAS and cuDNN handles for the current device, bound to stream(). cuBLAS runs in
// CUBLAS_DEFAULT_MATH with TF32 off (CUBLAS_PEDANTIC_MATH is not needed: float32 GEMMs use FMA, not tensor cores).
cublasHandle_t cublas();
cudnnHandle_t cudnn();

// Throw lockstep::Error ("CUDA error on /gpu:0 in <call>: <reason>"); out-of-memory becomes ResourceExhaustedError.
void check(cudaError_t status, const char* call);
void check(cublasStatus_t status, const char* call);
void check(cudnnStatus_t status, const char* call);
// check(cudaGetLastError()) after a kernel launch.
void check_launch(const char* kernel);

#define LS_CUDA(call) ::lockstep::kernels::cuda::detail::check((call), #call)

// Grid size for n elements at `threads` per block, capped (grid-stride loops cover the rest).
inline unsigned blocks_for(int64_t n, unsigned threads = 256) {
  int64_t b = (n + threads - 1) / threads;
  if (b < 1) b = 1;
  if (b > 65535 * 8) b = 65535 * 8;
  return static_cast<unsigned>(b);
}

// Scratch device memory for the current device from the caching allocator, freed (to the cache) on destruction.
class Scratch {
 public:
  explicit Scratch(size_t bytes);
  ~Scratch();
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  void* get() const { return p_; }
  template <typename T> T* as() const { return static_cast<T*>(p_); }

 private:
  void* p_;
  size_t bytes_;
  int device_;
};

}  // namespace lockstep::kernels::cuda::detail
