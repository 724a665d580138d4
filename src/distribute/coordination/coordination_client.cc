// The coordination client every task runs: connects and registers (rank 0 first starts the service), then a
// heartbeat thread and a watch thread learn of a failed job and run on_error once. Every call carries a gRPC
// deadline, and a failure of the job cancels the calls in flight, so no caller waits on a dead peer.
#include <grpcpp/grpcpp.h>

#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "coordination-impl.h"
#include "distribute/coordination/coordination.grpc.pb.h"
#include "lockstep/core/failure_report.h"
#include "lockstep/core/files.h"
#include "lockstep/core/logging.h"

namespace lockstep::distribute {

namespace {

namespace pb = ::lockstep::coordination;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// Beyond the wait a call asks the service for, so that the service's own answer (naming who is missing)
// arrives before the transport's deadline.
constexpr milliseconds kRpcGrace{2000};
// How long a failing chief lets its service deliver the failure to the others before on_error (which
// usually exits, taking the service down).
constexpr milliseconds kDeliveryWait{1000};
constexpr milliseconds kReportTimeout{5000};
constexpr int kMaxMessageBytes = 64 << 20;

std::chrono::system_clock::time_point deadline_after(Clock::duration d) {
  return std::chrono::system_clock::now() + d;
}

// gRPC's message for a failed call, on one line.
std::string grpc_words(const grpc::Status& status) {
  std::string said = status.error_message();
  for (char& c : said)
    if (c == '\n' || c == '\r') c = ' ';
  return said;
}

milliseconds remaining(Clock::time_point deadline) {
  return std::max(milliseconds(0), std::chrono::duration_cast<milliseconds>(deadline - Clock::now()));
}

// Logs the job's failure, tells the launcher whom it blames, and exits.
void default_on_error(const std::string& message, const std::string& culprit) {
  report_failure({ErrorKind::kUnavailable, culprit});
  log(LogLevel::error, message);
  // A checkpoint already being written in the background is finished first: the restart resumes from it.
  if (!wait_for_pending_writes(std::chrono::seconds(30)))
    log(LogLevel::error, "a background checkpoint write did not finish within 30 s and is abandoned");
  std::fflush(stdout);
  std::fflush(stderr);
  std::_Exit(1);
}

}  // namespace

struct CoordinationClient::Impl {
  explicit Impl(CoordinationOptions options);
  ~Impl() { stop(); }

  void connect();
  // Runs one RPC under `timeout`, registered so that a failure of the job cancels it.
  template <typename Rpc>
  grpc::Status call(milliseconds timeout, Rpc rpc);
  // Throws the lockstep error for a failed call; the job's failure, when known, wins over what the RPC said.
  [[noreturn]] void raise(const grpc::Status& status, const std::string& timeout_message);
  void check_usable() const;
  // Latches the job's failure (blaming the task `culprit`), cancels the calls in flight and, when `notify`,
  // runs on_error.
  void fail(const std::string& message, const std::string& culprit, bool notify);
  void watch();
  void heartbeat();
  void stop();
  pb::Task task() const;
  // The service lost, as this task saw it: the heartbeats unanswered for heartbeat_timeout, or the connection
  // gone with gRPC's words. Only what was seen: from here a dead chief and a broken network look alike.
  std::string no_answer_message(const grpc::Status& last) const;
  std::string lost_connection_message(const grpc::Status& status) const;
  // The task whose loss a lost or silent service means: the chief, which runs it.
  std::string chief() const { return labels.name(0); }

  const CoordinationOptions options;
  const TaskLabels labels;
  std::unique_ptr<CoordinationService> service;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<pb::Coordination::Stub> stub;

