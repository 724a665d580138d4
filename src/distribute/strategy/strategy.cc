// Strategy: replica threads, replica context, hierarchical all-reduce (local threads, then workers),
// reduce/gather, variable mirroring and the start-of-training synchronisation.
#include "lockstep/distribute/strategy/strategy.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>

#include "lockstep/core/logging.h"
#include "lockstep/core/version.h"
#include "lockstep/core/threads.h"
#include "lockstep/distribute/collective/backends.h"
#include "lockstep/distribute/collective/local.h"
#include "lockstep/distribute/coordination/coordination.h"
#include "lockstep/tensor/ops.h"
#include "strategy-impl.h"

namespace lockstep::distribute {

namespace {
thread_local Strategy* t_current = nullptr;  // the strategy whose scope or replica this thread is in
thread_local int t_replica = -1;

DefaultStrategy& default_strategy() {
  static DefaultStrategy* s = new DefaultStrategy();  // never destroyed: models may outlive statics
  return *s;
}

// Text from the environment, cut short enough to quote in a one-line error.
std::string shorten(const std::string& text) { return text.size() > 24 ? text.substr(0, 20) + "..." : text; }

// A timeout in seconds from the environment variable `name`, or `fallback` when it is unset. Checked here,
// where it is read: atof made "abc" 0 s and 1e30 a negative duration.
std::chrono::milliseconds timeout_from_env(const char* name, std::chrono::milliseconds fallback) {
  constexpr double kMaxSeconds = 86400;
  const char* v = std::getenv(name);
  if (!v) return fallback;
  double seconds = 0;
  const char* end = v + std::strlen(v);
  auto [ptr, ec] = std::from_chars(v, end, seconds);
  const std::string shown = shorten(v);
  LS_CHECK(ec == std::errc() && ptr == end && seconds >= 0.001 && seconds <= kMaxSeconds, ValueError, name, "='",
           shown, "' is not a number of seconds from 0.001 to ", kMaxSeconds, ": set it to e.g. 120, or unset it");
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

// LOCKSTEP_GRADIENT_COMPRESSION=none|bfloat16 applies when the program left the option at NONE.
GradientCompression choose_compression(GradientCompression requested) {
  const char* v = std::getenv("LOCKSTEP_GRADIENT_COMPRESSION");
  if (!v || requested != GradientCompression::NONE) return requested;
  const std::string value = v;
  LS_CHECK(value == "none" || value == "bfloat16", ValueError, "LOCKSTEP_GRADIENT_COMPRESSION='",
           shorten(value), "' is not a gradient compression: set it to none or bfloat16, or unset it");
  return value == "bfloat16" ? GradientCompression::BFLOAT16 : GradientCompression::NONE;
}
}  // namespace

CollectiveOptions collective_options(const CommunicationOptions& o, uint32_t tag) {
  const double s = o.timeout_seconds > 0 ? o.timeout_seconds : 600.0;
  return {tag, std::chrono::milliseconds(static_cast<int64_t>(s * 1000))};
}

Strategy& get_strategy() { return t_current ? *t_current : default_strategy(); }
bool has_strategy() { return t_current != nullptr; }
int replica_id_in_sync_group() { return t_replica; }
bool in_replica_context() { return t_replica >= 0; }

int64_t InputContext::get_per_replica_batch_size(int64_t global_batch_size) const {
  LS_CHECK(num_replicas_in_sync > 0 && global_batch_size % num_replicas_in_sync == 0, ValueError,
           "the global batch size ", global_batch_size, " is not divisible by num_replicas_in_sync ",
           num_replicas_in_sync, ": use a multiple of ", num_replicas_in_sync);
  return global_batch_size / num_replicas_in_sync;
}

// ---- replica threads ----

ReplicaPool::ReplicaPool(int n) {
  for (int r = 1; r < n; ++r) threads_.emplace_back([this, r] { loop(r); });
}

ReplicaPool::~ReplicaPool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void ReplicaPool::loop(int replica) {
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(int)>* task;
    const std::function<void()>* on_error;
    int threads = 1;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
      task = task_;
      on_error = on_error_;
      threads = caller_threads_;
    }
    // OpenMP's thread count is per thread and a new thread starts from the process default (all cores), not
    // from the count set_num_threads gave the caller: without this, --threads 1 ran replicas on every core.
    if (num_threads() != threads) set_num_threads(threads);
    std::exception_ptr error;
    try {
      (*task)(replica);
    } catch (...) {
      error = std::current_exception();
      (*on_error)();  // the other replicas may be waiting for this one in a collective
    }
    std::lock_guard lock(mutex_);
    if (error && !error_) error_ = error;
    if (--pending_ == 0) done_.notify_all();
  }
}

