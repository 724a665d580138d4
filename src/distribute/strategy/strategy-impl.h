// Private pieces of the strategies: the replica thread pool, the gradient reducer and the state behind a
// Strategy.
#pragma once
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "lockstep/distribute/collective/local.h"
#include "lockstep/distribute/coordination/coordination.h"
#include "lockstep/distribute/strategy/strategy.h"

namespace lockstep::distribute {

// A collective's options: `tag` (communicator.h's Tag, or bucket_tag(b)), and CommunicationOptions.timeout_seconds
// as the timeout (600 s when unset).
CollectiveOptions collective_options(const CommunicationOptions& o, uint32_t tag);
inline CollectiveOptions collective_options(const CommunicationOptions& o, Tag tag) {
  return collective_options(o, static_cast<uint32_t>(tag));
}

// Threads for replicas 1..n-1 that live as long as the strategy, so each keeps its per-thread state
// (oneDNN plans, tapes) from step to step; replica 0 runs on the caller's thread.
class ReplicaPool {
 public:
  explicit ReplicaPool(int n);
  ~ReplicaPool();
  // Runs fn(r) for every replica and waits; rethrows the first error. on_error runs on the failing replica's
  // thread when a replica fails, to release the replicas waiting for it in a collective.
  void run(const std::function<void(int)>& fn, const std::function<void()>& on_error);

 private:
  void loop(int replica);
  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const std::function<void(int)>* task_ = nullptr;
  const std::function<void()>* on_error_ = nullptr;
  int caller_threads_ = 1;  // the caller's intra-op thread count, which each replica thread adopts
  uint64_t generation_ = 0;
  int pending_ = 0;
  bool stopping_ = false;
  std::exception_ptr error_;
};

// Packs gradients into buckets of about bytes_per_pack and all-reduces each bucket as soon as backward has
// produced all of its gradients (variables' gradient hooks), on a communication thread per replica, so
// communication overlaps the rest of backward. Buckets are filled and launched in the same order on every
// replica and worker because every replica runs the same model; each bucket's collectives carry its own tag.
// Each variable names its place in the replica's bucket as its gradient destination, so that under
// GradientsToDestinations backward writes the gradient there and no copy is made.
class GradientReducer {
 public:
  explicit GradientReducer(Strategy& strategy);
  ~GradientReducer();
  void watch(const Variable& v);
  // The all-reduced gradients of `variables` for this replica; fills what hooks did not see. They are views of the
  // replica's buckets, valid until its next step's gradients arrive.
  std::vector<Tensor> finalize(int replica, const std::vector<Tensor>& gradients, const std::vector<Variable>& variables);
  // Under sums_in_update(): every replica's gradients of `variables`, not reduced (for each variable, views of each
  // local replica's bucket in replica order, or of each worker's in rank order); fills what hooks did not see.
  // Valid until the replicas' next step.
  std::vector<std::vector<Tensor>> unreduced(int replica, const std::vector<Tensor>& gradients,
                                             const std::vector<Variable>& variables);
  // On the CPU without compression, the replicas of one worker, or workers with one replica each whose buckets
  // every worker maps (shared memory): buckets are not all-reduced as they fill. An update that can sum them
  // itself takes unreduced(); finalize() all-reduces them when called.
  bool sums_in_update();
  // Under sums_in_update(), workers' buckets every worker maps: unreduced() gives every worker's gradients.
  bool reads_workers_in_place();
  // Drops what the hooks gathered in a step that never called finalize (a custom loop that reduced its gradients
  // itself, or computed gradients it did not apply), after the buckets it launched are done, so that a later
  // step's finalize cannot return them. Called by Strategy::run before the replicas start.
  void discard_unfinalized();