  mutable std::mutex mu;
  std::condition_variable cv;
  std::set<grpc::ClientContext*> calls;  // in flight
  bool started = false;                  // the constructor returned: failures now go to on_error
  bool watching = false;                 // the service watches our connection
  bool failed = false;                   // the job failed; `failure` says why
  bool reported = false;                 // this task reported its own error: no on_error for it
  bool shutting_down = false;            // in shutdown(): the shutdown barrier decides, not on_error
  bool stopping = false;                 // the threads are being stopped
  std::string failure;
  std::string failed_task;  // the task `failure` blames
  std::thread watch_thread;
  std::thread heartbeat_thread;
};

namespace {

CoordinationOptions checked(CoordinationOptions options) {
  const int n = options.world_size;
  LS_CHECK(n >= 1, ValueError, "coordination world_size is ", n, ": it must be at least 1");
  LS_CHECK(options.rank >= 0 && options.rank < n, ValueError, "coordination rank ", options.rank,
           " is outside the cluster of ", n, " tasks");
  LS_CHECK(options.task_names.empty() || options.task_names.size() == static_cast<size_t>(n), ValueError,
           "coordination task_names has ", options.task_names.size(), " entries for ", n, " tasks");
  LS_CHECK(options.task_addresses.empty() || options.task_addresses.size() == static_cast<size_t>(n), ValueError,
           "coordination task_addresses has ", options.task_addresses.size(), " entries for ", n, " tasks");
  LS_CHECK(!options.service_address.empty(), ValueError,
           "coordination service_address is empty: give the chief's \"host:port\" from TF_CONFIG");
  LS_CHECK(options.heartbeat_interval.count() > 0 && options.heartbeat_timeout > options.heartbeat_interval, ValueError,
           "coordination heartbeat_timeout (", options.heartbeat_timeout.count(),
           " ms) must exceed heartbeat_interval (", options.heartbeat_interval.count(), " ms)");
  while (options.incarnation == 0) {
    std::random_device random;
    options.incarnation = (static_cast<uint64_t>(random()) << 32) | random();
  }
  return options;
}

}  // namespace

CoordinationClient::Impl::Impl(CoordinationOptions options_in)
    : options(checked(std::move(options_in))), labels(options) {
  quiet_grpc_logging();
}

pb::Task CoordinationClient::Impl::task() const {
  pb::Task t;
  t.set_rank(options.rank);
  t.set_incarnation(options.incarnation);
  return t;
}

std::string CoordinationClient::Impl::no_answer_message(const grpc::Status& last) const {
  const bool said = !last.ok() && last.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED;
  return labels.name(options.rank) + " got no answer from the coordination service on " + labels.service_label() +
         " for " + format_seconds(options.heartbeat_timeout) + (said ? " (gRPC: " + grpc_words(last) + ")" : "") +
         ": the chief's process ended, hangs or was stopped, or the network to it failed";
}

std::string CoordinationClient::Impl::lost_connection_message(const grpc::Status& status) const {
  return labels.name(options.rank) + " lost its connection to the coordination service on " + labels.service_label() +
         " (gRPC: " + (status.ok() ? "the service ended the stream" : grpc_words(status)) +
         "): the chief's process ended, or the network to it failed";
}

template <typename Rpc>
grpc::Status CoordinationClient::Impl::call(milliseconds timeout, Rpc rpc) {
  grpc::ClientContext ctx;
  ctx.set_deadline(deadline_after(timeout));
  add_cluster_token(ctx, options.security);
  {
    std::lock_guard lock(mu);
    if (failed) return {grpc::StatusCode::ABORTED, failure};
    if (stopping) return {grpc::StatusCode::CANCELLED, "the coordination client is stopping"};
    calls.insert(&ctx);
  }
  const grpc::Status status = rpc(&ctx);
  std::lock_guard lock(mu);
  calls.erase(&ctx);
  return status;
}

void CoordinationClient::Impl::raise(const grpc::Status& status, const std::string& timeout_message) {
  {
    std::lock_guard lock(mu);
    if (failed) throw UnavailableError(failure, Culprit{failed_task});
  }
  // The service puts the name of the task it blames in the status's details.
  const std::string& message = status.error_message();
  const Culprit culprit{status.error_details()};
  switch (status.error_code()) {
    case grpc::StatusCode::ABORTED:
      throw UnavailableError(message, culprit);
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      // gRPC's own "Deadline Exceeded": the service did not answer in time. The service's message names who
      // is missing.
      if (message == "Deadline Exceeded") throw DeadlineExceededError(timeout_message, Culprit{chief()});
      throw DeadlineExceededError(message, culprit);
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::FAILED_PRECONDITION:
    case grpc::StatusCode::ALREADY_EXISTS:
    case grpc::StatusCode::UNAUTHENTICATED:
      throw ValueError(message, culprit);
    case grpc::StatusCode::UNAVAILABLE:
      throw UnavailableError(lost_connection_message(status), Culprit{chief()});
    default:
      throw UnavailableError(
          make_message(labels.name(options.rank), "'s call to the coordination service on ", labels.service_label(),
                       " failed (gRPC status ", static_cast<int>(status.error_code()), ": ", grpc_words(status), ")"),
          Culprit{chief()});
  }
}

void CoordinationClient::Impl::connect() {
  const Clock::time_point deadline = Clock::now() + options.startup_timeout;
  if (options.rank == 0) service = std::make_unique<CoordinationService>(options);

  grpc::ChannelArguments args;
  // Workers usually start before the chief: retry often rather than with gRPC's backoff of up to 2 minutes.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  // A connection of its own, so that this client's death closes a socket the service notices.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetMaxReceiveMessageSize(kMaxMessageBytes);
  channel = grpc::CreateCustomChannel(options.service_address, channel_credentials(options.security), args);
  stub = pb::Coordination::NewStub(channel);
  if (!channel->WaitForConnected(deadline_after(remaining(deadline)))) {
    throw UnavailableError(make_message(labels.name(options.rank), " cannot reach the coordination service of ",
                                        labels.service_label(), " after ", format_seconds(options.startup_timeout),
                                        ": is the chief running and the address right? (TF_CONFIG)"),
                           Culprit{chief()});
  }

  pb::RegisterRequest request;
  *request.mutable_task() = task();
  request.set_world_size(options.world_size);
  request.set_fingerprint(options.fingerprint);
  request.set_timeout_ms(remaining(deadline).count());
  // Connected: if the chief dies from here on, the call fails at once instead of waiting for it to return.
  const grpc::Status status = call(remaining(deadline) + kRpcGrace, [&](grpc::ClientContext* ctx) {
    pb::Empty reply;
    return stub->Register(ctx, request, &reply);
  });
  if (!status.ok()) {
    raise(status, labels.name(options.rank) + " could not register with the coordination service of " +
                      labels.service_label() + " within " + format_seconds(options.startup_timeout));
  }

  watch_thread = std::thread([this] { watch(); });
  heartbeat_thread = std::thread([this] { heartbeat(); });
  // Return only once the service watches our connection, so that from now on our death is noticed at once.
  std::unique_lock lock(mu);
  const bool ready = cv.wait_until(lock, deadline + kRpcGrace, [&] { return watching || failed; });
  if (failed) throw UnavailableError(failure, Culprit{failed_task});
  LS_CHECK(ready, UnavailableError, labels.name(options.rank),
           " registered but could not open its watch on the coordination service of ", labels.service_label(),
           " within ", format_seconds(options.startup_timeout));
  started = true;
}

void CoordinationClient::Impl::check_usable() const {
  std::lock_guard lock(mu);
  LS_CHECK(!shutting_down, RuntimeError, labels.name(options.rank),
           " used its coordination client after shutdown(): shutdown() must be the last call");
}

void CoordinationClient::Impl::fail(const std::string& message, const std::string& culprit, bool notify) {
  {
    std::lock_guard lock(mu);
    if (failed) return;
    failed = true;
    failure = message;
    failed_task = culprit;
    for (grpc::ClientContext* ctx : calls) ctx->TryCancel();
    notify = notify && started && !reported && !shutting_down && !stopping;
  }
  cv.notify_all();
  if (!notify) return;
  if (service) service->wait_failure_delivered(kDeliveryWait);
  if (options.on_error) {
    options.on_error(message);
  } else {
    default_on_error(message, culprit);
  }
}

void CoordinationClient::Impl::watch() {
  // No deadline: the stream lives as long as the task; the heartbeats bound how long a silent service goes
  // unnoticed.
  grpc::ClientContext ctx;
  add_cluster_token(ctx, options.security);
  {
    std::lock_guard lock(mu);
    if (stopping) return;
    calls.insert(&ctx);
  }
  std::unique_ptr<grpc::ClientReader<pb::Event>> reader = stub->Watch(&ctx, task());
  pb::Event event;
  while (reader->Read(&event)) {
    if (event.kind() == pb::Event::WATCHING) {
      std::lock_guard lock(mu);
      watching = true;
      cv.notify_all();
    } else if (event.kind() == pb::Event::JOB_FAILED) {
      fail(event.message(), event.task(), true);
    }
  }
  const grpc::Status status = reader->Finish();
  {
    std::lock_guard lock(mu);
    calls.erase(&ctx);
    // In shutdown the chief's service goes away by design; the shutdown barrier's answer tells the outcome.
    if (stopping || shutting_down) return;
  }
  const bool refused = status.error_code() == grpc::StatusCode::FAILED_PRECONDITION ||
                       status.error_code() == grpc::StatusCode::INVALID_ARGUMENT;
  if (refused) {
    fail(status.error_message(), status.error_details(), true);
  } else {
    fail(lost_connection_message(status), chief(), true);
  }
}

void CoordinationClient::Impl::heartbeat() {
  Clock::time_point last_ok = Clock::now();
  while (true) {
    {
      std::unique_lock lock(mu);
      cv.wait_for(lock, options.heartbeat_interval, [&] { return stopping || failed || shutting_down; });
      // A task in the shutdown barrier may go quiet: the service no longer expects its heartbeats.
      if (stopping || failed || shutting_down) return;
    }
    const grpc::Status status = call(options.heartbeat_timeout, [&](grpc::ClientContext* ctx) {
      pb::Empty reply;
      return stub->Heartbeat(ctx, task(), &reply);
    });
    if (status.ok()) {
      last_ok = Clock::now();
    } else if (status.error_code() == grpc::StatusCode::ABORTED ||
               status.error_code() == grpc::StatusCode::FAILED_PRECONDITION) {
      fail(status.error_message(), status.error_details(), true);  // the service declared the job (or this task) failed
    } else if (Clock::now() - last_ok >= options.heartbeat_timeout) {
      fail(no_answer_message(status), chief(), true);
    }
  }
}

void CoordinationClient::Impl::stop() {
  {
    std::lock_guard lock(mu);
    stopping = true;
    for (grpc::ClientContext* ctx : calls) ctx->TryCancel();
  }
  cv.notify_all();
  if (watch_thread.joinable()) watch_thread.join();
  if (heartbeat_thread.joinable()) heartbeat_thread.join();
}

CoordinationClient::CoordinationClient(CoordinationOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {
  impl_->connect();
}

CoordinationClient::~CoordinationClient() = default;

int CoordinationClient::rank() const {
  return impl_->options.rank;
}
int CoordinationClient::world_size() const {
  return impl_->options.world_size;
}

void CoordinationClient::set(const std::string& key, const std::string& value) {
  impl_->check_usable();
  pb::SetRequest request;
  *request.mutable_task() = impl_->task();
  request.set_key(key);
  request.set_value(value);
  const grpc::Status status = impl_->call(impl_->options.heartbeat_timeout, [&](grpc::ClientContext* ctx) {
    pb::Empty reply;
    return impl_->stub->Set(ctx, request, &reply);
  });
  if (!status.ok()) impl_->raise(status, impl_->no_answer_message(status));
}

std::string CoordinationClient::get(const std::string& key, std::chrono::milliseconds timeout) {
  impl_->check_usable();
  pb::GetRequest request;
  *request.mutable_task() = impl_->task();
  request.set_key(key);
  request.set_wait(true);
  request.set_timeout_ms(timeout.count());
  pb::GetResponse reply;
  const grpc::Status status = impl_->call(
      timeout + kRpcGrace, [&](grpc::ClientContext* ctx) { return impl_->stub->Get(ctx, request, &reply); });
  if (!status.ok()) {
    impl_->raise(status,
                 make_message(impl_->labels.name(rank()), " waited ", format_seconds(timeout), " for key \"", key,
                              "\" but the coordination service of ", impl_->labels.service_label(), " did not answer"));
  }
  return reply.value();
}

std::optional<std::string> CoordinationClient::try_get(const std::string& key) {
  impl_->check_usable();
  pb::GetRequest request;
  *request.mutable_task() = impl_->task();
  request.set_key(key);
  pb::GetResponse reply;
  const grpc::Status status = impl_->call(impl_->options.heartbeat_timeout, [&](grpc::ClientContext* ctx) {
    return impl_->stub->Get(ctx, request, &reply);
  });
  if (status.error_code() == grpc::StatusCode::NOT_FOUND) return std::nullopt;
  if (!status.ok()) impl_->raise(status, impl_->no_answer_message(status));
  return reply.value();
}

void CoordinationClient::barrier(const std::string& name, std::chrono::milliseconds timeout) {
  impl_->check_usable();
  pb::BarrierRequest request;
  *request.mutable_task() = impl_->task();
  request.set_name(name);
  request.set_timeout_ms(timeout.count());
  const grpc::Status status = impl_->call(timeout + kRpcGrace, [&](grpc::ClientContext* ctx) {
    pb::Empty reply;
    return impl_->stub->Barrier(ctx, request, &reply);
  });
  if (!status.ok()) {
    impl_->raise(status, make_message("barrier \"", name, "\" timed out after ", format_seconds(timeout), " on ",
                                      impl_->labels.name(rank()), ": the coordination service of ",
                                      impl_->labels.service_label(), " did not answer"));
  }
}

void CoordinationClient::report_error(const std::string& message) {
  {
    std::lock_guard lock(impl_->mu);
    impl_->reported = true;
  }
  pb::ReportErrorRequest request;
  *request.mutable_task() = impl_->task();
  request.set_message(message);
  const grpc::Status status = impl_->call(kReportTimeout, [&](grpc::ClientContext* ctx) {
    pb::Empty reply;
    return impl_->stub->ReportError(ctx, request, &reply);
  });
  std::lock_guard lock(impl_->mu);
  // A failed job means the report (or an earlier failure) reached the service: the others know.
  if (!status.ok() && !impl_->failed) {
    log(LogLevel::warning, impl_->labels.label(rank()), " could not report its error to the coordination service of ",
        impl_->labels.service_label(), ": ", status.error_message());
  }
}

void CoordinationClient::shutdown(std::chrono::milliseconds timeout, const std::function<void()>& after_barrier) {
  {
    std::lock_guard lock(impl_->mu);
    if (impl_->shutting_down) return;
    impl_->shutting_down = true;
  }
  impl_->cv.notify_all();
  pb::BarrierRequest request;
  *request.mutable_task() = impl_->task();
  request.set_timeout_ms(timeout.count());
  const grpc::Status status = impl_->call(timeout + kRpcGrace, [&](grpc::ClientContext* ctx) {
    pb::Empty reply;
    return impl_->stub->Shutdown(ctx, request, &reply);
  });
  if (after_barrier) after_barrier();
  impl_->stop();
  // Every task passed the barrier (or gave up on it): nobody needs rank 0's service any more.
  impl_->service.reset();
  if (!status.ok()) {
    impl_->raise(status, make_message("the shutdown barrier timed out after ", format_seconds(timeout), " on ",
                                      impl_->labels.name(rank()), ": the coordination service of ",
                                      impl_->labels.service_label(), " did not answer"));
  }
}

}  // namespace lockstep::distribute
