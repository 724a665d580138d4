// The MPI backend: MPI initialised once per process (only under an MPI launcher), a duplicate of
// MPI_COMM_WORLD with one further duplicate per tag, MPI's non-blocking operations completed by an
// MPI_Testall loop with a deadline, a ring all-reduce of its own for large buffers, and lockstep's reduction
// rules as MPI user operations where MPI's differ.
#define OMPI_SKIP_MPICXX 1  // the C API only: OpenMPI's C++ bindings would need libmpi_cxx
#define MPICH_SKIP_MPICXX 1
#include "lockstep/distribute/collective/mpi.h"

#include <mpi.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

#include "reduce-impl.h"

namespace lockstep::distribute {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// Set when a request was left in flight (a wait timed out): MPI may still write into its buffers during
// any later progress, so from then on this process makes no MPI call at all, not even MPI_Finalize.
std::atomic<bool> g_abandoned{false};

// Elements (or bytes) per MPI call: MPI counts are int.
constexpr size_t kMaxCount = INT_MAX;

// From this many bytes on, all_reduce runs its own ring (ring_all_reduce) rather than MPI_Iallreduce.
constexpr size_t kRingBytes = 64 << 10;
// The ring's reduce-scatter pieces (see ring_all_reduce): 256 KiB to 4 MiB and whole segments measured
// alike on a Zen 4 (2 ranks, 4-64 MiB); small pieces keep the receive buffer small and in cache.
constexpr size_t kRingPiece = 256 << 10;

bool mpi_finalized() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  return finalized != 0;
}

// Takes buffers an abandoned request may still write to (see g_abandoned): they are never freed, and stay
// reachable from here so that a leak checker (make test-asan) sees them as kept rather than lost.
void keep_forever(std::shared_ptr<void> buffer) {
  static std::mutex mutex;
  static auto* kept = new std::vector<std::shared_ptr<void>>;
  std::lock_guard lock(mutex);
  kept->push_back(std::move(buffer));
}

void finalize_mpi() {
  if (!g_abandoned.load() && !mpi_finalized()) MPI_Finalize();
}

const char* thread_level_name(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE:
      return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED:
      return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED:
      return "MPI_THREAD_SERIALIZED";
    default:
      return "MPI_THREAD_MULTIPLE";
  }
}

std::string mpi_error_string(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) return make_message("MPI error ", code);
  return std::string(text, static_cast<size_t>(length));
}

// ---- reductions ----

// inout[i] = in[i] (op) inout[i], with the rule the local and gloo backends use.
template <typename T, ReduceOp kOp>
void user_reduce(void* in, void* inout, int* length, MPI_Datatype*) {
  detail::reduce_elements<T, kOp>(inout, in, inout, static_cast<size_t>(*length));
}

// lockstep's rules as commutative MPI operations (commutative bit for bit too: a + b == b + a in IEEE
// arithmetic, and max/min pick the same element whatever the order), created once after MPI_Init.
template <typename T>
MPI_Op user_op(ReduceOp op) {
  static const std::array<MPI_Op, 3> ops = [] {
    std::array<MPI_Op, 3> o{};
    MPI_Op_create(&user_reduce<T, ReduceOp::SUM>, 1, &o[0]);
    MPI_Op_create(&user_reduce<T, ReduceOp::MAX>, 1, &o[1]);
    MPI_Op_create(&user_reduce<T, ReduceOp::MIN>, 1, &o[2]);
    return o;
  }();
  return ops[op == ReduceOp::MAX ? 1 : op == ReduceOp::MIN ? 2 : 0];
}

template <typename T>
MPI_Datatype mpi_type() {
  if constexpr (std::is_same_v<T, float>) return MPI_FLOAT;
  if constexpr (std::is_same_v<T, double>) return MPI_DOUBLE;
  if constexpr (std::is_same_v<T, int64_t>) return MPI_INT64_T;
  if constexpr (std::is_same_v<T, int32_t>) return MPI_INT32_T;
  return MPI_UINT16_T;  // bfloat16: only ever reduced by user_op
}

struct Reduction {
  MPI_Datatype type;
  MPI_Op op;
};

