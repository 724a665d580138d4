// The coordination service rank 0 runs, a synchronous gRPC server: registration and the fingerprint check,
// heartbeats and watch streams that notice a dead task within milliseconds, failure propagation, the
// key-value store and the barriers. Waiting calls sleep on one condition variable, bounded by their deadline.
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <condition_variable>
#include <map>
#include <set>
#include <mutex>
#include <thread>

#include "coordination-impl.h"
#include "distribute/coordination/coordination.grpc.pb.h"
#include "lockstep/core/logging.h"

namespace lockstep::distribute {

namespace {

namespace pb = ::lockstep::coordination;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// How often a waiting call checks whether its caller hung up, and a watch whether its task's connection
// closed: the latency of detecting a killed task.
constexpr milliseconds kCancelPoll{50};
// How long a stopping server lets the answers in flight (the shutdown barrier's) reach their tasks.
constexpr milliseconds kStopGrace{1000};
// Values in the store may be large (rendezvous blobs); gRPC's default limit is 4 MiB.
constexpr int kMaxMessageBytes = 64 << 20;

// Refusals logged with their caller's address; further ones from new addresses are counted in one line.
constexpr size_t kMaxLoggedRefusals = 64;

// The longest a call may ask to wait: its deadline, now plus this, cannot overflow the clock.
constexpr milliseconds kMaxWait = std::chrono::hours(24);

// A request's timeout_ms as a wait: a negative one is no wait, and none is longer than kMaxWait.
milliseconds requested_wait(int64_t timeout_ms) {
  return milliseconds(std::clamp<int64_t>(timeout_ms, 0, kMaxWait.count()));
}

// Why a wait ended.
enum class Wake { ready, failed, stopping, timeout, cancelled };

// "worker:1 at a:1", "worker:1 at a:1 and worker:2 at a:2", "worker:1 at a:1, worker:2 at a:2 and ...".
std::string join_labels(const std::vector<std::string>& labels) {
  std::string out;
  for (size_t i = 0; i < labels.size(); ++i) {
    if (i > 0) out += i + 1 == labels.size() ? " and " : ", ";
    out += labels[i];
  }
  return out;
}

}  // namespace

class CoordinationService::Impl final : public pb::Coordination::Service {
 public:
  explicit Impl(const CoordinationOptions& options);
  ~Impl() override;
  void wait_failure_delivered(milliseconds timeout);

  grpc::Status Register(grpc::ServerContext* ctx, const pb::RegisterRequest* req, pb::Empty*) override;
  grpc::Status Heartbeat(grpc::ServerContext* ctx, const pb::Task* req, pb::Empty*) override;
  grpc::Status Watch(grpc::ServerContext* ctx, const pb::Task* req, grpc::ServerWriter<pb::Event>* writer) override;
  grpc::Status Set(grpc::ServerContext* ctx, const pb::SetRequest* req, pb::Empty*) override;
  grpc::Status Get(grpc::ServerContext* ctx, const pb::GetRequest* req, pb::GetResponse* resp) override;
  grpc::Status Barrier(grpc::ServerContext* ctx, const pb::BarrierRequest* req, pb::Empty*) override;
  grpc::Status Shutdown(grpc::ServerContext* ctx, const pb::BarrierRequest* req, pb::Empty*) override;
  grpc::Status ReportError(grpc::ServerContext* ctx, const pb::ReportErrorRequest* req, pb::Empty*) override;

 private:
  struct Task {
    bool registered = false;
    uint64_t incarnation = 0;
    std::string fingerprint;
    Clock::time_point last_heartbeat;
    bool watching = false;  // its watch stream is open
    bool told = false;      // the failure notice was written to its watch stream
    bool left = false;      // it entered the shutdown barrier: silence and disconnection are no longer failures
    bool gave_up = false;   // it registered, then withdrew when its wait timed out: missing, but not to blame
  };
  // One reusable barrier: a round completes when every task arrived, then the generation advances.
  struct BarrierState {
    std::vector<bool> arrived;
    std::vector<bool> gave_up;  // arrived in this round, then withdrew on its timeout: missing, but not to blame
    int count = 0;
    uint64_t generation = 0;
  };

