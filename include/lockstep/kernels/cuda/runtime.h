// The GPU runtime under the CUDA kernels: devices, the caching allocator of device memory, the one stream per
// device that every kernel runs on, and copies between host and device. In a build without CUDA
// (LOCKSTEP_WITH_CUDA unset) device_count() is 0 and the rest is never called.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace lockstep::kernels::cuda {

// GPUs this process can use: 0 without CUDA, without a driver or without a device (never throws).
int device_count();
// Why device_count() is 0, in a sentence ("this build has no CUDA", "no CUDA driver: ..."), or "".
std::string unavailable_reason();
// "NVIDIA H200, compute capability 9.0, 132 SMs, 140 GiB" for headers and benchmarks.
std::string device_summary(int device);
// The GPU's UUID (as nvidia-smi -L prints it): the same for every process that uses that GPU.
std::string device_uuid(int device);

// The device the calling thread's kernels run on (cudaSetDevice); 0 until set.
void set_device(int device);
int current_device();

// Device memory from a caching allocator per device: freed blocks are kept per size and reused (the stream order
// makes that safe), cudaMalloc only on a miss; a failed cudaMalloc returns the cache and tries once more, then throws
// ResourceExhaustedError naming the device and the size.
void* allocate(size_t bytes, int device);
void release(void* p, size_t bytes, int device);
// Returns every cached block of every device to CUDA.
void release_cached();
struct DeviceMemoryStats {
  int64_t allocations = 0, cache_hits = 0, bytes_in_use = 0, bytes_cached = 0;
};
DeviceMemoryStats memory_stats(int device);

enum class CopyKind { host_to_device, device_to_host, device_to_device };
// Copies `bytes` on `device`'s stream. device_to_host waits for the copy (and so for everything queued before it on
// that stream). host_to_device copies `src` into a pinned staging buffer and returns without waiting (up to 64 MiB;
// larger copies wait); device_to_device does not wait.
void copy(void* dst, const void* src, size_t bytes, CopyKind kind, int device);
// The device's stream as a cudaStream_t (opaque here), for libraries that queue work beside the kernels (NCCL).
void* native_stream(int device);
// Waits until all work queued on `device` has finished; throws the first asynchronous error of its kernels.
void synchronize(int device);

}  // namespace lockstep::kernels::cuda