// MPI's built-in operation where it computes what lockstep's rule does (sums of float32/float64, integer
// sums and max/min, so hardware-offloaded reductions stay possible), a user operation otherwise: bfloat16
// (MPI has no such type), and floating MAX/MIN, where MPI's would let a NaN lose.
Reduction reduction(DType dtype, ReduceOp op) {
  const ReduceOp rule = op == ReduceOp::MEAN ? ReduceOp::SUM : op;
  return detail::visit_reducible(dtype, "MPI all_reduce", [&](auto x) -> Reduction {
    using T = decltype(x);
    if constexpr (std::is_same_v<T, bfloat16>) {
      return {mpi_type<T>(), user_op<T>(rule)};
    } else {
      if (rule == ReduceOp::SUM || std::is_integral_v<T>)
        return {mpi_type<T>(), rule == ReduceOp::SUM ? MPI_SUM : rule == ReduceOp::MAX ? MPI_MAX : MPI_MIN};
      return {mpi_type<T>(), user_op<T>(rule)};
    }
  });
}

// ---- the communicator ----

using detail::Failure;

// One tag's communicator, with the buffer its ring all-reduces receive into and their requests (kept, so that
// a warm all-reduce allocates nothing).
struct Channel {
  MPI_Comm comm = MPI_COMM_NULL;
  std::vector<std::byte> staging;
  std::vector<MPI_Request> requests;
};

class MPICommunicator final : public Communicator {
 public:
  MPICommunicator(MPIWorld world, const MPIOptions& options)
      : rank_(world.rank), size_(world.size), peers_{world.rank, world.size, options.peer_names, {}} {}

  ~MPICommunicator() override {
    // After a timeout no MPI call may follow (see g_abandoned); after MPI_Finalize none can.
    if (g_abandoned.load() || mpi_finalized()) return;
    for (auto& [tag, channel] : channels_) MPI_Comm_free(&channel->comm);
    if (parent_ != MPI_COMM_NULL) MPI_Comm_free(&parent_);
  }

  void connect(milliseconds timeout) {
    auto parent = std::make_unique<MPI_Comm>(MPI_COMM_NULL);
    MPI_Request request;
    call(MPI_Comm_idup(MPI_COMM_WORLD, parent.get(), &request), "communicator creation", 0);
    wait_keeping(request, "communicator creation", {0, timeout}, Clock::now() + timeout, parent);
    parent_ = *parent;
    MPI_Comm_set_errhandler(parent_, MPI_ERRORS_RETURN);  // errors become exceptions; duplicates inherit it
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void all_reduce(void* data, size_t count, DType dtype, ReduceOp op, const CollectiveOptions& options) override {
    failure_.check();
    const Reduction r = reduction(dtype, op);
    if (count == 0) return;
    if (size_ > 1) {
      const auto deadline = Clock::now() + options.timeout;
      Channel& channel = channel_for(options, "all_reduce", deadline);
      const size_t element = dtype_size(dtype);
      if (count * element >= kRingBytes) {
        const ReduceOp rule = op == ReduceOp::MEAN ? ReduceOp::SUM : op;
        const detail::ReduceFunction reduce = detail::visit_reducible(
            dtype, "MPI all_reduce", [&](auto x) { return detail::reduce_function<decltype(x)>(rule); });
        ring_all_reduce(static_cast<char*>(data), count, element, reduce, channel, options, deadline);
      } else {
        MPI_Request request;
        call(MPI_Iallreduce(MPI_IN_PLACE, data, static_cast<int>(count), r.type, r.op, channel.comm, &request),
             "all_reduce", options.tag);
        complete(&request, 1, "all_reduce", options.tag, options.timeout, deadline);
      }
    }
    // Every rank divides the same bits the same way, so MEAN stays identical across ranks.
    if (op == ReduceOp::MEAN) {
      detail::visit_reducible(dtype, "MPI all_reduce",
                              [&](auto x) { detail::divide_elements<decltype(x)>(data, count, size_); });
    }
  }

  void broadcast(void* data, size_t bytes, int root, const CollectiveOptions& options) override {
    LS_CHECK(root >= 0 && root < size_, ValueError, "broadcast root must be a rank in [0, ", size_, "), got ", root);
    failure_.check();
    if (size_ == 1 || bytes == 0) return;
    const auto deadline = Clock::now() + options.timeout;
    Channel& channel = channel_for(options, "broadcast", deadline);
    for (size_t at = 0; at < bytes; at += kMaxCount) {
      MPI_Request request;
      call(MPI_Ibcast(static_cast<char*>(data) + at, static_cast<int>(std::min(kMaxCount, bytes - at)), MPI_BYTE, root,
                      channel.comm, &request),
           "broadcast", options.tag);
      complete(&request, 1, "broadcast", options.tag, options.timeout, deadline);
    }
  }

  void all_gather(const void* input, void* output, size_t bytes, const CollectiveOptions& options) override {
    LS_CHECK(bytes <= kMaxCount, InvalidArgumentError, "MPI all_gather takes at most ", kMaxCount,
             " bytes per rank, got ", bytes, ": gather in several calls");
    failure_.check();
    char* mine = static_cast<char*>(output) + static_cast<size_t>(rank_) * bytes;
    if (bytes > 0 && mine != input) std::memmove(mine, input, bytes);
    if (size_ == 1 || bytes == 0) return;
    const auto deadline = Clock::now() + options.timeout;
    Channel& channel = channel_for(options, "all_gather", deadline);
    MPI_Request request;
    call(MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, output, static_cast<int>(bytes), MPI_BYTE, channel.comm,
                        &request),
         "all_gather", options.tag);
    complete(&request, 1, "all_gather", options.tag, options.timeout, deadline);
  }

