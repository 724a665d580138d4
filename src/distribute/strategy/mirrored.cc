// The update workers on one host share: variables and optimizer slots of which every worker keeps its own copy in
// memory the others map, so that each worker updates its part of every variable and writes it into every copy.
#include <atomic>
#include <cstring>
#include <functional>

#include "lockstep/core/logging.h"
#include "strategy-impl.h"

namespace lockstep::distribute {

std::vector<Tensor> MirroredMemory::mirror(const std::vector<Tensor>& values) {
  // Every tensor on a cache line of its own, so that two workers writing neighbouring tensors never share one.
  std::vector<size_t> offsets;
  size_t bytes = 0;
  uint64_t layout = values.size();
  for (const Tensor& v : values) {
    LS_CHECK(!v.device().is_gpu(), InvalidArgumentError, "only host tensors are mirrored across workers");
    offsets.push_back(bytes);
    const size_t n = static_cast<size_t>(v.numel()) * dtype_size(v.dtype());
    bytes += (n + 63) / 64 * 64;
    layout = layout * 1000003 + n * 31 + static_cast<size_t>(v.dtype());
  }
  if (bytes == 0) return {};
  // Every worker must mirror the same tensors in the same order: each would otherwise write into the wrong place
  // of the others' copies.
  auto low = static_cast<int64_t>(layout >> 1), high = low;
  cross_.all_reduce(&low, 1, DType::int64, ReduceOp::MIN, options_);
  cross_.all_reduce(&high, 1, DType::int64, ReduceOp::MAX, options_);
  LS_CHECK(low == high, FailedPreconditionError,
           "the workers' optimizers hold different variables or slots (the shared update mirrors them in one order "
           "on every worker): build the same model and optimizer on every worker");
  std::shared_ptr<MappedRegions> regions = cross_.map_regions(bytes, options_);
  if (!regions) return {};
  auto* const begin = static_cast<char*>(regions->region(cross_.rank()));
  auto storage = std::make_shared<Storage>(begin, bytes, regions->own());
  std::vector<Tensor> out;
  for (size_t i = 0; i < values.size(); ++i) {
    const Tensor& v = values[i];
    Tensor home(storage, v.shape(), v.shape().strides(),
                static_cast<int64_t>(offsets[i] / dtype_size(v.dtype())), v.dtype());
    home.copy_from(v);
    std::vector<void*>& every = copies_[begin + offsets[i]];
    for (int r = 0; r < cross_.size(); ++r) every.push_back(static_cast<char*>(regions->region(r)) + offsets[i]);
    out.push_back(home);
  }
  regions_.push_back(std::move(regions));
  cross_.barrier(options_);  // every copy holds its value before any worker writes into another's
  return out;
}

std::span<void* const> MirroredMemory::copies(const Tensor& t) const {
  const auto found = copies_.find(t.raw_data());
  return found == copies_.end() ? std::span<void* const>() : std::span<void* const>(found->second);
}

bool Strategy::shares_update() {
  if (!in_replica_context() || num_workers() == 1 || num_local_ > 1 || !impl_->cross ||
      !impl_->reducer->reads_workers_in_place())
    return false;
  if (!impl_->mirrored) {
    impl_->mirrored =
        std::make_unique<MirroredMemory>(*impl_->cross, collective_options(options_, Tag::kMappedGradients));
    log(LogLevel::info, "the update: each of the ", num_workers(),
        " workers updates its part of every variable, in every worker's copy (shared memory)");
  }
  return true;
}

std::vector<Tensor> Strategy::mirror(const std::vector<Tensor>& values) {
  LS_CHECK(shares_update(), FailedPreconditionError,
           "Strategy::mirror is for the update workers on one host share (shares_update())");
  return impl_->mirrored->mirror(values);
}

std::span<void* const> Strategy::copies(const Tensor& t) const {
  if (!impl_->mirrored || t.device().is_gpu()) return {};
  return impl_->mirrored->copies(t);
}

void Strategy::end_shared_update() {
  impl_->cross->barrier(collective_options(options_, Tag::kMappedGradients));
  std::atomic_thread_fence(std::memory_order_acquire);
}

}  // namespace lockstep::distribute