  template <typename Ready>
  Wake wait(std::unique_lock<std::mutex>& lock, grpc::ServerContext* ctx, Clock::time_point deadline, Ready ready);
  // A timeout's status names in its details the task it blames (the first missing one), if any.
  grpc::Status wake_status(Wake wake, const std::string& timeout_message, const std::string& culprit = "") const;
  // ABORTED with the failure's message, and the failed task's name in its details (the clients' culprit).
  grpc::Status job_failed() const { return {grpc::StatusCode::ABORTED, failure_, failed_task_}; }
  grpc::Status check_task(const pb::Task& task) const;
  // UNAUTHENTICATED, logged once per caller address, for a call without the job's cluster token.
  grpc::Status authenticate(const grpc::ServerContext& ctx);
  void finish_registration();
  void fail_job(int rank, const std::string& reason);
  grpc::Status pass_barrier(std::unique_lock<std::mutex>& lock, grpc::ServerContext* ctx, BarrierState& barrier,
                            int rank, milliseconds timeout, const std::string& what);
  void monitor_heartbeats();

  const CoordinationOptions options_;
  const TaskLabels labels_;
  const int world_size_;
  const Clock::time_point registration_deadline_;

  std::mutex mu_;
  std::condition_variable cv_;  // notified on every change of the state below
  std::vector<Task> tasks_;
  int registered_ = 0;
  bool registration_done_ = false;
  grpc::Status registration_error_;  // the answer to every Register once registration failed
  bool failed_ = false;
  std::string failure_;
  std::string failed_task_;  // the name of the task whose failure failure_ reports
  std::map<std::string, std::string> store_;
  std::map<std::string, BarrierState> barriers_;
  BarrierState shutdown_barrier_;
  bool stopping_ = false;

  std::mutex refused_mu_;
  std::set<std::string> refused_peers_;  // logged ones, at most kMaxLoggedRefusals

  std::unique_ptr<grpc::Server> server_;
  std::thread monitor_;
};

CoordinationService::Impl::Impl(const CoordinationOptions& options)
    : options_(options),
      labels_(options),
      world_size_(options.world_size),
      registration_deadline_(Clock::now() + options.startup_timeout),
      tasks_(static_cast<size_t>(options.world_size)) {
  quiet_grpc_logging();
  const std::string& address = options_.service_address;
  const size_t colon = address.rfind(':');
  const std::string port = colon == std::string::npos ? "" : address.substr(colon + 1);
  LS_CHECK(!port.empty() && port.find_first_not_of("0123456789") == std::string::npos, ValueError, labels_.name(0),
           "'s address \"", address, "\" has no port: TF_CONFIG addresses are \"host:port\"");
  const std::string listen = options_.security.bind_all_interfaces ? "0.0.0.0:" + port : address;
  int bound_port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort(listen, server_credentials(options_.security), &bound_port);
  builder.RegisterService(this);
  // gRPC sets SO_REUSEPORT by default, which would let a second job silently share the port.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.SetMaxReceiveMessageSize(kMaxMessageBytes);
  server_ = builder.BuildAndStart();
  LS_CHECK(server_ && bound_port != 0, UnavailableError, labels_.name(0), " cannot start the coordination service on ",
           listen,
           ": the port is in use (another job or a stale process?) or the host is not one of this machine's; free "
           "the port, give the chief another address in TF_CONFIG, or set LOCKSTEP_BIND_ALL_INTERFACES=1 when the "
           "address is not the container's own");
  monitor_ = std::thread([this] { monitor_heartbeats(); });
  const std::string host = address.substr(0, colon);
  const bool loopback = !options_.security.bind_all_interfaces &&
                        (host == "localhost" || host.starts_with("127.") || host == "[::1]");
  if (options_.security.token.empty() && !loopback)
    log(LogLevel::warning, "the coordination service on ", listen, " has no cluster token: anyone who reaches it "
        "can join the job; set LOCKSTEP_CLUSTER_TOKEN (or --cluster-token-file) on every task");
  log(LogLevel::debug, "coordination service of ", labels_.service_label(), " listening on ", listen,
      options_.security.tls() ? " (TLS)" : "");
}

CoordinationService::Impl::~Impl() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  server_->Shutdown(std::chrono::system_clock::now() + kStopGrace);
  monitor_.join();
}