  void barrier(const CollectiveOptions& options) override {
    failure_.check();
    if (size_ == 1) return;
    const auto deadline = Clock::now() + options.timeout;
    Channel& channel = channel_for(options, "barrier", deadline);
    MPI_Request request;
    call(MPI_Ibarrier(channel.comm, &request), "barrier", options.tag);
    complete(&request, 1, "barrier", options.tag, options.timeout, deadline);
  }

 private:
  // lockstep's ring (detail::ring_all_reduce) over MPI's point-to-point messages. OpenMPI's MPI_Iallreduce
  // (libnbc) reduces to one rank and broadcasts back for 2-3 ranks, so every byte crosses twice in turn; its
  // shared-memory transport copies a large point-to-point message once, straight between the two processes.
  void ring_all_reduce(char* data, size_t count, size_t element, detail::ReduceFunction reduce, Channel& channel,
                       const CollectiveOptions& options, Clock::time_point deadline) {
    const int next = (rank_ + 1) % size_, prev = (rank_ + size_ - 1) % size_;
    std::vector<MPI_Request>& requests = channel.requests;
    // In messages of at most kMaxCount bytes (MPI counts are int).
    auto exchange = [&](size_t step, const char* out, size_t out_bytes, char* in, size_t in_bytes) {
      const int message_tag = static_cast<int>(step);
      requests.clear();
      for (size_t at = 0; at < std::max(out_bytes, in_bytes); at += kMaxCount) {
        MPI_Request request;
        if (at < in_bytes) {
          call(MPI_Irecv(in + at, static_cast<int>(std::min(kMaxCount, in_bytes - at)), MPI_BYTE, prev, message_tag,
                         channel.comm, &request),
               "all_reduce", options.tag);
          requests.push_back(request);
        }
        if (at < out_bytes) {
          call(MPI_Isend(out + at, static_cast<int>(std::min(kMaxCount, out_bytes - at)), MPI_BYTE, next,
                         message_tag, channel.comm, &request),
               "all_reduce", options.tag);
          requests.push_back(request);
        }
      }
      complete(requests.data(), static_cast<int>(requests.size()), "all_reduce", options.tag, options.timeout,
               deadline);
    };
    detail::ring_all_reduce(data, count, element, rank_, size_, reduce, kRingPiece, channel.staging, exchange);
  }

  std::string self() const { return peers_.self(); }
  std::string op_name(const char* kind, uint32_t tag) const {
    return make_message("MPI ", kind, " (tag ", tag, ") on ", self(), " of ", size_);
  }


