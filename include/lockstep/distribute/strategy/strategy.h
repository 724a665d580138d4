// Distribution strategies (tf.distribute): the default strategy, MirroredStrategy (replicas on threads of
// one process) and MultiWorkerMirroredStrategy (one process per worker, configured by TF_CONFIG). A
// strategy runs a step function on every replica, all-reduces what replicas produce, splits datasets
// across replicas, and mirrors the variables created in its scope: they start identical (broadcast from
// the chief) and stay identical because every replica applies the same all-reduced gradients.
#pragma once
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "lockstep/autograd/variable.h"
#include "lockstep/data/dataset.h"
#include "lockstep/distribute/cluster/cluster_resolver.h"
#include "lockstep/distribute/collective/backends.h"
#include "lockstep/distribute/collective/communicator.h"

namespace lockstep::distribute {

// One value per local replica (tf.distribute.DistributedValues / PerReplica).
template <typename T> struct PerReplica {
  std::vector<T> values;
};

// What distribute_datasets_from_function hands each input pipeline (tf.distribute.InputContext).
struct InputContext {
  int num_input_pipelines = 1;
  int input_pipeline_id = 0;
  int num_replicas_in_sync = 1;
  // global_batch_size / num_replicas_in_sync; ValueError when it does not divide evenly.
  int64_t get_per_replica_batch_size(int64_t global_batch_size) const;
};

// TF's auto-sharding of one input pipeline's data, by dataset.options().auto_shard_policy: FILE gives pipeline
// ctx.input_pipeline_id every ctx.num_input_pipelines-th file of the dataset's file readers (TFRecordDataset,
// make_csv_dataset), which is how experimental_distribute_dataset splits files among workers; AUTO does the same
// when every reader has at least as many files as there are pipelines, else shards by DATA (every
// num_input_pipelines-th element, Dataset::shard); DATA shards by element; OFF returns the dataset. FILE over a
// dataset that reads no files, or fewer files than pipelines, is a ValueError (as in TF).
data::Dataset auto_shard_dataset(const data::Dataset& dataset, const InputContext& ctx);

// CommunicationImplementation is the backend registry's (collective/backends.h), which picks the backend.

// BFLOAT16 (a lockstep extension, like Horovod's Compression.bf16 or DDP's bf16_compress_hook): gradients
// travel as bfloat16 (rounded to nearest even, summed through float32 at every hop), halving the bytes of
// every gradient all-reduce at the cost of about 3 significant digits; NONE keeps float32.
enum class GradientCompression { NONE, BFLOAT16 };
struct CommunicationOptions {
  CommunicationImplementation implementation = CommunicationImplementation::AUTO;
  // Gradients are packed into all-reduces of about this many bytes; 0 means 25 MiB.
  int64_t bytes_per_pack = 0;
  // Longest any collective may wait; 0 means 600 s. Dead workers are detected in seconds regardless.
  double timeout_seconds = 0;
  // NONE unless LOCKSTEP_GRADIENT_COMPRESSION=bfloat16 says otherwise.
  GradientCompression gradient_compression = GradientCompression::NONE;
};

class Strategy;
class GradientReducer;

// A dataset split across replicas: each step yields one batch per local replica.
class DistributedDataset {
 public:
  // Per-replica datasets whose shared input skips its first `skip` elements: how a position saved on another
  // number of replicas is continued (set by experimental_distribute_dataset; empty otherwise).
  using Resplit = std::function<std::vector<data::Dataset>(int64_t skip)>;

  class Iterator {
   public:
    // The next per-replica batches; nullopt when any replica, on any worker, has run out (so every worker
    // stops at the same step).
    std::optional<PerReplica<data::Batch>> next();
    // Range-for support.
    const PerReplica<data::Batch>& operator*() const;
    Iterator& operator++();
    bool operator==(std::default_sentinel_t) const;
    // Exact position of every replica's pipeline, for checkpoints, with the position in the global stream
    // (elements of the dataset before batching consumed by all replicas together).
    nlohmann::json save_state() const;
    // Continues exactly where a saved iterator of the same number of replicas was. A state saved with another
    // number of replicas (a job restarted on more or fewer workers) continues at the same element of the
    // global stream, for experimental_distribute_dataset's input; ValueError otherwise.
    void restore_state(const nlohmann::json& state);

   private:
    friend class DistributedDataset;
    void rebuild(int64_t skip);
    Strategy* strategy_ = nullptr;
    Resplit resplit_;
    int64_t global_batch_ = 0;  // 0 when unknown (distribute_datasets_from_function)
    uint64_t iteration_ = 0;
    int64_t skip_ = 0;      // elements of the global stream skipped when the pipelines were built
    int64_t elements_ = 0;  // elements of the global stream consumed, skip_ included
    std::vector<data::Iterator> iterators_;
    mutable std::optional<PerReplica<data::Batch>> current_;
    mutable bool fetched_ = false;
    void fetch() const;
  };

