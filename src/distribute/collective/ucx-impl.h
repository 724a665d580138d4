// Private to the UCX backends: the communicator that the shared-memory (shared_memory.cc) and network (network.cc)
// backends both are, on UCX's tag-matched messages. Its engine (ucx_engine.cc) is a worker and one endpoint per
// peer, every UCX call under one mutex (the worker is serialized), the waits and the ring all-reduce; the medium
// decides UCX's transports, how a peer's failure is noticed and the words of errors, and the members only one
// medium uses are defined in that medium's file.
#pragma once
#include <sys/types.h>
#include <ucp/api/ucp.h>

#include <array>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "lockstep/distribute/collective/communicator.h"
#include "reduce-impl.h"

namespace lockstep::distribute::detail {

class UcxCommunicator final : public Communicator {
 public:
  // What the messages travel over: decides UCX's transports, how a peer's failure is noticed, and the words of
  // errors.
  struct Medium {
    bool network;
    std::string interface;  // network: the one UCX uses ("" = UCX's choice)
    const char* name() const { return network ? "network" : "shared-memory"; }
  };

  UcxCommunicator(int rank, int size, const RendezvousOptions& options, Medium medium)
      : peers_{rank, size, options.peer_names, options.peer_tasks}, medium_(std::move(medium)) {}
  ~UcxCommunicator() override;

  // Publishes this rank's address, reaches every peer's and meets them all in a first barrier.
  void connect(KeyValueStore& store, const RendezvousOptions& options);

  int rank() const override { return peers_.rank; }
  int size() const override { return peers_.size; }

  // The rank of a peer whose process has exited or exits within `grace`, else -1 (remote_ is fixed once
  // connected). A dying process's memory is gone before its pidfd reports the exit, hence the grace. Shared
  // memory only: on the network no peer has a pid, and the answer is -1.
  int exited_peer(std::chrono::milliseconds grace) const;

  void all_reduce(void* data, size_t count, DType dtype, ReduceOp op, const CollectiveOptions& options) override;
  void broadcast(void* data, size_t bytes, int root, const CollectiveOptions& options) override;
  void all_gather(const void* input, void* output, size_t bytes, const CollectiveOptions& options) override;
  void barrier(const CollectiveOptions& options) override;
  std::unique_ptr<MappedRegions> map_regions(size_t bytes, const CollectiveOptions& options) override;

 private:
  using Clock = std::chrono::steady_clock;

  // The mapped regions of one map_regions call (shared_memory.cc).
  class Regions;

  struct Peer {
    ucp_ep_h endpoint = nullptr;
    pid_t pid = 0;                 // shared memory only
    int pidfd = -1;                // -1: the watcher polls kill(pid, 0) instead
    int rank = -1;                 // network: for UCX's error callback on `endpoint`
    ucs_status_t broken = UCS_OK;  // what that callback reported (guarded by ucp_mutex_)
  };

  // A collective in progress, for its messages and its deadline.
  struct Op {
    const char* kind;
    const CollectiveOptions& options;
    Clock::time_point deadline;
    mutable bool moved = false;  // a message of it has moved: the peers are in it too
  };

  // The most of its error a rank sends its peers when its communicator breaks.
  static constexpr size_t kNoticeBytes = 1024;

  // The engine (ucx_engine.cc).
  void check(ucs_status_t status, const char* what) const;
  void start_ucx();
  std::string own_card();
  void reach(int r, const std::string& card);
  void close_endpoints();
  void* post_send(int peer, const void* data, size_t bytes, uint64_t tag, const Op& o);
  void* post_recv(int peer, void* data, size_t bytes, uint64_t tag, const Op& o);
  void* posted(ucs_status_ptr_t request, int peer, const Op& o);
  static int peer_of(void* request) { return *static_cast<int*>(request); }
  Failure transport_failure(const Op& o, ucs_status_t status) const;
  std::string op_name(const Op& o) const;
  template <typename Into>
  void exchange_with_all(const char* kind, const CollectiveOptions& options, const void* mine, size_t bytes,
                         Into&& into);
  void wait(void** requests, size_t n, const Op& o);
  void wait_for_all(void** requests, size_t n, const Op& o);
  void sleep_until_event();
  void check_notice();
  void tell_peers(const std::string& message);

  // The network's failure handling (network.cc).
  static void on_endpoint_error(void* arg, ucp_ep_h, ucs_status_t status);
  void check_broken();
  Failure lost_connection(int r, ucs_status_t status) const;

  // Shared memory's (shared_memory.cc): the watcher of the peers' processes, and the mapped regions.
  void watch();
  Failure peer_exited(int r) const;
  void release_regions();

  const Peers peers_;
  const Medium medium_;
  std::shared_ptr<ucp_context> context_;  // shared with the mapped regions this rank owns
  std::vector<Regions*> regions_;         // live ones (guarded by ucp_mutex_)
  ucp_worker_h worker_ = nullptr;
  int event_fd_ = -1;       // UCX's, signalled on the worker's events once armed
  std::mutex ucp_mutex_;    // every call on worker_ and its endpoints
  bool abandoned_ = false;  // a request was given up on (guarded by ucp_mutex_)
  void* notice_ = nullptr;  // the receive of a peer's failure notice (guarded by ucp_mutex_)
  std::array<char, kNoticeBytes> notice_text_{};
  bool told_ = false;                // this rank's failure went to its peers, or a peer's came (guarded by ucp_mutex_)
  std::string notice_sent_;          // what tell_peers sent
  std::vector<void*> notice_sends_;  // its sends still in flight (guarded by ucp_mutex_)
  std::vector<Peer> remote_;         // by rank; this rank's entry is unused
  int stop_fd_ = -1;                 // written to stop the watcher (shared memory only)
  std::thread watcher_;
  FirstFailure failure_;
};

}  // namespace lockstep::distribute::detail