void ReplicaPool::run(const std::function<void(int)>& fn, const std::function<void()>& on_error) {
  {
    std::lock_guard lock(mutex_);
    task_ = &fn;
    on_error_ = &on_error;
    caller_threads_ = num_threads();
    pending_ = static_cast<int>(threads_.size());
    error_ = nullptr;
    ++generation_;
  }
  wake_.notify_all();
  std::exception_ptr mine;
  try {
    fn(0);
  } catch (...) {
    mine = std::current_exception();
    on_error();  // let replicas blocked in a collective with this one fail instead of waiting
  }
  std::unique_lock lock(mutex_);
  done_.wait(lock, [&] { return pending_ == 0; });
  if (mine) std::rethrow_exception(mine);
  if (error_) std::rethrow_exception(error_);
}

// ---- Strategy ----

Strategy::Strategy(int num_local_replicas, std::unique_ptr<ClusterResolver> resolver, CommunicationOptions options)
    : device_(default_device()), num_local_(num_local_replicas), resolver_(std::move(resolver)), options_(options), impl_(std::make_unique<Impl>()) {
  LS_CHECK(num_local_ >= 1, ValueError, "a strategy needs at least one replica, got ", num_local_);
  options_.gradient_compression = choose_compression(options_.gradient_compression);
  if (num_local_ > 1) {
    impl_->local = std::make_unique<LocalGroup>(num_local_);
    for (int r = 0; r < num_local_; ++r) impl_->local_comms.push_back(impl_->local->communicator(r));
    impl_->pool = std::make_unique<ReplicaPool>(num_local_);
  }
  impl_->reducer = std::make_unique<GradientReducer>(*this);
  impl_->uncaught_at_start = std::uncaught_exceptions();
}

Strategy::~Strategy() {
  impl_->reducer.reset();
  impl_->mirrored.reset();  // before the communicator: the other workers' copies are mapped through it
  if (!impl_->coordination) return;
  if (std::uncaught_exceptions() > impl_->uncaught_at_start || impl_->aborted) {
    impl_->cross.reset();  // closes the connections: peers blocked in a collective with this one fail at once
    // Leaving on an error: tell the others now instead of waiting for them in the shutdown barrier. A
    // collective usually fails because a peer died; the service names that peer within ~50 ms, so give its
    // notice (which ends this process through on_error) a moment to arrive before blaming this worker.
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    impl_->coordination->report_error(impl_->last_error.empty() ? "stopped with an error" : impl_->last_error);
    return;
  }
  // The connections close only after everybody is done: a worker's last collective may be a broadcast it sends
  // and leaves at once (a checkpoint's status), which a slower peer has still to receive. They close on every
  // worker at once, right after the shutdown barrier: closing one flushes it, which needs the peer's answer.
  try {
    // The chief keeps the service up until everybody is done.
    impl_->coordination->shutdown(std::chrono::seconds(60), [&] { impl_->cross.reset(); });
  } catch (const std::exception& e) {
    log(LogLevel::warning, "coordination shutdown: ", e.what());
  }
  impl_->cross.reset();
}

