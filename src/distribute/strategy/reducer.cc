// GradientReducer: gradient buckets filled by variables' gradient hooks and all-reduced on communication
// threads while backward continues.
#include <algorithm>
#include <atomic>

#include "lockstep/core/logging.h"
#include "lockstep/tensor/ops.h"
#include "strategy-impl.h"

namespace lockstep::distribute {

struct GradientReducer::Replica {
  int index = 0;
  std::vector<Tensor> buffers;  // float32, one per bucket; finalize returns views of them
  std::vector<Tensor> places;   // by slot index: each variable's view of its bucket, made once per layout
  // Buckets every worker reads in place (mapped): double buffered, so that a worker may write one step's
  // gradients while the others still read its last step's. `workers` holds every worker's places, by rank.
  std::shared_ptr<MappedRegions> mapped;
  std::vector<std::vector<Tensor>> workers;
  std::vector<Tensor> next_buffers, next_places;
  std::vector<std::vector<Tensor>> next_workers;
  std::vector<bfloat16> wire;  // a bucket as sent under GradientCompression::BFLOAT16
  std::vector<int> remaining;
  std::vector<bool> launched;
  std::vector<bool> filled;  // by slot index
  // The communication thread and its queue of buckets to all-reduce.
  std::mutex mutex;
  std::condition_variable cv;
  std::deque<size_t> queue;
  size_t done = 0;
  std::exception_ptr error;
  bool stopping = false;
  std::thread thread;
};

GradientReducer::GradientReducer(Strategy& strategy) : strategy_(strategy) {}

GradientReducer::~GradientReducer() {
  for (auto& r : replicas_) {
    {
      std::lock_guard lock(r->mutex);
      r->stopping = true;
    }
    r->cv.notify_all();
    if (r->thread.joinable()) r->thread.join();
  }
  for (auto& [v, handle] : hooks_) {
    v.remove_gradient_hook(handle);
    v.set_gradient_destination({});
  }
}

void GradientReducer::watch(const Variable& v) {
  std::lock_guard lock(layout_mutex_);
  watched_.push_back(v);
  hooks_.emplace_back(v, v.add_gradient_hook([this](const Variable& var, const Tensor& g) { on_gradient(var, g); }));
  v.set_gradient_destination([this](const Variable& var) { return destination(var); });
}

void GradientReducer::ensure_layout() {
  std::lock_guard lock(layout_mutex_);
  if (layout_count_ == watched_.size() && !replicas_.empty()) return;
  // Buckets follow reverse creation order, the order backward produces gradients in.
  const int64_t pack = strategy_.communication_options().bytes_per_pack > 0 ? strategy_.communication_options().bytes_per_pack
                                                                           : int64_t{25} << 20;
  slots_.clear();
  bucket_elements_.clear();
  bucket_variables_.clear();
  for (auto it = watched_.rbegin(); it != watched_.rend(); ++it) {
    const int64_t n = it->shape().numel();
    if (bucket_elements_.empty() || static_cast<int64_t>(bucket_elements_.back() * sizeof(float)) >= pack) {
      bucket_elements_.push_back(0);
      bucket_variables_.push_back(0);
    }
    slots_[it->unique_id()] = {slots_.size(), bucket_elements_.size() - 1, bucket_elements_.back(), it->shape()};
    bucket_elements_.back() += static_cast<size_t>(n);
    ++bucket_variables_.back();
  }
  layout_count_ = watched_.size();
  const bool host = !strategy_.device().is_gpu() &&
                    strategy_.communication_options().gradient_compression == GradientCompression::NONE;
  sums_in_update_ = host && strategy_.num_workers() == 1;
  for (auto& r : replicas_) {  // a new layout (the model grew): restart the communication threads
    {
      std::lock_guard l(r->mutex);
      r->stopping = true;
    }
    r->cv.notify_all();
    r->thread.join();
  }
  replicas_.clear();
  // Workers that share a host, one replica each: every worker's update reads the others' buckets in place.
  Communicator* const cross = strategy_.cross_worker();
  const bool mappable = host && strategy_.num_workers() > 1 && strategy_.num_local_replicas() == 1 && cross;
  for (int i = 0; i < strategy_.num_local_replicas(); ++i) {
    auto r = std::make_unique<Replica>();
    r->index = i;
    if (mappable) r->mapped = map_buckets(*r, *cross);
    sums_in_update_ = sums_in_update_ || r->mapped;
    if (!r->mapped) {
      for (size_t b = 0; b < bucket_elements_.size(); ++b)
        r->buffers.push_back(
            Tensor::empty(Shape({static_cast<int64_t>(bucket_elements_[b])}), DType::float32, strategy_.device()));
      r->places = places_in(r->buffers);
    }
    start_step(*r, false);
    Replica* raw = r.get();
    r->thread = std::thread([this, raw] {
      for (;;) {
        size_t bucket;
        {
          std::unique_lock l(raw->mutex);
          raw->cv.wait(l, [&] { return raw->stopping || !raw->queue.empty(); });
          if (raw->stopping) return;
          bucket = raw->queue.front();
          raw->queue.pop_front();
        }
        std::exception_ptr error;
        try {
          all_reduce_bucket(*raw, raw->buffers[bucket],
                            collective_options(strategy_.communication_options(), bucket_tag(bucket)));
        } catch (...) {
          error = std::current_exception();
        }
        std::lock_guard l(raw->mutex);
        if (error && !raw->error) raw->error = error;
        ++raw->done;
        raw->cv.notify_all();
      }
    });
    replicas_.push_back(std::move(r));
  }
}

std::vector<Tensor> GradientReducer::places_in(const std::vector<Tensor>& buffers) const {
  std::vector<Tensor> places(slots_.size());
  for (const auto& [id, slot] : slots_) {
    const Tensor& bucket = buffers[slot.bucket];
    places[slot.index] = Tensor(bucket.storage(), slot.shape, slot.shape.strides(),
                                bucket.offset() + static_cast<int64_t>(slot.offset), DType::float32);
  }
  return places;
}

std::shared_ptr<MappedRegions> GradientReducer::map_buckets(Replica& r, Communicator& cross) {
  // Two sets of buckets back to back, each bucket starting on a cache line.
  std::vector<int64_t> starts;
  int64_t elements = 0;
  for (size_t set = 0; set < 2; ++set)
    for (size_t b = 0; b < bucket_elements_.size(); ++b) {
      starts.push_back(elements);
      elements += (static_cast<int64_t>(bucket_elements_[b]) + 15) / 16 * 16;
    }
  const auto bytes = static_cast<size_t>(elements) * sizeof(float);
  std::shared_ptr<MappedRegions> regions =
      cross.map_regions(bytes, collective_options(strategy_.communication_options(), Tag::kMappedGradients));
  if (!regions) return nullptr;
  const size_t buckets = bucket_elements_.size();
  for (int w = 0; w < cross.size(); ++w) {
    // Another worker's region lives as long as `regions`; this worker's own as long as any tensor viewing it.
    const bool own = w == cross.rank();
    auto storage = std::make_shared<Storage>(regions->region(w), bytes,
                                             own ? regions->own() : std::shared_ptr<const void>(regions));
    for (size_t set = 0; set < 2; ++set) {
      std::vector<Tensor> buffers;
      for (size_t b = 0; b < buckets; ++b) {
        const auto n = static_cast<int64_t>(bucket_elements_[b]);
        buffers.push_back(Tensor(storage, Shape({n}), {1}, starts[set * buckets + b], DType::float32));
      }
      (set == 0 ? r.workers : r.next_workers).push_back(places_in(buffers));
      if (own) (set == 0 ? r.buffers : r.next_buffers) = std::move(buffers);
    }
  }
  r.places = r.workers[static_cast<size_t>(cross.rank())];
  r.next_places = r.next_workers[static_cast<size_t>(cross.rank())];
  static std::once_flag logged;
  std::call_once(logged, [] {
    log(LogLevel::info, "gradients: each worker's update reads every worker's buckets in place (shared memory)");
  });
  return regions;
}

void GradientReducer::all_reduce_bucket(Replica& r, Tensor& bucket, const CollectiveOptions& o) {
  if (bucket.device().is_gpu() && !strategy_.impl_->reduces_device_memory()) {
    // The host backends (RING's gloo, shared memory, MPI) reduce a host copy of a GPU bucket.
    Tensor host = bucket.cpu();
    all_reduce_bucket(r, host, o);
    bucket.copy_from(host);
    return;
  }
  float* const data = static_cast<float*>(bucket.device_data());
  const auto n = static_cast<size_t>(bucket.numel());
  if (strategy_.communication_options().gradient_compression == GradientCompression::NONE) {
    strategy_.impl_->hierarchical_all_reduce(r.index, data, n, DType::float32, o);
    return;
  }
  LS_CHECK(!bucket.device().is_gpu(), InvalidArgumentError,
           "GradientCompression::BFLOAT16 is not supported with NCCL: use GradientCompression::NONE");
  r.wire.resize(n);
  std::transform(data, data + n, r.wire.begin(), [](float x) { return bfloat16(x); });
  strategy_.impl_->hierarchical_all_reduce(r.index, r.wire.data(), n, DType::bfloat16, o);
  std::transform(r.wire.begin(), r.wire.end(), data, [](bfloat16 x) { return static_cast<float>(x); });
}

void GradientReducer::launch(Replica& r, size_t bucket) {
  std::lock_guard l(r.mutex);
  r.launched[bucket] = true;
  r.queue.push_back(bucket);
  r.cv.notify_all();
}

void GradientReducer::fill(Replica& r, int64_t variable_id, const Tensor& g) {
  auto found = slots_.find(variable_id);
  if (found == slots_.end()) return;
  const Slot& slot = found->second;
  if (r.filled[slot.index] || r.launched[slot.bucket]) return;
  LS_CHECK(g.shape() == slot.shape, InvalidArgumentError, "gradient of shape ", g.shape().str(),
           " for a variable of shape ", slot.shape.str());
  const Tensor& into = r.places[slot.index];
  const bool written_there = g.storage() == into.storage() && g.offset() == into.offset() && g.is_contiguous();
  if (!written_there) into.copy_from(raw_ops::cast(g, DType::float32));
  r.filled[slot.index] = true;
  if (--r.remaining[slot.bucket] == 0 && !sums_in_update_) launch(r, slot.bucket);
}

bool GradientReducer::sums_in_update() {
  ensure_layout();
  return sums_in_update_;
}

bool GradientReducer::reads_workers_in_place() {
  ensure_layout();
  return !replicas_.empty() && replicas_.front()->mapped;
}

GradientReducer::Replica* GradientReducer::current_replica() {
  if (!in_replica_context() || &get_strategy() != &strategy_ || strategy_.num_replicas_in_sync() == 1) return nullptr;
  ensure_layout();
  return replicas_[static_cast<size_t>(replica_id_in_sync_group())].get();
}

void GradientReducer::on_gradient(const Variable& v, const Tensor& g) {
  if (Replica* r = current_replica()) fill(*r, v.unique_id(), g);
}

Tensor GradientReducer::destination(const Variable& v) {
  Replica* r = current_replica();
  if (!r || v.dtype() != DType::float32) return Tensor();
  auto found = slots_.find(v.unique_id());
  if (found == slots_.end() || r->filled[found->second.index] || r->launched[found->second.bucket]) return Tensor();
  return r->places[found->second.index];
}

GradientReducer::Replica& GradientReducer::fill_all(int replica, const std::vector<Tensor>& gradients,
                                                    const std::vector<Variable>& variables) {
  ensure_layout();
  Replica& r = *replicas_[static_cast<size_t>(replica)];
  for (size_t i = 0; i < variables.size(); ++i) {
    LS_CHECK(slots_.count(variables[i].unique_id()), ValueError, "variable '", variables[i].name(),
             "' was not created under strategy.scope(): create the model and optimizer inside the scope");
    fill(r, variables[i].unique_id(),
         gradients[i].defined() ? gradients[i] : zeros(variables[i].shape(), DType::float32, strategy_.device()));
  }
  // Variables of this strategy without a gradient this step contribute zeros, as on every other replica.
  for (const Variable& v : watched_)
    if (!r.filled[slots_.at(v.unique_id()).index])
      fill(r, v.unique_id(), zeros(v.shape(), DType::float32, strategy_.device()));
  return r;
}

std::vector<Tensor> GradientReducer::finalize(int replica, const std::vector<Tensor>& gradients,
                                             const std::vector<Variable>& variables) {
  Replica& r = fill_all(replica, gradients, variables);
  if (sums_in_update_) {
    for (size_t b = 0; b < r.buffers.size(); ++b)
      all_reduce_bucket(r, r.buffers[b], collective_options(strategy_.communication_options(), bucket_tag(b)));
  } else {
    std::unique_lock l(r.mutex);
    r.cv.wait(l, [&] { return r.done == bucket_elements_.size() || r.error; });
    if (r.error) {
      std::exception_ptr e = r.error;
      l.unlock();
      std::rethrow_exception(e);
    }
  }
  // Views of the buckets, not copies (DDP's gradient_as_bucket_view): valid until this replica's next step
  // fills the buckets again.
  std::vector<Tensor> out;
  for (const Variable& v : variables) out.push_back(raw_ops::cast(r.places[slots_.at(v.unique_id()).index], v.dtype()));
  start_step(r, true);
  return out;
}

std::vector<std::vector<Tensor>> GradientReducer::unreduced(int replica, const std::vector<Tensor>& gradients,
                                                            const std::vector<Variable>& variables) {
  LS_CHECK(sums_in_update(), FailedPreconditionError, "unreduced gradients asked for where the buckets are all-reduced");
  Replica& r = fill_all(replica, gradients, variables);
  if (r.mapped) {
    // Every worker's buckets are filled before any is read. The next step's gradients go into the other set, which
    // no worker reads until every worker has passed this barrier again.
    strategy_.cross_worker()->barrier(
        collective_options(strategy_.communication_options(), Tag::kMappedGradients));
    std::atomic_thread_fence(std::memory_order_acquire);
  }
  std::vector<std::vector<Tensor>> out;
  out.reserve(variables.size());
  for (const Variable& v : variables) {
    const size_t index = slots_.at(v.unique_id()).index;
    std::vector<Tensor>& each = out.emplace_back();
    if (r.mapped) {
      for (const auto& worker : r.workers) each.push_back(worker[index]);
    } else {
      for (const auto& other : replicas_) each.push_back(other->places[index]);
    }
  }
  start_step(r, true);
  return out;
}

void GradientReducer::start_step(Replica& r, bool consumed) {
  if (consumed && r.mapped) {
    std::swap(r.buffers, r.next_buffers);
    std::swap(r.places, r.next_places);
    std::swap(r.workers, r.next_workers);
  }
  r.done = 0;
  r.filled.assign(slots_.size(), false);
  r.remaining = bucket_variables_;
  r.launched.assign(bucket_elements_.size(), false);
}

void GradientReducer::discard_unfinalized() {
  for (auto& r : replicas_) {
    if (std::find(r->filled.begin(), r->filled.end(), true) == r->filled.end()) continue;  // finalize ran, or none came
    const auto launched = static_cast<size_t>(std::count(r->launched.begin(), r->launched.end(), true));
    std::unique_lock l(r->mutex);
    r->cv.wait(l, [&] { return r->done == launched; });  // each launched bucket ends, failed or not
    r->error = nullptr;
    start_step(*r, false);  // nothing was read: the same buckets take the next step's gradients
  }
}

}  // namespace lockstep::distribute