  DistributedDataset(Strategy* strategy, std::vector<data::Dataset> per_replica, Resplit resplit = nullptr,
                     int64_t global_batch = 0, std::optional<data::Dataset> source = std::nullopt);
  Iterator begin() const;
  std::default_sentinel_t end() const { return std::default_sentinel; }
  Iterator make_iterator(uint64_t iteration) const;
  const std::vector<data::Dataset>& per_replica_datasets() const { return datasets_; }
  Strategy* strategy() const { return strategy_; }
  // The dataset that experimental_distribute_dataset split (none for distribute_datasets_from_function's):
  // what model.fit(dist_dataset) trains on, split the same way.
  const std::optional<data::Dataset>& source() const { return source_; }

 private:
  Strategy* strategy_;
  std::vector<data::Dataset> datasets_;
  Resplit resplit_;
  int64_t global_batch_;
  std::optional<data::Dataset> source_;
};

class Strategy {
 public:
  virtual ~Strategy();
  Strategy(const Strategy&) = delete;
  Strategy& operator=(const Strategy&) = delete;

  int num_replicas_in_sync() const { return num_local_ * num_workers(); }
  int num_local_replicas() const { return num_local_; }
  int num_workers() const;
  // This worker's rank among the training tasks (0 is the chief).
  int worker_rank() const;
  bool is_chief() const { return worker_rank() == 0; }
  const ClusterResolver& cluster_resolver() const { return *resolver_; }
  const CommunicationOptions& communication_options() const { return options_; }

  // While the returned guard lives, this strategy is the current one (get_strategy()) and the variables
  // created on this thread are mirrored by it (strategy.scope()).
  class Scope {
   public:
    explicit Scope(Strategy* strategy);
    ~Scope();
    Scope(Scope&&) = delete;

   private:
    Strategy* previous_;
    VariableCreationScope creation_;
    DeviceScope device_;  // variables made in the scope live on the replicas' device
  };
  // The device this worker's replicas compute on, and their variables live on: the process's default device
  // (LOCKSTEP_DEVICE, `lockstep train --device`) when the strategy was made, or MirroredStrategy's device.
  Device device() const { return device_; }
  [[nodiscard]] Scope scope() { return Scope(this); }

  // Runs fn on every local replica (on threads when there are several), with arguments that are either
  // PerReplica values (each replica gets its own) or plain values (shared); returns one result per replica.
  template <typename F, typename... Args> auto run(F&& fn, const Args&... args);

  // The replicas' values summed or averaged (over replicas, and over `axis` first when given) on every worker.
  Tensor reduce(ReduceOp op, const PerReplica<Tensor>& value, std::optional<int64_t> axis = std::nullopt);
  std::vector<Tensor> experimental_local_results(const PerReplica<Tensor>& value) const { return value.values; }
  // Every replica's value on every worker, concatenated along `axis` in replica order.
  Tensor gather(const PerReplica<Tensor>& value, int64_t axis);

  // Splits each global batch of `dataset` (whose last step is batch()) across all replicas, after sharding it
  // across workers as dataset.options().auto_shard_policy says (auto_shard_dataset). Sharded by DATA, the replicas
  // together take each global batch's elements from one stream; sharded by FILE, each worker batches its own files'
  // elements, and the input position can only be restored on the same number of workers.
  DistributedDataset experimental_distribute_dataset(const data::Dataset& dataset);
  // Calls fn once per local replica with its InputContext; fn returns that pipeline's per-replica batches.
  DistributedDataset distribute_datasets_from_function(const std::function<data::Dataset(const InputContext&)>& fn);

  // ---- for the training loops of keras and the optimizers (replica context) ----
  // Gradients of `variables` all-reduced (SUM) across all replicas, waiting for the buckets the gradient
  // hooks started during backward. Call from inside run(), once per step.
  std::vector<Tensor> all_reduce_gradients(const std::vector<Tensor>& gradients, const std::vector<Variable>& variables);
  // For an update that sums the replicas' gradients itself, where that is how this strategy reduces them on the
  // CPU (one worker's replicas; or workers on one host, one replica each, whose gradient buckets every worker maps):
  // for each variable, every local replica's gradient in replica order, or every worker's in rank order (views,
  // read them inside merge_call; valid until the replicas' next step). nullopt where all_reduce_gradients is the
  // way.
  // Call from inside run(), once per step, instead of all_reduce_gradients.
  std::optional<std::vector<std::vector<Tensor>>> unreduced_gradients(const std::vector<Tensor>& gradients,
                                                                      const std::vector<Variable>& variables);
  // The update workers on one host share (the optimizers): where unreduced_gradients gives every worker's gradients
  // (workers on one host, one replica each, buckets mapped), each worker updates only its part of every variable
  // and writes it into every worker's copy. For that the variables and optimizer slots it writes must be in
  // memory every worker maps (mirror), and the update ends with end_shared_update before anyone reads them.
  bool shares_update();
  // Collective (every worker, the same shapes in the same order): new tensors holding `values`, each worker's in
  // memory every other maps. Empty on every worker where that cannot be done.
  std::vector<Tensor> mirror(const std::vector<Tensor>& values);
  // For a tensor mirror() made: every worker's copy of its first element, in rank order (this worker's is the
  // tensor's own), valid while the strategy lives. Empty for any other tensor.
  std::span<void* const> copies(const Tensor& t) const;
  // Collective: every worker's part of the shared update is written, in every copy.
  void end_shared_update();
  // Runs `update` once per worker for replicas sharing variables (replica 0, the others wait): how a layer
  // updates its mirrored state (BatchNormalization's moving statistics) exactly once.
  void merge_call(const std::function<void()>& update);
  // merge_call with the update shared out: `prepare` runs once per worker (on replica 0, while the others may still
  // read the variables: it must not write them), then every local replica runs update(part, num_local_replicas())
  // on its own thread, each writing its own part, once all have arrived. How the optimizer's elementwise update
  // uses every replica's core instead of one.
  void merge_call(const std::function<void()>& prepare, const std::function<void(int part, int parts)>& update);
  // Sums `values` element-wise over every replica of every worker (float64), in place. From replica context
  // each replica passes its own; from cross-replica context (the caller's thread) over workers only.
  void all_reduce_sum(std::vector<double>& values);
  // Makes every mirrored variable equal to the chief's and checks that every worker built the same model
  // and batch size (a mismatch stops the job naming the difference). Runs once; later calls are free.
  void synchronize_variables(int64_t global_batch_size);
  const std::vector<Variable>& mirrored_variables() const { return variables_; }

