// The gloo backend's failure handling: buffers tracked so that every wait can be woken, the failed peer found
// from the pairs' state, and the watchdog that records the first failure, wakes the stuck collectives and
// closes the connections.
#include <gloo/common/error.h>
#include <gloo/common/logging.h>
#include <gloo/types.h>

#include <algorithm>

#include "gloo-impl.h"

namespace lockstep::distribute::detail {
namespace {

using std::chrono::milliseconds;

// Slots no collective uses (gloo's algorithms build theirs from small prefixes): the canary's, on which a recv
// from every peer fails as soon as any connection breaks, and the one first_failed_peer posts its probes in.
const uint64_t kCanarySlot = gloo::Slot::build(0xff, 0);
const uint64_t kProbeSlot = gloo::Slot::build(0xff, 1);
constexpr milliseconds kForever = std::chrono::hours(24 * 3650);  // a wait on it that ends would break the context
// How long collectives in flight get to fail on their own after a connection broke before being woken.
constexpr milliseconds kWakeGrace{300};

}  // namespace

TrackedBuffer::TrackedBuffer(std::unique_ptr<gloo::transport::UnboundBuffer> inner,
                             std::shared_ptr<TrackingContext> context)
    : gloo::transport::UnboundBuffer(inner->ptr, inner->size), inner_(std::move(inner)), context_(std::move(context)) {
  context_->add(this);
}

TrackedBuffer::~TrackedBuffer() {
  context_->remove(this);
}

TrackingContext::TrackingContext(std::shared_ptr<gloo::transport::Context> inner)
    : gloo::transport::Context(inner->rank, inner->size), inner_(std::move(inner)) {}

std::unique_ptr<gloo::transport::Pair>& TrackingContext::createPair(int rank) {
  inner_->setTimeout(getTimeout());  // connectFullMesh set it on this wrapper (setTimeout is not virtual)
  return inner_->createPair(rank);
}

std::unique_ptr<gloo::transport::UnboundBuffer> TrackingContext::createUnboundBuffer(void* ptr, size_t size) {
  return std::make_unique<TrackedBuffer>(inner_->createUnboundBuffer(ptr, size), shared_from_this());
}

void TrackingContext::add(TrackedBuffer* buffer) {
  std::lock_guard lock(buffers_mutex_);
  buffers_.insert(buffer);
}

void TrackingContext::remove(TrackedBuffer* buffer) {
  std::lock_guard lock(buffers_mutex_);
  buffers_.erase(buffer);
}

void TrackingContext::wake_all() {
  std::lock_guard lock(buffers_mutex_);
  for (TrackedBuffer* buffer : buffers_) {
    buffer->abortWaitRecv();
    buffer->abortWaitSend();
  }
}

int first_failed_peer(gloo::transport::Context& transport) {
  char byte = 0;
  const auto probe = transport.createUnboundBuffer(&byte, 1);
  for (int peer = 0; peer < transport.size; ++peer) {
    if (peer == transport.rank || !transport.getPair(peer)) continue;  // no pair: the rendezvous stopped before it
    try {
      probe->recv(peer, kProbeSlot, 0, 1);  // never sent to: it stays pending on a live pair
    } catch (const gloo::IoException&) {
      return peer;  // the pair holds the exception its connection failed with
    } catch (const std::exception&) {
      // gloo's EnforceNotMet: not connected yet
    }
  }
  return -1;
}

Watchdog::~Watchdog() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  canary_->abortWaitRecv();
  thread_.join();
}

void Watchdog::start(std::shared_ptr<gloo::Context> context, TrackingContext* transport) {
  context_ = std::move(context);
  transport_ = transport;
  canary_ = context_->createUnboundBuffer(&canary_byte_, 1);
  for (int peer = 0; peer < peers_.size; ++peer) {
    if (peer != peers_.rank) canary_->recv(peer, kCanarySlot, 0, 1);
  }
  thread_ = std::thread([this] { watch(); });
}

void Watchdog::check() {
  std::unique_lock lock(mutex_);
  if (failure_) refuse(lock);
}

Watchdog::Collective Watchdog::enter(std::string op, milliseconds timeout) {
  std::unique_lock lock(mutex_);
  if (failure_) refuse(lock);
  Collective c{std::move(op), timeout, Clock::now() + timeout, wakes_};
  deadlines_.insert(c.deadline);
  return c;
}

void Watchdog::abandon(const Collective& c) {
  std::lock_guard lock(mutex_);
  deadlines_.erase(deadlines_.find(c.deadline));
  cv_.notify_all();
}

void Watchdog::leave(const Collective& c) {
  abandon(c);
  // Woken by the watchdog, gloo may return as if done; a collective that finished before the failure (a peer
  // that closed right after the last collective) keeps its result.
  std::unique_lock lock(mutex_);
  if (wakes_ != c.wakes) refuse(lock);
}

