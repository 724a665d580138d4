// The GPU runtime: device discovery, one non-blocking stream per device, per-thread cuBLAS and cuDNN handles, the
// caching allocator of device memory, copies, and the errors that name the device and the call.
//
// One stream per device keeps the allocator simple and safe: every kernel, copy and library call for a device is
// queued on its stream in program order, so a block freed by the host while kernels that use it are still queued is
// only ever reused by work queued after them.
#include <dlfcn.h>

#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include "lockstep/core/error.h"
#include "runtime-impl.h"

namespace lockstep::kernels::cuda {

namespace {

std::string device_name(int device) { return make_message("/gpu:", device); }

[[noreturn]] void fail(bool out_of_memory, const char* call, const std::string& reason) {
  int device = -1;
  cudaGetDevice(&device);
  std::string message = make_message("CUDA error on ", device_name(device), " in ", call, ": ", reason);
  if (out_of_memory) throw ResourceExhaustedError(message);
  throw RuntimeError(message);
}

// Copies from host memory up to this size go through pinned staging buffers and do not wait; larger ones wait.
constexpr size_t kMaxStagedBytes = size_t{64} << 20;
constexpr size_t kMaxStagingBytes = size_t{512} << 20;  // all staging buffers of a device together

// A pinned host buffer that a copy to the device reads from; free again once `done` has happened.
struct Staging {
  void* host;
  size_t bytes;
  cudaEvent_t done;
};

struct DeviceState {
  std::once_flag once;
  cudaStream_t stream = nullptr;
  std::mutex mutex;  // guards the allocator and the staging buffers below
  std::map<size_t, std::vector<void*>> free_blocks;
  DeviceMemoryStats stats;
  std::vector<Staging> staging;
  size_t staging_bytes = 0;
};

// Queues a copy of host memory to the device through a pinned staging buffer, so that the caller neither waits for
// the kernels queued before it nor for the copy (the source is copied into the buffer first). False when no buffer
// is free and the staging memory is at its limit: then the caller copies and waits.
bool stage_to_device(DeviceState& s, void* dst, const void* src, size_t bytes) {
  if (bytes > kMaxStagedBytes) return false;
  std::lock_guard lock(s.mutex);
  Staging* buffer = nullptr;
  for (Staging& b : s.staging)
    if (b.bytes >= bytes && cudaEventQuery(b.done) == cudaSuccess) {
      buffer = &b;
      break;
    }
  cudaGetLastError();  // cudaEventQuery's "not ready" is no error
  if (!buffer) {
    size_t size = size_t{64} << 10;
    while (size < bytes) size *= 2;
    if (s.staging_bytes + size > kMaxStagingBytes) return false;
    Staging b{nullptr, size, nullptr};
    LS_CUDA(cudaHostAlloc(&b.host, size, cudaHostAllocDefault));
    LS_CUDA(cudaEventCreateWithFlags(&b.done, cudaEventDisableTiming));
    s.staging.push_back(b);
    s.staging_bytes += size;
    buffer = &s.staging.back();
  }
  std::memcpy(buffer->host, src, bytes);
  LS_CUDA(cudaMemcpyAsync(dst, buffer->host, bytes, cudaMemcpyHostToDevice, s.stream));
  LS_CUDA(cudaEventRecord(buffer->done, s.stream));
  return true;
}

// Fixed for the process: cudaGetDeviceCount's answer does not change while it runs.
int count_devices(std::string* reason) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    if (reason) *reason = make_message("no usable CUDA device: ", cudaGetErrorString(e));
    cudaGetLastError();  // clear the sticky error of a failed probe
    return 0;
  }
  if (n == 0 && reason) *reason = "no CUDA device is visible to this process";
  return n;
}

std::vector<DeviceState>& states() {
  static auto* s = new std::vector<DeviceState>(static_cast<size_t>(device_count()));  // never destroyed
  return *s;
}

DeviceState& state(int device) {
  LS_CHECK(device >= 0 && device < device_count(), InvalidArgumentError, "device ", device_name(device),
           " does not exist: this process sees ", device_count(), " GPU(s)", device_count() ? "" : " (",
           unavailable_reason(), device_count() ? "" : ")");
  DeviceState& s = states()[static_cast<size_t>(device)];
  std::call_once(s.once, [&] {
    int previous = 0;
    LS_CUDA(cudaGetDevice(&previous));
    LS_CUDA(cudaSetDevice(device));
    LS_CUDA(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking));
    LS_CUDA(cudaSetDevice(previous));
  });
  return s;
}