template <typename Ready>
Wake CoordinationService::Impl::wait(std::unique_lock<std::mutex>& lock, grpc::ServerContext* ctx,
                                     Clock::time_point deadline, Ready ready) {
  while (true) {
    if (ready()) return Wake::ready;
    if (failed_) return Wake::failed;
    if (stopping_) return Wake::stopping;
    const auto now = Clock::now();
    if (now >= deadline) return Wake::timeout;
    // A caller that gave up (or died) frees its thread and, while registering, its place.
    if (ctx->IsCancelled()) return Wake::cancelled;
    cv_.wait_until(lock, std::min(deadline, now + kCancelPoll));
  }
}

grpc::Status CoordinationService::Impl::wake_status(Wake wake, const std::string& timeout_message,
                                                    const std::string& culprit) const {
  switch (wake) {
    case Wake::ready:
      return grpc::Status::OK;
    case Wake::failed:
      return job_failed();
    case Wake::stopping:
      return {grpc::StatusCode::UNAVAILABLE, "the coordination service is stopping"};
    case Wake::timeout:
      return {grpc::StatusCode::DEADLINE_EXCEEDED, timeout_message, culprit};
    case Wake::cancelled:
      break;
  }
  return {grpc::StatusCode::CANCELLED, "the caller cancelled"};
}

grpc::Status CoordinationService::Impl::check_task(const pb::Task& task) const {
  const int rank = task.rank();
  if (rank < 0 || rank >= world_size_) {
    return {grpc::StatusCode::INVALID_ARGUMENT,
            make_message("rank ", rank, " is outside the cluster of ", world_size_, " tasks of ",
                         labels_.service_label(), ": every task needs the same TF_CONFIG cluster")};
  }
  const Task& t = tasks_[static_cast<size_t>(rank)];
  if (!t.registered || t.incarnation != task.incarnation()) {
    return {grpc::StatusCode::FAILED_PRECONDITION,
            labels_.label(rank) +
                " is not the process that registered with the coordination service (it was "
                "restarted?): restart every task of the job together"};
  }
  return grpc::Status::OK;
}

grpc::Status CoordinationService::Impl::authenticate(const grpc::ServerContext& ctx) {
  if (token_matches(ctx, options_.security.token)) return grpc::Status::OK;
  const std::string peer = ctx.peer();
  {
    std::lock_guard lock(refused_mu_);
    if (refused_peers_.size() < kMaxLoggedRefusals && refused_peers_.insert(peer).second) {
      log(LogLevel::warning, "coordination service of ", labels_.service_label(), " refused a call from ", peer,
          ": it did not carry the job's cluster token");
      if (refused_peers_.size() == kMaxLoggedRefusals) log(LogLevel::warning, "further refused callers are not logged");
    }
  }
  return {grpc::StatusCode::UNAUTHENTICATED,
          "the coordination service of " + labels_.service_label() +
              " refused this task's cluster token (missing or different from the chief's): give every task the "
              "job's token (LOCKSTEP_CLUSTER_TOKEN or --cluster-token-file)"};
}