void Watchdog::fail(const Collective& c, const std::string& what) {
  const std::string detail = strip_location(what);
  // gloo throws the same IoException for its own timeout and for a lost connection; only a wait that ran past
  // the collective's deadline can have timed out.
  const bool timed_out = Clock::now() >= c.deadline;
  std::optional<Failure> failure;
  if (timed_out) {
    failure =
        Failure{Failure::deadline,
                make_message(c.op, " timed out after ", c.timeout.count(), " ms: a peer did not take part (", detail,
                             "); a worker stopped issuing collectives, issued them in another order or is "
                             "stuck: check the other workers' logs, or raise CollectiveOptions.timeout if a "
                             "step legitimately takes longer")};
  } else {
    std::optional<Failure> seen;  // the connection that broke first, when the canary saw it
    {
      std::lock_guard lock(mutex_);
      seen = lost_;
    }
    failure = seen ? std::move(seen) : lost_peer(c.op, detail);
  }
  std::unique_lock lock(mutex_);
  if (!failure_) failure_ = std::move(failure);
  // Recorded before the collective leaves, so that the watchdog, woken by the same broken connection, still sees
  // its deadline and does not take a timeout for a lost connection.
  deadlines_.erase(deadlines_.find(c.deadline));
  cv_.notify_all();
  refuse(lock);
}

// A collective refused because of an earlier failure. The peers may already wait for this rank in the
// collective it now refuses: closing the connections tells them at once.
void Watchdog::refuse(std::unique_lock<std::mutex>& lock) {
  if (!broken_) {
    broken_ = true;
    lock.unlock();
    break_connections();
    lock.lock();
  }
  failure_->raise();
}

Failure Watchdog::lost_peer(const std::string& op, const std::string& detail) {
  const int peer = first_failed_peer(*transport_);
  return Failure{Failure::unavailable,
                 make_message(op, " lost its connection to ",
                              peer >= 0 ? peers_.name(peer) : make_message("a peer of rank ", peers_.rank), " (",
                              detail, "); the job failed; restart it (lockstep launch --max-restarts)"),
                 peers_.task(peer)};
}

bool Watchdog::any_past_deadline(Clock::time_point now) const {
  return !deadlines_.empty() && *deadlines_.begin() <= now;
}

// Waits on the canary. A connection that breaks while no collective runs is no failure yet: a peer may close
// after its last collective while this rank still runs one without it (a broadcast whose sender is done). A
// later collective that needs the peer fails at once, since gloo refuses to post on a broken pair, and names it.
// Collectives still in flight a grace period after the break are stuck on a wait gloo does not end: the watchdog
// records the lost connection (unless a collective has recorded a failure, or will: a timeout is recorded by the
// collective that timed out), closes the connections and wakes them.
void Watchdog::watch() {
  std::string what;
  try {
    if (!canary_->waitRecv(kForever)) return;  // woken by the destructor
  } catch (const gloo::Exception& e) {
    what = strip_location(e.what());
  }
  bool lost_connection = false;  // else a collective timed out, and records it itself
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return;
    lost_connection = !failure_ && !any_past_deadline(Clock::now());
  }
  std::optional<Failure> lost;
  if (lost_connection) lost = lost_peer(make_message("gloo on ", peers_.self(), " of ", peers_.size), what);
  std::unique_lock lock(mutex_);
  if (stopping_) return;
  lost_ = lost;  // the peer to blame when a collective fails for it
  const auto wake_at = Clock::now() + kWakeGrace;
  while (!stopping_ && !deadlines_.empty()) {
    if (Clock::now() < wake_at) {
      cv_.wait_until(lock, wake_at);
      continue;
    }
    if (!failure_ && lost) failure_ = std::move(lost);
    if (!failure_) {  // the collective that timed out has not recorded it yet
      failure_ = Failure{Failure::deadline, make_message("gloo on ", peers_.self(), " of ", peers_.size,
                                                         ": a collective timed out (", what,
                                                         ") and closed the connections; raise "
                                                         "CollectiveOptions.timeout if a step legitimately takes "
                                                         "longer")};
    }
    ++wakes_;
    const bool poison = !broken_;
    broken_ = true;
    lock.unlock();
    if (poison) break_connections();
    transport_->wake_all();
    lock.lock();
    cv_.wait_for(lock, milliseconds(10));
  }
}

// gloo has no public "close everything" call, but a buffer wait that times out makes the transport fail every
// pair: the sockets close, so the peers see the failure at once instead of at their own timeout.
void Watchdog::break_connections() {
  char byte = 0;
  auto buffer = context_->createUnboundBuffer(&byte, 1);
  try {
    buffer->waitRecv(milliseconds(1));
  } catch (const gloo::Exception&) {
  }
}

}  // namespace lockstep::distribute::detail
