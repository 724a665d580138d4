// The local backend: replica threads meet in phases on per-tag shared state (one mutex, one condition
// variable); all_reduce reduces each slice in rank order, each rank one slice, and writes it into every rank's
// buffer, so all replicas hold the same bits.
#include "lockstep/distribute/collective/local.h"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "reduce-impl.h"

namespace lockstep::distribute {
namespace detail {
namespace {

using Clock = std::chrono::steady_clock;

// What one rank asks of a collective; every rank of that collective must ask the same.
struct Call {
  const char* kind = "";
  size_t count = 0;  // elements for all_reduce, bytes otherwise
  DType dtype = DType::uint8;
  ReduceOp op = ReduceOp::SUM;
  int root = -1;

  bool operator==(const Call& o) const {
    return std::strcmp(kind, o.kind) == 0 && count == o.count && dtype == o.dtype && op == o.op && root == o.root;
  }
  std::string describe() const {
    if (std::strcmp(kind, "all_reduce") == 0)
      return make_message(kind, "(", count, " ", dtype_name(dtype), ", ", reduce_op_name(op), ")");
    if (std::strcmp(kind, "broadcast") == 0) return make_message(kind, "(", count, " bytes from rank ", root, ")");
    if (std::strcmp(kind, "all_gather") == 0) return make_message(kind, "(", count, " bytes per rank)");
    return make_message(kind, "()");
  }
};

// One collective in flight on one rank: who, what, and until when it may wait.
struct Visit {
  int rank;
  uint32_t tag;
  const char* kind;
  Clock::time_point deadline;
  std::chrono::milliseconds timeout;
};

// The state of one tag: a reusable phase barrier and what the ranks brought to the current collective.
struct TagState {
  explicit TagState(int size) : here(static_cast<size_t>(size), 0), pointers(static_cast<size_t>(size)) {}
  uint64_t generation = 0;  // phases completed on this tag
  int arrived = 0;
  std::vector<char> here;       // who has arrived in the current phase
  std::optional<Call> call;     // the collective the first rank to arrive asked for
  std::vector<void*> pointers;  // each rank's buffer
};

}  // namespace

struct LocalGroupState {
  explicit LocalGroupState(int n) : size(n) {}

  const int size;
  std::mutex mutex;
  std::condition_variable cv;
  std::unordered_map<uint32_t, TagState> tags;  // node-based: references stay valid as tags are added
  std::optional<Failure> failure;

  TagState& tag(uint32_t t) { return tags.try_emplace(t, size).first->second; }

  [[noreturn]] void fail(Failure f) {
    if (!failure) failure = std::move(f);
    cv.notify_all();
    failure->raise();
  }

  // Joins phase 0 of a collective: checks that this rank asks for the same collective as the others and
  // posts its buffer.
  void arrive(std::unique_lock<std::mutex>& lock, TagState& t, const Visit& v, const Call& call, void* pointer) {
    if (failure) failure->raise();
    if (!t.call) {
      t.call = call;
    } else if (!(*t.call == call)) {
      int first = 0;
      while (first < size && !t.here[static_cast<size_t>(first)]) ++first;
      fail({Failure::mismatch, make_message("collective mismatch on tag ", v.tag, ": replica ", v.rank, " called ",
                                            call.describe(), " while replica ", first, " called ", t.call->describe(),
                                            "; every replica must issue the same collectives in the same order")});
    }
    t.pointers[static_cast<size_t>(v.rank)] = pointer;
    meet(lock, t, v, [&] { t.call.reset(); });
  }

  // Waits until every rank has reached this phase on this tag. The last to arrive runs `on_complete` under
  // the lock and wakes the others. A missed deadline fails the whole group: its phases can no longer line up.
  void meet(std::unique_lock<std::mutex>& lock, TagState& t, const Visit& v) {
    meet(lock, t, v, [] {});
  }
  template <typename F>
  void meet(std::unique_lock<std::mutex>& lock, TagState& t, const Visit& v, F&& on_complete) {
    if (failure) failure->raise();
    const uint64_t generation = t.generation;
    t.here[static_cast<size_t>(v.rank)] = 1;
    if (++t.arrived == size) {
      on_complete();
      t.arrived = 0;
      std::fill(t.here.begin(), t.here.end(), 0);
      ++t.generation;
      cv.notify_all();
      return;
    }
    cv.wait_until(lock, v.deadline, [&] { return t.generation != generation || failure; });
    if (t.generation != generation) return;
    if (failure) failure->raise();
    std::string missing;
    for (int r = 0; r < size; ++r) {
      if (!t.here[static_cast<size_t>(r)]) missing += make_message(missing.empty() ? "" : ", ", r);
    }
    fail({Failure::deadline,
          make_message("local ", v.kind, " (tag ", v.tag, ") timed out after ", v.timeout.count(), " ms on replica ",
                       v.rank, " of ", size, ": replica(s) ", missing,
                       " did not arrive; a replica stopped issuing collectives or issued them in another order "
                       "(look for its error), or raise CollectiveOptions.timeout if a step takes longer")});
  }
};

namespace {

class LocalCommunicator final : public Communicator {
 public:
  LocalCommunicator(std::shared_ptr<LocalGroupState> state, int rank) : s_(std::move(state)), rank_(rank) {}

  int rank() const override { return rank_; }
  int size() const override { return s_->size; }