grpc::Status CoordinationService::Impl::Register(grpc::ServerContext* ctx, const pb::RegisterRequest* req, pb::Empty*) {
  if (grpc::Status refused = authenticate(*ctx); !refused.ok()) return refused;
  const int rank = req->task().rank();
  const uint64_t incarnation = req->task().incarnation();
  std::unique_lock lock(mu_);
  if (req->world_size() != world_size_) {
    return {
        grpc::StatusCode::INVALID_ARGUMENT,
        make_message(labels_.name(rank), " expects a cluster of ", req->world_size(), " tasks but ",
                     labels_.service_label(), " has ", world_size_, ": every task needs the same TF_CONFIG cluster")};
  }
  if (rank < 0 || rank >= world_size_) return check_task(req->task());
  Task& t = tasks_[static_cast<size_t>(rank)];
  if (t.registered && t.incarnation != incarnation) {
    return {grpc::StatusCode::FAILED_PRECONDITION,
            labels_.label(rank) +
                " registered again from another process: a restarted task cannot join a running "
                "job and two processes cannot share a task index; restart every task together"};
  }
  if (failed_) return job_failed();
  if (!registration_error_.ok()) return registration_error_;
  if (!t.registered) {
    t.registered = true;
    t.gave_up = false;
    t.incarnation = incarnation;
    t.fingerprint = req->fingerprint();
    if (++registered_ == world_size_) finish_registration();
  }
  const milliseconds timeout = requested_wait(req->timeout_ms());
  const auto deadline = std::min(Clock::now() + timeout, registration_deadline_);
  const Wake wake = wait(lock, ctx, deadline, [&] { return registration_done_ || !registration_error_.ok(); });
  if (wake == Wake::ready) return registration_error_;
  std::vector<std::string> missing;
  std::string culprit;  // the first task that never registered
  for (int r = 0; r < world_size_; ++r) {
    const Task& other = tasks_[static_cast<size_t>(r)];
    if (other.registered) continue;
    missing.push_back(labels_.label(r));
    if (culprit.empty() && !other.gave_up) culprit = labels_.name(r);
  }
  // Withdraw, so that a caller that gave up is reported missing rather than counted present.
  t.registered = false;
  t.gave_up = true;
  --registered_;
  if (wake != Wake::timeout) return wake_status(wake, "");
  const grpc::Status timed_out(
      grpc::StatusCode::DEADLINE_EXCEEDED,
      make_message(join_labels(missing), " never registered with the coordination service of ", labels_.service_label(),
                   " within ", format_seconds(timeout), ": ", missing.size() == 1 ? "is it" : "are they",
                   " running, with the same TF_CONFIG cluster?"),
      culprit);
  // The chief giving up ends registration for everybody (its service is about to go), with one message.
  if (rank == 0 || Clock::now() >= registration_deadline_) {
    registration_error_ = timed_out;
    cv_.notify_all();
  }
  return timed_out;
}

void CoordinationService::Impl::finish_registration() {
  std::string first, first_task;
  int differing = 0;
  for (int r = 1; r < world_size_; ++r) {
    const std::string difference = fingerprint_difference(
        tasks_[0].fingerprint, tasks_[static_cast<size_t>(r)].fingerprint, labels_.name(0), labels_.name(r));
    if (difference.empty()) continue;
    if (differing++ == 0) {
      first = labels_.name(r) + " does not match the chief: " + difference;
      first_task = labels_.name(r);
    }
  }
  if (differing > 0) {
    if (differing > 1) first += make_message(" (and ", differing - 1, " more tasks differ)");
    registration_error_ = grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                       first + "; every task must run the same program and configuration", first_task);
  } else {
    registration_done_ = true;
    for (Task& t : tasks_) t.last_heartbeat = Clock::now();
    log(LogLevel::debug, "all ", world_size_, " tasks registered with the coordination service of ",
        labels_.service_label());
  }
  cv_.notify_all();
}

void CoordinationService::Impl::fail_job(int rank, const std::string& reason) {
  if (failed_) return;
  failed_ = true;
  failure_ = labels_.label(rank) + " failed: " + reason;
  failed_task_ = labels_.name(rank);
  log(LogLevel::debug, "coordination service: ", failure_);
  cv_.notify_all();
}

grpc::Status CoordinationService::Impl::Heartbeat(grpc::ServerContext* ctx, const pb::Task* req, pb::Empty*) {
  if (grpc::Status refused = authenticate(*ctx); !refused.ok()) return refused;
  std::lock_guard lock(mu_);
  if (grpc::Status status = check_task(*req); !status.ok()) return status;
  // A task declared failed (it was stopped, then resumed) learns it here too.
  if (failed_) return job_failed();
  tasks_[static_cast<size_t>(req->rank())].last_heartbeat = Clock::now();
  return grpc::Status::OK;
}