int Strategy::num_workers() const { return std::max(1, resolver_->world_size()); }
int Strategy::worker_rank() const { return std::max(0, resolver_->rank()); }
Communicator* Strategy::cross_worker() const { return impl_->cross.get(); }

void Strategy::abort(const std::string& message) {
  impl_->aborted = true;
  impl_->last_error = message;
}

void Strategy::connect_workers() {
  const CommunicationImplementation backend = choose_collective(options_.implementation);
  if (num_workers() <= 1) return;
  LS_CHECK(resolver_->rank() >= 0, ValueError, "task ", resolver_->task().name(),
           " does not train (evaluators run a separate evaluation loop): it cannot join MultiWorkerMirroredStrategy");
  CoordinationOptions c;
  const std::vector<Task> tasks = resolver_->training_tasks();
  c.service_address = resolver_->chief().address;
  c.rank = worker_rank();
  c.world_size = num_workers();
  for (const Task& t : tasks) {
    c.task_names.push_back(t.name());
    c.task_addresses.push_back(t.address);
  }
  c.fingerprint = nlohmann::json{{"lockstep_version", version()}, {"num_local_replicas", num_local_}}.dump();
  c.incarnation = std::random_device{}() * 0x100000001ull + static_cast<uint64_t>(::getpid());
  c.startup_timeout = timeout_from_env("LOCKSTEP_STARTUP_TIMEOUT", c.startup_timeout);
  c.heartbeat_timeout = timeout_from_env("LOCKSTEP_HEARTBEAT_TIMEOUT", c.heartbeat_timeout);
  const auto* tf_config = dynamic_cast<const TFConfigClusterResolver*>(resolver_.get());
  c.security = load_cluster_security(tf_config ? tf_config->security_files() : ClusterSecurityFiles{});
  impl_->coordination = std::make_unique<CoordinationClient>(c);

  BackendCluster cluster{impl_->coordination.get(), worker_rank(), {}, {}, device_, c.startup_timeout};
  for (const Task& t : tasks) {
    cluster.tasks.push_back(t.name());
    cluster.addresses.push_back(t.address);
  }
  CrossWorker cross = connect_cross_worker(cluster, backend);
  impl_->cross = std::move(cross.communicator);
  impl_->cross_takes_device_memory = cross.takes_device_memory;
  log(LogLevel::info, "joined the cluster as ", resolver_->task().name(), " (rank ", worker_rank(), " of ",
      num_workers(), ")");
}

void Strategy::run_replicas(const std::function<void(int)>& fn) {
  LS_CHECK(!in_replica_context(), RuntimeError, "strategy.run() called from inside a replica: call it from the "
           "training loop (cross-replica context)");
  synchronize_variables(impl_->global_batch_size);  // once: before the first step every worker is checked and equal
  impl_->reducer->discard_unfinalized();
  auto body = [&](int r) {
    DeviceScope device(device_);
    Strategy* saved = t_current;
    t_current = this;
    t_replica = r;
    struct Reset {
      Strategy* s;
      ~Reset() {
        t_current = s;
        t_replica = -1;
      }
    } reset{saved};
    fn(r);
  };
  try {
    if (num_local_ == 1) return body(0);
    impl_->pool->run(body, [this] { impl_->local->abort("another replica of this worker failed"); });
  } catch (const std::exception& e) {
    impl_->last_error = e.what();  // what the other workers are told if this one stops
    throw;
  }
}

Strategy::Scope::Scope(Strategy* strategy)
    : previous_(t_current),
      creation_([strategy](const Variable& v) { strategy->register_variable(v); }),
      device_(strategy->device()) {
  t_current = strategy;
}
Strategy::Scope::~Scope() { t_current = previous_; }

void Strategy::register_variable(const Variable& v) {
  variables_.push_back(v);
  if (v.trainable()) impl_->reducer->watch(v);
}