// Rounding to 512 bytes keeps the free lists short without wasting much; cudaMalloc itself aligns to 256.
size_t round_up(size_t bytes) { return (std::max<size_t>(bytes, 1) + 511) / 512 * 512; }

// Sets the current device for the scope of a call that names one, and restores the caller's.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    LS_CUDA(cudaGetDevice(&previous_));
    if (previous_ != device) LS_CUDA(cudaSetDevice(device));
  }
  ~DeviceGuard() { cudaSetDevice(previous_); }

 private:
  int previous_ = 0;
};

}  // namespace

int device_count() {
  static const int n = count_devices(nullptr);
  return n;
}

std::string unavailable_reason() {
  std::string reason;
  return count_devices(&reason) > 0 ? "" : reason;
}

std::string device_summary(int device) {
  cudaDeviceProp p{};
  LS_CUDA(cudaGetDeviceProperties(&p, device));
  return make_message(p.name, ", compute capability ", p.major, ".", p.minor, ", ", p.multiProcessorCount, " SMs, ",
                      p.totalGlobalMem >> 30, " GiB");
}

std::string device_uuid(int device) {
  cudaDeviceProp p{};
  LS_CUDA(cudaGetDeviceProperties(&p, device));
  std::string hex = "GPU-";
  for (int i = 0; i < 16; ++i) {
    static const char* digits = "0123456789abcdef";
    const auto byte = static_cast<unsigned char>(p.uuid.bytes[i]);
    hex += digits[byte >> 4];
    hex += digits[byte & 15];
  }
  return hex;
}

void set_device(int device) {
  state(device);
  LS_CUDA(cudaSetDevice(device));
}

int current_device() {
  int d = 0;
  LS_CUDA(cudaGetDevice(&d));
  return d;
}

void* allocate(size_t bytes, int device) {
  DeviceState& s = state(device);
  const size_t size = round_up(bytes);
  {
    std::lock_guard lock(s.mutex);
    ++s.stats.allocations;
    s.stats.bytes_in_use += static_cast<int64_t>(size);
    auto it = s.free_blocks.find(size);
    if (it != s.free_blocks.end() && !it->second.empty()) {
      void* p = it->second.back();
      it->second.pop_back();
      ++s.stats.cache_hits;
      s.stats.bytes_cached -= static_cast<int64_t>(size);
      return p;
    }
  }
  DeviceGuard guard(device);
  void* p = nullptr;
  cudaError_t e = cudaMalloc(&p, size);
  if (e == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    release_cached();
    e = cudaMalloc(&p, size);
  }
  if (e != cudaSuccess) {
    std::lock_guard lock(s.mutex);
    s.stats.bytes_in_use -= static_cast<int64_t>(size);
    cudaGetLastError();
    fail(e == cudaErrorMemoryAllocation, make_message("cudaMalloc(", size, " bytes)").c_str(),
         make_message(cudaGetErrorString(e), e == cudaErrorMemoryAllocation
                                                 ? ": use a smaller batch or model, or free tensors you keep"
                                                 : ""));
  }
  return p;
}

void release(void* p, size_t bytes, int device) {
  DeviceState& s = state(device);
  const size_t size = round_up(bytes);
  std::lock_guard lock(s.mutex);
  s.stats.bytes_in_use -= static_cast<int64_t>(size);
  s.stats.bytes_cached += static_cast<int64_t>(size);
  s.free_blocks[size].push_back(p);
}

void release_cached() {
  for (int d = 0; d < device_count(); ++d) {
    DeviceState& s = state(d);
    DeviceGuard guard(d);
    // Blocks may still be read by queued kernels until the stream drains.
    LS_CUDA(cudaStreamSynchronize(s.stream));
    std::lock_guard lock(s.mutex);
    for (auto& [size, blocks] : s.free_blocks)
      for (void* p : blocks) cudaFree(p);
    s.free_blocks.clear();
    s.stats.bytes_cached = 0;
  }
}

