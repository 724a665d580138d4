// The gloo backend's parts, one concern per file: the rendezvous store on our KeyValueStore (gloo_store.cc), the
// watchdog that notices a broken connection and records each failure with the task it blames (gloo_watchdog.cc),
// and the communicator on top of them (gloo.cc). All of them use gloo's public interfaces only (the build checks
// it: tests/CMakeLists.txt, gloo_public_api_only).
#pragma once
#include <gloo/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/context.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/transport/unbound_buffer.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "lockstep/distribute/collective/gloo.h"
#include "reduce-impl.h"

namespace lockstep::distribute::detail {

using Clock = std::chrono::steady_clock;

// gloo prefixes messages with "[/path/file.cc:123] "; the reader wants the part after it.
std::string strip_location(const std::string& message);

// gloo's rendezvous store on ours. Keys get the prefix; get() blocks, because connectFullMesh calls it without
// wait(); values fetched by wait() are kept so the get() after it does not fetch them again. The whole
// rendezvous shares one deadline; running past it names the rank whose key is missing.
class StoreAdapter final : public gloo::rendezvous::Store {
 public:
  StoreAdapter(KeyValueStore& store, const GlooOptions& options, const Peers& peers);

  void set(const std::string& key, const std::vector<char>& data) override;
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override;

 private:
  std::vector<char> fetch(const std::string& key, std::chrono::milliseconds timeout);

  KeyValueStore& store_;
  const GlooOptions& options_;
  const Peers& peers_;
  const Clock::time_point deadline_;
  std::unordered_map<std::string, std::vector<char>> values_;
};

// gloo (2022-05) tells only queued operations that their connection broke, not a message that was half sent or
// half received at that moment: a collective waiting for one would sit out its whole timeout. So the transport
// context is wrapped, through gloo's public virtual interfaces, to keep a list of the live buffers, and a broken
// communicator wakes every wait on them.
class TrackingContext;

class TrackedBuffer final : public gloo::transport::UnboundBuffer {
 public:
  TrackedBuffer(std::unique_ptr<gloo::transport::UnboundBuffer> inner, std::shared_ptr<TrackingContext> context);
  ~TrackedBuffer() override;

  bool waitRecv(int* rank, std::chrono::milliseconds timeout) override { return inner_->waitRecv(rank, timeout); }
  bool waitSend(int* rank, std::chrono::milliseconds timeout) override { return inner_->waitSend(rank, timeout); }
  void abortWaitRecv() override { inner_->abortWaitRecv(); }
  void abortWaitSend() override { inner_->abortWaitSend(); }
  void send(int rank, uint64_t slot, size_t offset, size_t bytes) override { inner_->send(rank, slot, offset, bytes); }
  void recv(int rank, uint64_t slot, size_t offset, size_t bytes) override { inner_->recv(rank, slot, offset, bytes); }
  void recv(std::vector<int> ranks, uint64_t slot, size_t offset, size_t bytes) override {
    inner_->recv(std::move(ranks), slot, offset, bytes);
  }

 private:
  std::unique_ptr<gloo::transport::UnboundBuffer> inner_;
  std::shared_ptr<TrackingContext> context_;
};

class TrackingContext final : public gloo::transport::Context, public std::enable_shared_from_this<TrackingContext> {
 public:
  explicit TrackingContext(std::shared_ptr<gloo::transport::Context> inner);

  std::unique_ptr<gloo::transport::Pair>& createPair(int rank) override;
  std::unique_ptr<gloo::transport::Pair>& getPair(int rank) override { return inner_->getPair(rank); }
  std::unique_ptr<gloo::transport::UnboundBuffer> createUnboundBuffer(void* ptr, size_t size) override;

  void add(TrackedBuffer* buffer);
  void remove(TrackedBuffer* buffer);
  // Every wait in progress (or the next one on each buffer) returns at once as if done; the collective then
  // throws at its next send or recv, since the connections are closed by then.
  void wake_all();

 private:
  std::shared_ptr<gloo::transport::Context> inner_;
  std::mutex buffers_mutex_;
  std::unordered_set<TrackedBuffer*> buffers_;
};

// The tcp device of a communicator: its contexts are tracked.
class GlooDevice final : public gloo::transport::tcp::Device {
 public:
  using gloo::transport::tcp::Device::Device;
  std::shared_ptr<gloo::transport::Context> createContext(int rank, int size) override;
  // The context made last, kept alive (connectFullMesh drops its own when it throws) until taken: the
  // context refers back to this device, so holding it here would be a cycle.
  std::shared_ptr<TrackingContext> take_last_context() { return std::move(last_context_); }

 private:
  std::shared_ptr<TrackingContext> last_context_;
};

// The first peer whose connection has failed: its pair refuses a new receive with gloo's IoException (a pair
// not connected yet refuses with EnforceNotMet, a live one accepts it). -1 when there is none. Decided on the
// pairs' state, never on the words of gloo's messages.
int first_failed_peer(gloo::transport::Context& transport);

// Watches a connected communicator: notices a connection that breaks, records the first failure (later ones
// are its consequences) with the task it blames, wakes the collectives stuck on a wait gloo does not end, and
// closes the connections so that the peers fail at once too. A connection that breaks between collectives fails
// only a collective that needs it. Every collective enters it, and after a failure every later one raises the
// same error.
class Watchdog {
 public:
  // A collective in flight; its deadline decides whether its failure is a timeout.
  struct Collective {
    std::string op;  // "gloo all_reduce (tag 3) on worker:0 (rank 0) of 2", for messages
    std::chrono::milliseconds timeout;
    Clock::time_point deadline;
    uint64_t wakes;
  };

  explicit Watchdog(const Peers& peers) : peers_(peers) {}
  ~Watchdog();

  // Starts watching `context` (connected, its transport `transport`).
  void start(std::shared_ptr<gloo::Context> context, TrackingContext* transport);

  // Throws the recorded failure, if any.
  void check();
  // Registers a collective (throwing the recorded failure instead, if any) and unregisters it.
  Collective enter(std::string op, std::chrono::milliseconds timeout);
  // The collective returned: throws if the watchdog woke it (gloo may return from a woken wait as if done).
  void leave(const Collective& c);
  // The collective threw something other than gloo's errors (out of memory): it is no longer in flight.
  void abandon(const Collective& c);
  // The collective failed with gloo's exception: records the failure (a timeout when it ran past its deadline,
  // else a lost connection blaming the failed peer), closes the connections and throws it.
  [[noreturn]] void fail(const Collective& c, const std::string& what);

 private:
  void watch();
  [[noreturn]] void refuse(std::unique_lock<std::mutex>& lock);
  Failure lost_peer(const std::string& op, const std::string& detail);
  bool any_past_deadline(Clock::time_point now) const;
  void break_connections();

  const Peers& peers_;
  std::shared_ptr<gloo::Context> context_;
  TrackingContext* transport_ = nullptr;
  char canary_byte_ = 0;
  std::unique_ptr<gloo::transport::UnboundBuffer> canary_;  // destroyed before context_
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::optional<Failure> failure_;
  std::optional<Failure> lost_;  // the first broken connection the canary saw, before any collective failed
  std::multiset<Clock::time_point> deadlines_;  // of the collectives in flight
  uint64_t wakes_ = 0;                          // times the watchdog woke them
  bool broken_ = false;                         // the connections have been closed on purpose
  bool stopping_ = false;
};

}  // namespace lockstep::distribute::detail