// Sums data over local replicas (rank order), then over workers (replica 0), then hands every local
// replica the result: the same bits everywhere.
void Strategy::Impl::hierarchical_all_reduce(int replica, void* data, size_t count, DType dtype, const CollectiveOptions& o) {
  if (local) local_comms[static_cast<size_t>(replica)]->all_reduce(data, count, dtype, ReduceOp::SUM, o);
  if (!cross) return;
  if (replica == 0) cross->all_reduce(data, count, dtype, ReduceOp::SUM, o);
  if (local) local_comms[static_cast<size_t>(replica)]->broadcast(data, count * dtype_size(dtype), 0, o);
}

void Strategy::all_reduce_sum(std::vector<double>& values) {
  const CollectiveOptions o = collective_options(options_, Tag::kMetrics);
  if (in_replica_context()) {
    impl_->hierarchical_all_reduce(t_replica, values.data(), values.size(), DType::float64, o);
  } else if (impl_->cross) {
    impl_->cross->all_reduce(values.data(), values.size(), DType::float64, ReduceOp::SUM, o);
  }
}

void Strategy::merge_call(const std::function<void()>& update) {
  if (!impl_->local || !in_replica_context()) return update();
  const CollectiveOptions o = collective_options(options_, Tag::kMerge);
  Communicator& c = *impl_->local_comms[static_cast<size_t>(t_replica)];
  c.barrier(o);  // every replica has finished reading the variables for this step
  if (t_replica == 0) update();
  c.barrier(o);  // nobody reads them again before the update is done
}

void Strategy::merge_call(const std::function<void()>& prepare, const std::function<void(int, int)>& update) {
  if (!impl_->local || !in_replica_context()) {
    prepare();
    return update(0, 1);
  }
  const CollectiveOptions o = collective_options(options_, Tag::kMerge);
  Communicator& c = *impl_->local_comms[static_cast<size_t>(t_replica)];
  if (t_replica == 0) prepare();
  c.barrier(o);  // every replica has finished reading the variables for this step, and prepare is done
  update(t_replica, num_local_);
  c.barrier(o);  // nobody reads them again before every part is done
}

std::vector<Tensor> Strategy::all_reduce_gradients(const std::vector<Tensor>& gradients, const std::vector<Variable>& variables) {
  LS_CHECK(in_replica_context(), RuntimeError,
           "all_reduce_gradients must run inside strategy.run(): gradients are per replica");
  if (num_replicas_in_sync() == 1) return gradients;
  return impl_->reducer->finalize(t_replica, gradients, variables);
}

std::optional<std::vector<std::vector<Tensor>>> Strategy::unreduced_gradients(const std::vector<Tensor>& gradients,
                                                                               const std::vector<Variable>& variables) {
  LS_CHECK(in_replica_context(), RuntimeError,
           "unreduced_gradients must run inside strategy.run(): gradients are per replica");
  if (num_replicas_in_sync() == 1 || !impl_->reducer->sums_in_update()) return std::nullopt;
  return impl_->reducer->unreduced(t_replica, gradients, variables);
}

Tensor Strategy::reduce(ReduceOp op, const PerReplica<Tensor>& value, std::optional<int64_t> axis) {
  LS_CHECK(static_cast<int>(value.values.size()) == num_local_, ValueError, "reduce got ", value.values.size(),
           " values for ", num_local_, " local replicas");
  LS_CHECK(op == ReduceOp::SUM || op == ReduceOp::MEAN, ValueError, "strategy.reduce supports ReduceOp::SUM and MEAN");
  Tensor total;
  double count = 0;
  for (const Tensor& v : value.values) {
    Tensor x = raw_ops::cast(v, DType::float64);
    if (axis) {
      count += static_cast<double>(x.dim(*axis));
      x = raw_ops::sum(x, {*axis});
    } else {
      count += 1;
    }
    total = total.defined() ? raw_ops::binary(raw_ops::BinaryOp::add, total, x) : x.clone();
  }
  total = total.contiguous().clone();
  if (impl_->cross) {
    std::vector<double> buf = total.to_vector<double>();
    buf.push_back(count);
    impl_->cross->all_reduce(buf.data(), buf.size(), DType::float64, ReduceOp::SUM, collective_options(options_, Tag::kMetrics));
    count = buf.back();
    buf.pop_back();
    total = from_vector(buf, total.shape());
  }
  if (op == ReduceOp::MEAN) total = raw_ops::binary(raw_ops::BinaryOp::div, total, scalar(count, DType::float64));
  return raw_ops::cast(total, value.values[0].dtype());
}

