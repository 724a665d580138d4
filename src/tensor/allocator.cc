// Caching allocator for tensor storage: blocks are 64-byte aligned and, when freed, kept in a free list
// per size so a training loop's repeated shapes reuse memory instead of calling malloc every step.
#include <cstdlib>
#include <map>
#include <mutex>
#include <new>
#include <vector>

#include "lockstep/kernels/cuda/runtime.h"
#include "lockstep/tensor/tensor.h"

namespace lockstep {

namespace {
constexpr size_t kAlignment = 64;
// Blocks beyond this total are returned to the system instead of cached.
constexpr int64_t kMaxCachedBytes = int64_t{2} << 30;

struct CachingAllocator {
  std::mutex mutex;
  std::map<size_t, std::vector<void*>> free_blocks;  // rounded size -> blocks
  AllocatorStats stats;

  static size_t round_up(size_t bytes) { return (std::max<size_t>(bytes, 1) + kAlignment - 1) / kAlignment * kAlignment; }

  void* allocate(size_t bytes) {
    size_t size = round_up(bytes);
    {
      std::lock_guard lock(mutex);
      ++stats.allocations;
      stats.bytes_in_use += static_cast<int64_t>(size);
      auto it = free_blocks.find(size);
      if (it != free_blocks.end() && !it->second.empty()) {
        void* p = it->second.back();
        it->second.pop_back();
        ++stats.cache_hits;
        stats.bytes_cached -= static_cast<int64_t>(size);
        return p;
      }
    }
    void* p = std::aligned_alloc(kAlignment, size);
    if (!p) throw std::bad_alloc();
    return p;
  }

  void release(void* p, size_t bytes) {
    size_t size = round_up(bytes);
    {
      std::lock_guard lock(mutex);
      stats.bytes_in_use -= static_cast<int64_t>(size);
      if (stats.bytes_cached + static_cast<int64_t>(size) <= kMaxCachedBytes) {
        free_blocks[size].push_back(p);
        stats.bytes_cached += static_cast<int64_t>(size);
        return;
      }
    }
    std::free(p);
  }

  void release_cached() {
    std::lock_guard lock(mutex);
    for (auto& [size, blocks] : free_blocks)
      for (void* p : blocks) std::free(p);
    free_blocks.clear();
    stats.bytes_cached = 0;
  }
};

CachingAllocator& cpu_allocator() {
  static auto* a = new CachingAllocator();  // never destroyed: tensors may outlive static destruction
  return *a;
}
}  // namespace

Storage::Storage(size_t bytes, Device device) : bytes_(bytes), device_(device) {
  if (device.is_gpu()) {
    check_device_available(device);
#if LOCKSTEP_WITH_CUDA
    data_ = kernels::cuda::allocate(bytes, device.index);
#endif
    return;
  }
  data_ = cpu_allocator().allocate(bytes);
}

Storage::Storage(void* data, size_t bytes, std::shared_ptr<const void> owner)
    : data_(data), bytes_(bytes), owner_(std::move(owner)) {}

Storage::~Storage() {
  if (owner_) return;
#if LOCKSTEP_WITH_CUDA
  if (device_.is_gpu()) {
    kernels::cuda::release(data_, bytes_, device_.index);
    return;
  }
#endif
  cpu_allocator().release(data_, bytes_);
}

AllocatorStats allocator_stats() {
  std::lock_guard lock(cpu_allocator().mutex);
  return cpu_allocator().stats;
}

void allocator_release_cached() { cpu_allocator().release_cached(); }

}  // namespace lockstep
