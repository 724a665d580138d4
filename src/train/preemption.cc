// Preemption signals recorded by a process-wide handler, agreed on by all workers with one all-reduce per
// step, and PreemptionCheckpointHandler for custom loops.
#include "lockstep/train/preemption.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <mutex>

#include "lockstep/core/files.h"
#include "lockstep/core/logging.h"
#include "lockstep/distribute/collective/cross_worker.h"

namespace lockstep::train {

namespace {

volatile sig_atomic_t g_signalled = 0;
std::mutex g_watch_mutex;
int g_watches = 0;
struct sigaction g_old_term {}, g_old_int {};

void on_preemption_signal(int) { g_signalled = 1; }

const distribute::CollectiveOptions kAgreement = distribute::collective_options(distribute::Tag::kPreemption);

}  // namespace

PreemptionWatch::PreemptionWatch() {
  std::lock_guard lock(g_watch_mutex);
  if (g_watches++ > 0) return;
  g_signalled = 0;  // a signal seen by an earlier watch was handled by it
  struct sigaction sa {};
  sa.sa_handler = on_preemption_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  ::sigaction(SIGTERM, &sa, &g_old_term);
  ::sigaction(SIGINT, &sa, &g_old_int);
}

PreemptionWatch::~PreemptionWatch() {
  std::lock_guard lock(g_watch_mutex);
  if (--g_watches > 0) return;
  ::sigaction(SIGTERM, &g_old_term, nullptr);
  ::sigaction(SIGINT, &g_old_int, nullptr);
}

bool preemption_signal_received() { return g_signalled != 0; }

bool preemption_agreed(distribute::Strategy* strategy) {
  return distribute::agree(strategy ? strategy->cross_worker() : nullptr, preemption_signal_received() ? 1 : 0,
                          distribute::ReduceOp::MAX, kAgreement) > 0;
}

void exit_after_preemption(distribute::Strategy* strategy, int code) {
  if (distribute::Communicator* comm = strategy ? strategy->cross_worker() : nullptr) {
    try {
      comm->barrier(kAgreement);
    } catch (const std::exception& e) {
      log(LogLevel::warning, "a peer left before the preemption checkpoint was confirmed: ", e.what());
    }
  }
  if (!wait_for_pending_writes(std::chrono::seconds(30)))  // a backup being written reaches the disk first
    log(LogLevel::error, "a background checkpoint write did not finish within 30 s and is abandoned");
  std::fflush(nullptr);
  ::_exit(code);
}

// ---- PreemptionCheckpointHandler ----

namespace {
// The handler's step count, saved with the user's checkpoint.
class RunCounter final : public Trackable {
 public:
  TrackableState save() const override { return {{}, {{"total_run_calls", count}}}; }
  RestoreMatch restore(const TrackableState& state) override {
    if (!state.values.contains("total_run_calls")) return {{"total_run_calls"}, {}};
    count = state.values["total_run_calls"].get<int64_t>();
    return {};
  }
  int64_t count = 0;
};
}  // namespace

struct PreemptionCheckpointHandler::Impl {
  Impl(CheckpointManager& m, TerminationConfig c) : manager(m), config(std::move(c)) {}
  Impl(Checkpoint& checkpoint, const std::string& dir, TerminationConfig c)
      : owned(std::in_place, checkpoint, dir, CheckpointManagerOptions{.max_to_keep = 1}), manager(*owned),
        config(std::move(c)) {}
  std::optional<CheckpointManager> owned;  // when given a checkpoint and a directory
  CheckpointManager& manager;
  TerminationConfig config;
  std::shared_ptr<RunCounter> counter = std::make_shared<RunCounter>();
  PreemptionWatch watch;
};

Checkpoint& PreemptionCheckpointHandler::checked(const distribute::ClusterResolver& resolver, Checkpoint& checkpoint) {
  const distribute::Strategy* s = checkpoint.strategy();
  LS_CHECK(!s || resolver.task().name() == s->cluster_resolver().task().name(), ValueError,
           "PreemptionCheckpointHandler got the cluster resolver of task ", resolver.task().name(),
           " but the checkpoint's strategy runs task ", s->cluster_resolver().task().name(),
           "; pass the strategy's cluster_resolver()");
  return checkpoint;
}

CheckpointManager& PreemptionCheckpointHandler::checked(const distribute::ClusterResolver& resolver,
                                                        CheckpointManager& manager) {
  checked(resolver, manager.checkpoint());
  return manager;
}

PreemptionCheckpointHandler::PreemptionCheckpointHandler(CheckpointManager& manager, TerminationConfig config)
    : impl_(std::make_unique<Impl>(manager, std::move(config))) {
  start();
}

PreemptionCheckpointHandler::PreemptionCheckpointHandler(Checkpoint& checkpoint, const std::string& checkpoint_dir,
                                                         TerminationConfig config)
    : impl_(std::make_unique<Impl>(checkpoint, checkpoint_dir, std::move(config))) {
  start();
}

PreemptionCheckpointHandler::PreemptionCheckpointHandler(const distribute::ClusterResolver& cluster_resolver,
                                                         CheckpointManager& manager, TerminationConfig config)
    : PreemptionCheckpointHandler(checked(cluster_resolver, manager), std::move(config)) {}

PreemptionCheckpointHandler::PreemptionCheckpointHandler(const distribute::ClusterResolver& cluster_resolver,
                                                         Checkpoint& checkpoint, const std::string& checkpoint_dir,
                                                         TerminationConfig config)
    : PreemptionCheckpointHandler(checked(cluster_resolver, checkpoint), checkpoint_dir, std::move(config)) {}

void PreemptionCheckpointHandler::start() {
  Checkpoint& c = impl_->manager.checkpoint();
  c.add_object("preemption_handler", impl_->counter);
  if (auto restored = impl_->manager.restore_or_initialize())
    if (c.is_chief())
      std::fprintf(stderr, "lockstep: restored %s; continuing at step %lld\n", restored->c_str(),
                   static_cast<long long>(impl_->counter->count));
}

PreemptionCheckpointHandler::~PreemptionCheckpointHandler() {
  impl_->manager.checkpoint().remove_object(impl_->counter);
}

int64_t PreemptionCheckpointHandler::total_run_calls() const { return impl_->counter->count; }

void PreemptionCheckpointHandler::after_step() {
  ++impl_->counter->count;
  Checkpoint& c = impl_->manager.checkpoint();
  if (!preemption_agreed(c.strategy())) return;
  if (impl_->config.save_fn)
    impl_->config.save_fn();
  else
    impl_->manager.save(std::nullopt, false);
  impl_->manager.sync();
  if (c.is_chief())
    std::fprintf(stderr, "lockstep: preempted; saved step %lld to %s, exiting with code %d to be restarted\n",
                 static_cast<long long>(impl_->counter->count), impl_->manager.latest_checkpoint().value_or("?").c_str(),
                 kPreemptedExitCode);
  if (impl_->config.exit_fn) {
    impl_->config.exit_fn();
    return;
  }
  exit_after_preemption(c.strategy());
}

}  // namespace lockstep::train