grpc::Status CoordinationService::Impl::Watch(grpc::ServerContext* ctx, const pb::Task* req,
                                              grpc::ServerWriter<pb::Event>* writer) {
  if (grpc::Status refused = authenticate(*ctx); !refused.ok()) return refused;
  const int rank = req->rank();
  std::unique_lock lock(mu_);
  if (grpc::Status status = check_task(*req); !status.ok()) return status;
  Task& t = tasks_[static_cast<size_t>(rank)];
  if (t.watching) return {grpc::StatusCode::ALREADY_EXISTS, labels_.label(rank) + " is already watched"};
  t.watching = true;
  lock.unlock();
  pb::Event watching;
  watching.set_kind(pb::Event::WATCHING);
  bool connected = writer->Write(watching);
  lock.lock();
  while (!stopping_ && connected) {
    if (failed_ && !t.told) {
      pb::Event event;
      event.set_kind(pb::Event::JOB_FAILED);
      event.set_message(failure_);
      event.set_task(failed_task_);
      lock.unlock();
      writer->Write(event);
      lock.lock();
      t.told = true;
      cv_.notify_all();
      continue;
    }
    // The stream is cancelled within milliseconds of the task's process dying (its socket closes).
    connected = !ctx->IsCancelled();
    if (connected) cv_.wait_for(lock, kCancelPoll);
  }
  t.watching = false;
  if (!connected && !t.left && !stopping_) {
    fail_job(rank,
             "its connection to the coordination service closed before the shutdown barrier (its process ended, "
             "or the network to it failed)");
  }
  cv_.notify_all();
  return grpc::Status::OK;
}

grpc::Status CoordinationService::Impl::Set(grpc::ServerContext* ctx, const pb::SetRequest* req, pb::Empty*) {
  if (grpc::Status refused = authenticate(*ctx); !refused.ok()) return refused;
  std::lock_guard lock(mu_);
  if (grpc::Status status = check_task(req->task()); !status.ok()) return status;
  if (failed_) return job_failed();
  store_[req->key()] = req->value();
  cv_.notify_all();
  return grpc::Status::OK;
}

grpc::Status CoordinationService::Impl::Get(grpc::ServerContext* ctx, const pb::GetRequest* req,
                                            pb::GetResponse* resp) {
  if (grpc::Status refused = authenticate(*ctx); !refused.ok()) return refused;
  std::unique_lock lock(mu_);
  if (grpc::Status status = check_task(req->task()); !status.ok()) return status;
  if (failed_) return job_failed();
  auto found = store_.find(req->key());
  if (found == store_.end() && !req->wait()) return {grpc::StatusCode::NOT_FOUND, ""};
  const milliseconds timeout = requested_wait(req->timeout_ms());
  const Wake wake =
      wait(lock, ctx, Clock::now() + timeout, [&] { return (found = store_.find(req->key())) != store_.end(); });
  if (wake == Wake::ready) {
    resp->set_value(found->second);
    return grpc::Status::OK;
  }
  return wake_status(wake, make_message(labels_.name(req->task().rank()), " waited ", format_seconds(timeout),
                                        " for key \"", req->key(),
                                        "\" but no task set it: another task is slow or "
                                        "stuck (see its log), or raise the timeout"));
}

grpc::Status CoordinationService::Impl::pass_barrier(std::unique_lock<std::mutex>& lock, grpc::ServerContext* ctx,
                                                     BarrierState& barrier, int rank, milliseconds timeout,
                                                     const std::string& what) {
  if (barrier.arrived.empty()) {
    barrier.arrived.assign(static_cast<size_t>(world_size_), false);
    barrier.gave_up.assign(static_cast<size_t>(world_size_), false);
  }
  if (!barrier.arrived[static_cast<size_t>(rank)]) {
    barrier.arrived[static_cast<size_t>(rank)] = true;
    barrier.gave_up[static_cast<size_t>(rank)] = false;
    ++barrier.count;
  }
  const uint64_t generation = barrier.generation;
  if (barrier.count == world_size_) {
    ++barrier.generation;
    barrier.arrived.assign(static_cast<size_t>(world_size_), false);
    barrier.gave_up.assign(static_cast<size_t>(world_size_), false);
    barrier.count = 0;
    cv_.notify_all();
    return grpc::Status::OK;
  }
  const Wake wake = wait(lock, ctx, Clock::now() + timeout, [&] { return barrier.generation != generation; });
  if (wake == Wake::ready) return grpc::Status::OK;
  std::vector<std::string> missing;
  std::string culprit;  // the first task that never arrived
  for (int r = 0; r < world_size_; ++r) {
    if (barrier.arrived[static_cast<size_t>(r)]) continue;
    missing.push_back(labels_.label(r));
    if (culprit.empty() && !barrier.gave_up[static_cast<size_t>(r)]) culprit = labels_.name(r);
  }
  // Withdraw: a later round must not count an arrival whose caller gave up.
  barrier.arrived[static_cast<size_t>(rank)] = false;
  barrier.gave_up[static_cast<size_t>(rank)] = true;
  --barrier.count;
  return wake_status(wake,
                     make_message(what, " timed out after ", format_seconds(timeout), " on ", labels_.name(rank), ": ",
                                  join_labels(missing), missing.size() == 1 ? " has" : " have",
                                  " not arrived (slow, stuck, or on another code path; see ",
                                  missing.size() == 1 ? "its log)" : "their logs)"),
                     culprit);
}