  void call(int code, const char* kind, uint32_t tag) {
    if (code != MPI_SUCCESS)
      failure_.raise({Failure::unavailable, make_message(op_name(kind, tag), " failed: ", mpi_error_string(code),
                                               "; the job failed; restart it")});
  }

  // Polls `requests` until all complete, the deadline passes or another thread's collective failed. MPI
  // progresses non-blocking operations only inside MPI calls (OpenMPI has no progress thread). The wait adapts:
  // it polls while requests complete and for kSpin after the last one did (a peer is there and exchanging), then
  // sleeps a little longer each time (at most kMaxNap), which leaves the cores to backward while a bucket waits
  // for a peer still computing. A request given up on stays in flight: its buffers must outlive the process's
  // MPI use (see g_abandoned).
  void complete(MPI_Request* requests, int n, const char* kind, uint32_t tag, milliseconds timeout,
                Clock::time_point deadline) {
    constexpr auto kSpin = std::chrono::microseconds(200);
    constexpr auto kFirstNap = std::chrono::microseconds(10);
    constexpr auto kMaxNap = std::chrono::microseconds(500);
    thread_local std::vector<int> completed;
    completed.resize(static_cast<size_t>(n));
    auto last_moved = Clock::now();
    auto nap = kFirstNap;
    for (;;) {
      int count = 0;
      const int code = MPI_Testsome(n, requests, &count, completed.data(), MPI_STATUSES_IGNORE);
      if (code == MPI_SUCCESS && count == MPI_UNDEFINED) return;  // every request is done (MPI_REQUEST_NULL)
      const auto now = Clock::now();
      if (code == MPI_SUCCESS && count > 0) {
        last_moved = now;
        nap = kFirstNap;
      }
      const bool timed_out = now >= deadline;
      if (code != MPI_SUCCESS || timed_out || failure_.happened()) {
        g_abandoned.store(true);
        call(code, kind, tag);
        if (timed_out && !failure_.happened()) failure_.raise(detail::timed_out(op_name(kind, tag), timeout));
        failure_.check();
      }
      if (now - last_moved < kSpin) {
        std::this_thread::yield();
      } else {
        std::this_thread::sleep_for(nap);
        nap = std::min(nap * 2, kMaxNap);
      }
    }
  }

  // The communicator of `options.tag`, duplicated from parent_ at the tag's first collective (see mpi.h).
  // One duplication at a time per process, so that this rank's duplications are issued in one order.
  Channel& channel_for(const CollectiveOptions& options, const char* kind, Clock::time_point deadline) {
    {
      std::lock_guard lock(mutex_);
      if (auto it = channels_.find(options.tag); it != channels_.end()) return *it->second;
    }
    std::lock_guard creating(create_mutex_);
    {
      std::lock_guard lock(mutex_);
      if (auto it = channels_.find(options.tag); it != channels_.end()) return *it->second;
    }
    auto channel = std::make_unique<Channel>();
    MPI_Request request;
    call(MPI_Comm_idup(parent_, &channel->comm, &request), kind, options.tag);
    wait_keeping(request, kind, options, deadline, channel);
    // The ranks check that they made this communicator for the same tag: max(tag) and max(-tag) agree
    // with this rank's tag on every rank exactly when all tags are equal.
    auto tags = std::make_unique<std::array<int64_t, 2>>(
        std::array<int64_t, 2>{static_cast<int64_t>(options.tag), -static_cast<int64_t>(options.tag)});
    call(MPI_Iallreduce(MPI_IN_PLACE, tags->data(), 2, MPI_INT64_T, MPI_MAX, channel->comm, &request), kind,
         options.tag);
    wait_keeping(request, kind, options, deadline, tags, channel);
    const int64_t other = (*tags)[0] != options.tag ? (*tags)[0] : -(*tags)[1];
    if (other != static_cast<int64_t>(options.tag)) {
      g_abandoned.store(true);  // this channel is crossed with another rank's: nothing on it can be trusted
      keep_forever(std::move(channel));
      failure_.raise({Failure::mismatch,
            make_message(op_name(kind, options.tag), ": another rank started tag ", other,
                         " at the same point; the first collective of each new tag must come in the same order "
                         "on every rank (MPI matches the duplication that creates the tag's communicator by "
                         "order): issue it before other threads start collectives with new tags")});
    }
    std::lock_guard lock(mutex_);
    return *channels_.emplace(options.tag, std::move(channel)).first->second;
  }