  void all_reduce(void* data, size_t count, DType dtype, ReduceOp op, const CollectiveOptions& options) override {
    const Visit v = visit("all_reduce", options);
    const size_t element = dtype_size(dtype);
    const auto [reduce, divide] = visit_reducible(dtype, "all_reduce", [&](auto x) {
      using T = decltype(x);
      return std::pair{reduce_function<T>(op), &divide_elements<T>};
    });
    std::unique_lock lock(s_->mutex);
    TagState& t = s_->tag(options.tag);
    s_->arrive(lock, t, v, {"all_reduce", count, dtype, op}, data);
    const std::vector<void*> buffers = t.pointers;
    lock.unlock();
    // This rank's slice, summed in rank order into rank 0's buffer and copied from there into every other
    // rank's: the ranks' slices are disjoint, so each only ever touches its own part of the others' buffers.
    // Block by block, so that each block is copied while it is still in this core's cache.
    constexpr size_t kBlock = 32 << 10;  // bytes
    const size_t begin = count * static_cast<size_t>(rank_) / static_cast<size_t>(s_->size) * element;
    const size_t end = count * static_cast<size_t>(rank_ + 1) / static_cast<size_t>(s_->size) * element;
    for (size_t at = begin; at < end; at += kBlock) {
      const size_t bytes = std::min(kBlock, end - at);
      std::byte* out = static_cast<std::byte*>(buffers[0]) + at;
      for (size_t r = 1; r < buffers.size(); ++r)
        reduce(out, out, static_cast<const std::byte*>(buffers[r]) + at, bytes / element);
      if (op == ReduceOp::MEAN) divide(out, bytes / element, s_->size);
      for (size_t r = 1; r < buffers.size(); ++r) std::memcpy(static_cast<std::byte*>(buffers[r]) + at, out, bytes);
    }
    lock.lock();
    s_->meet(lock, t, v);  // no rank returns before every slice has landed in its buffer
  }

  void broadcast(void* data, size_t bytes, int root, const CollectiveOptions& options) override {
    check_rank(root, "broadcast root");
    const Visit v = visit("broadcast", options);
    std::unique_lock lock(s_->mutex);
    TagState& t = s_->tag(options.tag);
    s_->arrive(lock, t, v, {"broadcast", bytes, DType::uint8, ReduceOp::SUM, root}, data);
    const void* source = t.pointers[static_cast<size_t>(root)];
    lock.unlock();
    if (rank_ != root && bytes > 0) std::memcpy(data, source, bytes);
    lock.lock();
    s_->meet(lock, t, v);  // the root's buffer must stay untouched until everyone has copied it
  }

  void all_gather(const void* input, void* output, size_t bytes, const CollectiveOptions& options) override {
    const Visit v = visit("all_gather", options);
    std::unique_lock lock(s_->mutex);
    TagState& t = s_->tag(options.tag);
    s_->arrive(lock, t, v, {"all_gather", bytes}, const_cast<void*>(input));
    const std::vector<void*> inputs = t.pointers;
    lock.unlock();
    for (size_t r = 0; r < inputs.size(); ++r) {
      std::byte* to = static_cast<std::byte*>(output) + r * bytes;
      if (bytes > 0 && to != inputs[r]) std::memcpy(to, inputs[r], bytes);
    }
    lock.lock();
    s_->meet(lock, t, v);  // the inputs must stay untouched until everyone has copied them
  }

  void barrier(const CollectiveOptions& options) override {
    const Visit v = visit("barrier", options);
    std::unique_lock lock(s_->mutex);
    s_->arrive(lock, s_->tag(options.tag), v, {"barrier"}, nullptr);
  }

 private:
  Visit visit(const char* kind, const CollectiveOptions& options) const {
    // Clamped so that now + timeout cannot overflow for "wait forever" values.
    const auto timeout = std::clamp(options.timeout, std::chrono::milliseconds(0),
                                    std::chrono::milliseconds(std::chrono::hours(24 * 365)));
    return {rank_, options.tag, kind, Clock::now() + timeout, timeout};
  }
  void check_rank(int r, const char* what) const {
    LS_CHECK(r >= 0 && r < s_->size, ValueError, what, " must be a replica in [0, ", s_->size, "), got ", r);
  }

  std::shared_ptr<LocalGroupState> s_;
  int rank_;
};

}  // namespace
}  // namespace detail

LocalGroup::LocalGroup(int size) {
  LS_CHECK(size >= 1, ValueError, "LocalGroup needs at least one replica, got ", size);
  state_ = std::make_shared<detail::LocalGroupState>(size);
}

LocalGroup::~LocalGroup() = default;

int LocalGroup::size() const {
  return state_->size;
}

std::unique_ptr<Communicator> LocalGroup::communicator(int rank) {
  LS_CHECK(rank >= 0 && rank < state_->size, ValueError, "LocalGroup::communicator: replica must be in [0, ",
           state_->size, "), got ", rank);
  return std::make_unique<detail::LocalCommunicator>(state_, rank);
}

void LocalGroup::abort(const std::string& reason) {
  std::lock_guard lock(state_->mutex);
  if (!state_->failure) state_->failure = detail::Failure{detail::Failure::unavailable, reason};
  state_->cv.notify_all();
}

}  // namespace lockstep::distribute