grpc::Status CoordinationService::Impl::Barrier(grpc::ServerContext* ctx, const pb::BarrierRequest* req, pb::Empty*) {
  if (grpc::Status refused = authenticate(*ctx); !refused.ok()) return refused;
  std::unique_lock lock(mu_);
  if (grpc::Status status = check_task(req->task()); !status.ok()) return status;
  if (failed_) return job_failed();
  return pass_barrier(lock, ctx, barriers_[req->name()], req->task().rank(), requested_wait(req->timeout_ms()),
                      "barrier \"" + req->name() + "\"");
}

grpc::Status CoordinationService::Impl::Shutdown(grpc::ServerContext* ctx, const pb::BarrierRequest* req, pb::Empty*) {
  if (grpc::Status refused = authenticate(*ctx); !refused.ok()) return refused;
  std::unique_lock lock(mu_);
  if (grpc::Status status = check_task(req->task()); !status.ok()) return status;
  // From here on the task may go quiet and hang up: it is done, whatever the barrier's outcome.
  tasks_[static_cast<size_t>(req->task().rank())].left = true;
  if (failed_) return job_failed();
  return pass_barrier(lock, ctx, shutdown_barrier_, req->task().rank(), requested_wait(req->timeout_ms()),
                      "the shutdown barrier");
}

grpc::Status CoordinationService::Impl::ReportError(grpc::ServerContext* ctx, const pb::ReportErrorRequest* req,
                                                    pb::Empty*) {
  if (grpc::Status refused = authenticate(*ctx); !refused.ok()) return refused;
  std::lock_guard lock(mu_);
  if (grpc::Status status = check_task(req->task()); !status.ok()) return status;
  fail_job(req->task().rank(), req->message());
  return grpc::Status::OK;
}

void CoordinationService::Impl::monitor_heartbeats() {
  const milliseconds timeout = options_.heartbeat_timeout;
  const milliseconds period = std::clamp(timeout / 8, milliseconds(10), milliseconds(500));
  std::unique_lock lock(mu_);
  while (!stopping_) {
    cv_.wait_for(lock, period);
    if (!registration_done_ || failed_ || stopping_) continue;
    const auto now = Clock::now();
    for (int r = 0; r < world_size_; ++r) {
      const Task& t = tasks_[static_cast<size_t>(r)];
      if (!t.left && now - t.last_heartbeat > timeout) {
        fail_job(r, "no heartbeat for " + format_seconds(timeout) +
                        " (the process hangs or was stopped, or its host is unreachable)");
        break;
      }
    }
  }
}

void CoordinationService::Impl::wait_failure_delivered(milliseconds timeout) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, timeout, [&] {
    if (!failed_) return true;
    for (int r = 1; r < world_size_; ++r) {
      const Task& t = tasks_[static_cast<size_t>(r)];
      if (t.watching && !t.told) return false;
    }
    return true;
  });
}

CoordinationService::CoordinationService(const CoordinationOptions& options) : impl_(std::make_unique<Impl>(options)) {}
CoordinationService::~CoordinationService() = default;
void CoordinationService::wait_failure_delivered(milliseconds timeout) {
  impl_->wait_failure_delivered(timeout);
}

}  // namespace lockstep::distribute