 private:
  struct Slot {
    size_t index;   // of the variable in the layout: 0, 1, ... in bucket order
    size_t bucket;
    size_t offset;  // elements into the bucket
    Shape shape;
  };
  struct Replica;
  void on_gradient(const Variable& v, const Tensor& g);
  // The calling replica's place for v's gradient in its bucket, while it may still be written (the variable's
  // gradient destination), else an undefined tensor.
  Tensor destination(const Variable& v);
  // The replica is this strategy's, in a step with more than one replica: its gradients go into its buckets.
  Replica* current_replica();
  void ensure_layout();
  void fill(Replica& r, int64_t variable_id, const Tensor& g);
  // Fills what the hooks did not see of `variables` (zeros for a variable of this strategy without a gradient).
  Replica& fill_all(int replica, const std::vector<Tensor>& gradients, const std::vector<Variable>& variables);
  void launch(Replica& r, size_t bucket);
  // No gradient filled, no bucket launched; after a step whose gradients were read (`consumed`), mapped buckets
  // switch to their other set.
  void start_step(Replica& r, bool consumed);
  // Each variable's view of `buffers`, by slot index.
  std::vector<Tensor> places_in(const std::vector<Tensor>& buffers) const;
  // Maps r's buckets, double buffered, where every worker can read them in place (Communicator::map_regions), and
  // makes the views of every worker's; nullptr where the backend cannot.
  std::shared_ptr<MappedRegions> map_buckets(Replica& r, Communicator& cross);
  // One bucket across every replica, as float32 or, under GradientCompression::BFLOAT16, as bfloat16.
  void all_reduce_bucket(Replica& r, Tensor& bucket, const CollectiveOptions& o);

  Strategy& strategy_;
  std::mutex layout_mutex_;
  std::vector<std::pair<Variable, int>> hooks_;
  std::vector<Variable> watched_;
  size_t layout_count_ = 0;  // watched_.size() when the layout was made
  bool sums_in_update_ = false;  // decided with the layout
  std::unordered_map<int64_t, Slot> slots_;
  std::vector<size_t> bucket_elements_;
  std::vector<int> bucket_variables_;
  std::vector<std::unique_ptr<Replica>> replicas_;
};

// Tensors of which every worker on this host keeps its own copy in memory the others map, so that any worker can
// write every copy (Strategy::mirror): the variables and optimizer slots of the shared update.
class MirroredMemory {
 public:
  MirroredMemory(Communicator& cross, const CollectiveOptions& options) : cross_(cross), options_(options) {}
  std::vector<Tensor> mirror(const std::vector<Tensor>& values);
  std::span<void* const> copies(const Tensor& t) const;

 private:
  Communicator& cross_;
  CollectiveOptions options_;
  std::vector<std::shared_ptr<MappedRegions>> regions_;  // what mirror() mapped
  // By the address of a mirrored tensor's first element here: every worker's copy of it, in rank order.
  std::unordered_map<const void*, std::vector<void*>> copies_;
};

struct Strategy::Impl {
  std::unique_ptr<LocalGroup> local;
  std::vector<std::unique_ptr<Communicator>> local_comms;
  std::unique_ptr<ReplicaPool> pool;
  std::unique_ptr<CoordinationClient> coordination;
  std::unique_ptr<Communicator> cross;
  std::unique_ptr<GradientReducer> reducer;
  std::unique_ptr<MirroredMemory> mirrored;  // made by the first shares_update() that holds
  bool synchronized = false;
  int uncaught_at_start = 0;  // std::uncaught_exceptions() when the strategy was made
  std::string last_error;     // the last error a step raised on this worker
  bool aborted = false;       // abort() was called: the destructor leaves as on an error
  int64_t global_batch_size = 0;  // of the last distributed dataset, for the start-up check
  void hierarchical_all_reduce(int replica, void* data, size_t count, DType dtype, const CollectiveOptions& o);
  // Whether hierarchical_all_reduce takes GPU memory as it is (NCCL); else GPU buckets go through host copies.
  bool reduces_device_memory() const { return cross_takes_device_memory && !local; }
  bool cross_takes_device_memory = false;
};

}  // namespace lockstep::distribute