  // complete(), keeping every `keep` (owned buffers the request may still use) forever if the request is abandoned.
  template <typename... Keep>
  void wait_keeping(MPI_Request& request, const char* kind, const CollectiveOptions& options,
                    Clock::time_point deadline, std::unique_ptr<Keep>&... keep) {
    try {
      complete(&request, 1, kind, options.tag, options.timeout, deadline);
    } catch (...) {
      (keep_forever(std::move(keep)), ...);
      throw;
    }
  }

  const int rank_;
  const int size_;
  const detail::Peers peers_;
  MPI_Comm parent_ = MPI_COMM_NULL;  // the duplicate of MPI_COMM_WORLD the channels are made from
  std::mutex create_mutex_;          // held while a channel is being made
  std::mutex mutex_;                 // guards channels_
  std::unordered_map<uint32_t, std::unique_ptr<Channel>> channels_;
  detail::FirstFailure failure_;
};

}  // namespace

bool launched_by_mpi() {
  const char* use = std::getenv("LOCKSTEP_USE_MPI");
  if (use && std::string(use) == "0") return false;
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK"})
    if (std::getenv(name)) return true;
  return false;
}

MPIWorld initialize_mpi() {
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    LS_CHECK(launched_by_mpi(), ValueError,
             "MPI needs a job started by mpirun or srun --mpi=pmix, but none of OMPI_COMM_WORLD_SIZE, PMIX_RANK "
             "and PMI_RANK is set", std::getenv("LOCKSTEP_USE_MPI") ? " (or LOCKSTEP_USE_MPI=0 hides them)" : "",
             ": start the job with mpirun -np N, or use the gloo backend (CommunicationImplementation::RING)");
    int provided = MPI_THREAD_SINGLE;
    const int code = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
    LS_CHECK(code == MPI_SUCCESS, UnavailableError, "MPI_Init_thread failed: ", mpi_error_string(code),
             ": check that mpirun (or srun --mpi=pmix) started this process");
    std::atexit(finalize_mpi);
    LS_CHECK(provided >= MPI_THREAD_MULTIPLE, UnavailableError, "this MPI provides only ", thread_level_name(provided),
             ", but lockstep issues collectives from several threads and needs MPI_THREAD_MULTIPLE: use an MPI "
             "built with thread support (Debian's OpenMPI is), or the gloo backend");
  } else {
    // The application initialised MPI (and finalises it): it must allow threads.
    int provided = MPI_THREAD_SINGLE;
    MPI_Query_thread(&provided);
    LS_CHECK(provided >= MPI_THREAD_MULTIPLE, UnavailableError, "MPI was initialised with ",
             thread_level_name(provided), ", but lockstep needs MPI_THREAD_MULTIPLE: initialise it with "
             "MPI_Init_thread(..., MPI_THREAD_MULTIPLE, ...)");
  }
  LS_CHECK(!mpi_finalized(), UnavailableError, "MPI was already finalised in this process: create MPI "
           "communicators before MPI_Finalize");
  MPIWorld world;
  MPI_Comm_rank(MPI_COMM_WORLD, &world.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world.size);
  return world;
}

std::unique_ptr<Communicator> make_mpi_communicator(const MPIOptions& options) {
  LS_CHECK(!g_abandoned.load(), UnavailableError,
           "an earlier MPI collective of this process timed out and MPI cannot cancel it, so this process "
           "cannot use MPI again: restart the job");
  const MPIWorld world = initialize_mpi();
  LS_CHECK(options.peer_names.empty() || options.peer_names.size() == static_cast<size_t>(world.size), ValueError,
           "MPIOptions.peer_names must name all ", world.size, " ranks or none, got ", options.peer_names.size());
  auto communicator = std::make_unique<MPICommunicator>(world, options);
  communicator->connect(options.connect_timeout);
  return communicator;
}

}  // namespace lockstep::distribute