Tensor Strategy::gather(const PerReplica<Tensor>& value, int64_t axis) {
  Tensor local = raw_ops::concat(value.values, axis);
  if (!impl_->cross) return local;
  // Workers must contribute equal shapes: check first, so a mismatch is an error and not garbage.
  std::vector<double> dims(local.shape().dims().begin(), local.shape().dims().end()), sum = dims;
  impl_->cross->all_reduce(sum.data(), sum.size(), DType::float64, ReduceOp::SUM, collective_options(options_, Tag::kMetrics));
  for (size_t i = 0; i < dims.size(); ++i)
    LS_CHECK(sum[i] == dims[i] * num_workers(), InvalidArgumentError,
             "strategy.gather needs the same shape on every worker; this worker has ", local.shape().str());
  Tensor c = local.cpu().contiguous();
  const size_t bytes = static_cast<size_t>(c.numel()) * dtype_size(c.dtype());
  Tensor all = Tensor::empty(Shape{num_workers() * c.numel()}, c.dtype());
  impl_->cross->all_gather(c.raw_data(), all.raw_data(), bytes, collective_options(options_, Tag::kMetrics));
  std::vector<Tensor> parts;
  for (int w = 0; w < num_workers(); ++w)
    parts.push_back(raw_ops::reshape(raw_ops::slice(all, {w * c.numel()}, {c.numel()}), c.shape()));
  return raw_ops::concat(parts, axis);
}

void Strategy::synchronize_variables(int64_t global_batch_size) {
  if (impl_->synchronized || !impl_->cross) {
    impl_->synchronized = true;
    return;
  }
  // A model without an Input builds its variables in its first step: check and broadcast before the next.
  if (variables_.empty()) return;
  // Every worker publishes what it built; all compare with the chief, so all stop with the same message.
  nlohmann::json vars = nlohmann::json::array();
  for (const Variable& v : variables_)
    vars.push_back({{"name", v.name()}, {"shape", v.shape().dims()}, {"dtype", std::string(dtype_name(v.dtype()))}});
  nlohmann::json mine{{"variables", vars}, {"global_batch_size", global_batch_size}};
  CoordinationClient& kv = *impl_->coordination;
  kv.set("model_fingerprint/" + std::to_string(worker_rank()), mine.dump());
  const auto timeout = collective_options(options_, 0).timeout;
  const nlohmann::json chief = nlohmann::json::parse(kv.get("model_fingerprint/0", timeout));
  const std::vector<Task> tasks = resolver_->training_tasks();
  std::string mismatch;
  for (int w = 1; w < num_workers() && mismatch.empty(); ++w) {
    const nlohmann::json other = nlohmann::json::parse(kv.get("model_fingerprint/" + std::to_string(w), timeout));
    const std::string who = tasks[static_cast<size_t>(w)].name(), boss = tasks[0].name();
    if (other["global_batch_size"] != chief["global_batch_size"]) {
      mismatch = make_message(who, " does not match the chief: global batch size is ", chief["global_batch_size"].dump(),
                              " on ", boss, " but ", other["global_batch_size"].dump(), " on ", who,
                              ": start every worker with the same batch size");
      break;
    }
    const auto& a = chief["variables"];
    const auto& b = other["variables"];
    for (size_t i = 0; i < std::max(a.size(), b.size()) && mismatch.empty(); ++i) {
      if (i < a.size() && i < b.size() && a[i] == b[i]) continue;
      mismatch = make_message(who, " does not match the chief: its model differs at variable ", i, " (",
                              (i < a.size() ? a[i].dump() : "none"), " on ", boss, ", ",
                              (i < b.size() ? b[i].dump() : "none"), " on ", who, "): start every worker with the same model");
    }
  }
  if (!mismatch.empty()) {
    kv.report_error(mismatch);  // every worker stops, with the reason
    throw ValueError(mismatch);
  }
  // The chief's initial values, to everybody, in one packed broadcast.
  size_t total = 0;
  for (const Variable& v : variables_) total += static_cast<size_t>(v.value().numel()) * dtype_size(v.dtype());
  std::vector<char> buf(total);
  size_t at = 0;
  for (const Variable& v : variables_) {
    const size_t n = static_cast<size_t>(v.value().numel()) * dtype_size(v.dtype());
    std::memcpy(buf.data() + at, v.value().cpu().contiguous().raw_data(), n);
    at += n;
  }
  impl_->cross->broadcast(buf.data(), buf.size(), 0, collective_options(options_, Tag::kInitialValues));
  at = 0;
  for (const Variable& v : variables_) {
    const size_t n = static_cast<size_t>(v.value().numel()) * dtype_size(v.dtype());
    v.assign(from_data(buf.data() + at, v.shape(), v.dtype()));
    at += n;
  }
  impl_->synchronized = true;
}