  // For collectives outside the gradient path; the cross-worker communicator (null on a single worker).
  Communicator* cross_worker() const;

  // Marks this worker as leaving on an error the library did not throw (a Python exception that ends the
  // program): destroying the strategy then tells the other workers at once, naming this task and `message`,
  // instead of waiting for them in the shutdown barrier while they wait for this one in a collective.
  void abort(const std::string& message);

 protected:
  Strategy(int num_local_replicas, std::unique_ptr<ClusterResolver> resolver, CommunicationOptions options);
  // Connects workers (coordination service, gloo); called by MultiWorkerMirroredStrategy's constructor.
  void connect_workers();
  Device device_;  // see device()

 private:
  struct Impl;
  void run_replicas(const std::function<void(int replica)>& fn);
  void register_variable(const Variable& v);
  int num_local_;
  std::unique_ptr<ClusterResolver> resolver_;
  CommunicationOptions options_;
  std::vector<Variable> variables_;
  std::unique_ptr<Impl> impl_;
  friend class DistributedDataset;
  friend class GradientReducer;
};

// The strategy whose scope is active on this thread (or whose replica this thread runs), else the default
// strategy: one replica, no communication (tf.distribute.get_strategy()).
Strategy& get_strategy();
bool has_strategy();
// Inside Strategy::run: this thread's replica (0 for the caller's thread); -1 outside.
int replica_id_in_sync_group();
bool in_replica_context();

class DefaultStrategy : public Strategy {
 public:
  DefaultStrategy();
};

// Replicas on logical devices of this process: "/cpu:0", "/cpu:1", ..., or one GPU ("/gpu:0", "/device:GPU:0").
// No devices means one replica on the process's default device. Several GPUs in one process are not supported
// yet: run one worker process per GPU under MultiWorkerMirroredStrategy.
class MirroredStrategy : public Strategy {
 public:
  // `options` is lockstep's: TF's MirroredStrategy takes cross_device_ops instead; bytes_per_pack and the
  // timeout apply to the replicas' all-reduces the same way.
  explicit MirroredStrategy(std::vector<std::string> devices = {}, CommunicationOptions options = {});
  const std::vector<std::string>& devices() const { return devices_; }

 private:
  std::vector<std::string> devices_;
};

// One replica per worker process; the cluster comes from TF_CONFIG (or SLURM), a single local worker
// when neither is set. The chief runs the coordination service on its TF_CONFIG address.
class MultiWorkerMirroredStrategy : public Strategy {
 public:
  explicit MultiWorkerMirroredStrategy(CommunicationOptions options = {});
  MultiWorkerMirroredStrategy(CommunicationOptions options, std::unique_ptr<ClusterResolver> resolver);
};

// ---- template implementation ----
namespace detail {
template <typename T> const T& replica_value(const PerReplica<T>& v, int r) { return v.values[static_cast<size_t>(r)]; }
template <typename T> const T& replica_value(const T& v, int) { return v; }
template <typename T> struct unwrap { using type = T; };
template <typename T> struct unwrap<PerReplica<T>> { using type = T; };
}  // namespace detail

template <typename F, typename... Args> auto Strategy::run(F&& fn, const Args&... args) {
  using R = std::invoke_result_t<F&, const typename detail::unwrap<Args>::type&...>;
  if constexpr (std::is_void_v<R>) {
    run_replicas([&]([[maybe_unused]] int r) { fn(detail::replica_value(args, r)...); });
  } else {
    PerReplica<R> out;
    out.values.resize(static_cast<size_t>(num_local_));
    run_replicas([&]([[maybe_unused]] int r) { out.values[static_cast<size_t>(r)] = fn(detail::replica_value(args, r)...); });
    return out;
  }
}

}  // namespace lockstep::distribute