DeviceMemoryStats memory_stats(int device) {
  DeviceState& s = state(device);
  std::lock_guard lock(s.mutex);
  return s.stats;
}

void copy(void* dst, const void* src, size_t bytes, CopyKind kind, int device) {
  if (bytes == 0) return;
  DeviceState& s = state(device);
  DeviceGuard guard(device);
  if (kind == CopyKind::host_to_device && stage_to_device(s, dst, src, bytes)) return;
  const cudaMemcpyKind k = kind == CopyKind::host_to_device   ? cudaMemcpyHostToDevice
                           : kind == CopyKind::device_to_host ? cudaMemcpyDeviceToHost
                                                              : cudaMemcpyDeviceToDevice;
  LS_CUDA(cudaMemcpyAsync(dst, src, bytes, k, s.stream));
  // The host side of a copy may be pageable memory that the caller frees or reads right after.
  if (kind != CopyKind::device_to_device) LS_CUDA(cudaStreamSynchronize(s.stream));
}

void* native_stream(int device) { return state(device).stream; }

void synchronize(int device) {
  DeviceState& s = state(device);
  DeviceGuard guard(device);
  LS_CUDA(cudaStreamSynchronize(s.stream));
}

namespace detail {

cudaStream_t stream() { return state(current_device()).stream; }

const CublasApi& cublas_api() {
  static const CublasApi api = [] {
    // The toolkit's soname; the CUDA runtime this build links statically is of the same major version.
    const std::string name = make_message("libcublas.so.", CUDART_VERSION / 1000);
    void* lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    LS_CHECK(lib, FailedPreconditionError, "cannot load cuBLAS (", name, "): ", dlerror(),
             ": install the CUDA toolkit's cuBLAS or put its folder on LD_LIBRARY_PATH");
    auto load = [&](auto& fn, const char* symbol) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, symbol));
      LS_CHECK(fn, FailedPreconditionError, name, " has no ", symbol, ": a cuBLAS of another CUDA version?");
    };
    CublasApi a{};
    load(a.create, "cublasCreate_v2");
    load(a.set_stream, "cublasSetStream_v2");
    load(a.set_math_mode, "cublasSetMathMode");
    load(a.sgemm_strided_batched, "cublasSgemmStridedBatched");
    load(a.dgemm_strided_batched, "cublasDgemmStridedBatched");
    load(a.status_string, "cublasGetStatusString");
    return a;
  }();
  return api;
}

cublasHandle_t cublas() {
  thread_local std::map<int, cublasHandle_t> handles;  // per thread: a handle is not for concurrent use
  const int device = current_device();
  auto [it, fresh] = handles.try_emplace(device, nullptr);
  if (fresh) {
    const CublasApi& api = cublas_api();
    check(api.create(&it->second), "cublasCreate");
    check(api.set_stream(it->second, stream()), "cublasSetStream");
    check(api.set_math_mode(it->second, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
  }
  return it->second;
}

cudnnHandle_t cudnn() {
  thread_local std::map<int, cudnnHandle_t> handles;
  const int device = current_device();
  auto [it, fresh] = handles.try_emplace(device, nullptr);
  if (fresh) {
    check(cudnnCreate(&it->second), "cudnnCreate");
    check(cudnnSetStream(it->second, stream()), "cudnnSetStream");
  }
  return it->second;
}

void check(cudaError_t status, const char* call) {
  if (status == cudaSuccess) return;
  cudaGetLastError();
  fail(status == cudaErrorMemoryAllocation, call, cudaGetErrorString(status));
}

void check(cublasStatus_t status, const char* call) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  fail(status == CUBLAS_STATUS_ALLOC_FAILED, call, cublas_api().status_string(status));
}

void check(cudnnStatus_t status, const char* call) {
  if (status == CUDNN_STATUS_SUCCESS) return;
  fail(status == CUDNN_STATUS_ALLOC_FAILED, call, cudnnGetErrorString(status));
}

void check_launch(const char* kernel) {
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) fail(false, make_message("launching ", kernel).c_str(), cudaGetErrorString(e));
}

Scratch::Scratch(size_t bytes) : bytes_(bytes), device_(current_device()) { p_ = allocate(bytes, device_); }
Scratch::~Scratch() { release(p_, bytes_, device_); }

}  // namespace detail
}  // namespace lockstep::kernels::cuda