// ---- concrete strategies ----

namespace {
// A resolver for one process: no cluster, worker 0.
std::unique_ptr<ClusterResolver> local_resolver() { return std::make_unique<TFConfigClusterResolver>(std::string()); }
}  // namespace

DefaultStrategy::DefaultStrategy() : Strategy(1, local_resolver(), {}) {}

MirroredStrategy::MirroredStrategy(std::vector<std::string> devices, CommunicationOptions options)
    : Strategy(devices.empty() ? 1 : static_cast<int>(devices.size()), local_resolver(), options),
      devices_(std::move(devices)) {
  if (devices_.empty()) devices_.push_back(device_.str());
  else device_ = Device{};  // devices named: the CPU unless one of them is a GPU
  int gpus = 0;
  for (const std::string& d : devices_) {
    if (d.rfind("/job:", 0) == 0) continue;  // a task's device; its replicas run on this process's CPU
    const Device parsed = Device::parse(d);
    if (!parsed.is_gpu()) continue;
    try {
      check_device_available(parsed);
    } catch (const FailedPreconditionError& e) {  // TF's ValueError for a device the strategy cannot use
      const std::string why = e.what();
      throw ValueError(make_message("device '", d, "' is not available: ", why.substr(why.find(": ") + 2)));
    }
    device_ = parsed;
    ++gpus;
  }
  LS_CHECK(gpus == 0 || devices_.size() == 1, ValueError, "MirroredStrategy over ", devices_.size(),
           " devices with GPUs among them is not supported yet: give it one GPU, or run one worker process per GPU "
           "with MultiWorkerMirroredStrategy (lockstep launch)");
  log(LogLevel::info, "MirroredStrategy with ", devices_.size(), " replica(s) on ", device_.str());
}

MultiWorkerMirroredStrategy::MultiWorkerMirroredStrategy(CommunicationOptions options)
    : MultiWorkerMirroredStrategy(options, resolve_cluster()) {}

MultiWorkerMirroredStrategy::MultiWorkerMirroredStrategy(CommunicationOptions options, std::unique_ptr<ClusterResolver> resolver)
    : Strategy(1, std::move(resolver), options) {
  LS_CHECK(options.implementation != CommunicationImplementation::NCCL || device_.is_gpu(), ValueError,
           "CommunicationImplementation::NCCL needs GPUs, but this worker runs on ", device_.str(),
           ": run it on a GPU (lockstep train --device gpu, LOCKSTEP_DEVICE=/gpu:0), or use AUTO or RING");
  connect_workers();
}

}  // namespace lockstep::distribute
