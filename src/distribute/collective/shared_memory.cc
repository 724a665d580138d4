// The shared-memory backend (shared_memory.h): the UCX engine (ucx-impl.h) held to UCX's shared-memory transports,
// a thread that waits on every peer's pidfd so that a peer's exit fails the collective in flight at once (UCX 1.13
// reports no peer failure over shared memory), and the buckets' regions every worker maps.
#include "lockstep/distribute/collective/shared_memory.h"

#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>

#include "lockstep/core/files.h"
#include "ucx-impl.h"

namespace lockstep::distribute {
namespace detail {
namespace {

using std::chrono::milliseconds;

std::string namespace_of(const char* kind) {
  std::array<char, 128> link{};
  const ssize_t n = ::readlink(make_message("/proc/self/ns/", kind).c_str(), link.data(), link.size() - 1);
  return n > 0 ? std::string(link.data(), static_cast<size_t>(n)) : std::string(kind) + ":?";
}

}  // namespace

int UcxCommunicator::exited_peer(milliseconds grace) const {
  std::vector<pollfd> fds;
  std::vector<int> ranks;
  for (int r = 0; r < size(); ++r) {
    const Peer& p = remote_[static_cast<size_t>(r)];
    if (r == rank() || p.pid == 0) continue;
    if (p.pidfd >= 0) {
      fds.push_back({p.pidfd, POLLIN, 0});
      ranks.push_back(r);
    } else if (::kill(p.pid, 0) == -1 && errno == ESRCH) {
      return r;
    }
  }
  if (fds.empty() || ::poll(fds.data(), fds.size(), static_cast<int>(grace.count())) <= 0) return -1;
  for (size_t i = 0; i < fds.size(); ++i)
    if (fds[i].revents) return ranks[i];
  return -1;
}

class UcxCommunicator::Regions final : public MappedRegions {
 public:
  explicit Regions(UcxCommunicator& c) : comm_(&c), rank_(c.rank()), peers_(static_cast<size_t>(c.size())) {
    std::lock_guard lock(c.ucp_mutex_);
    c.regions_.push_back(this);
  }
  ~Regions() override {
    UcxCommunicator* const c = comm_;
    if (!c) return;  // the communicator went first and released the peers' keys
    std::lock_guard lock(c->ucp_mutex_);
    release_peers();
    std::erase(c->regions_, this);
  }
  void* region(int rank) const override {
    return rank == rank_ ? const_cast<void*>(own_.get()) : peers_[static_cast<size_t>(rank)].data;
  }
  std::shared_ptr<const void> own() const override { return own_; }

  // Allocates this rank's region; its card (address, then packed remote key), or empty if UCX cannot share it.
  std::string map_own(size_t bytes) {
    ucp_mem_map_params_t params{};
    params.field_mask =
        UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH | UCP_MEM_MAP_PARAM_FIELD_FLAGS;
    params.address = nullptr;
    params.length = bytes;
    params.flags = UCP_MEM_MAP_ALLOCATE;
    std::lock_guard lock(comm_->ucp_mutex_);
    ucp_context_h context = comm_->context_.get();
    ucp_mem_h memh = nullptr;
    if (ucp_mem_map(context, &params, &memh) != UCS_OK) return {};
    auto unmap = [keep = comm_->context_, memh](const void*) { ucp_mem_unmap(keep.get(), memh); };
    const std::shared_ptr<const void> mapping(static_cast<const void*>(memh), unmap);
    ucp_mem_attr_t attr{};
    attr.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS;
    void* packed = nullptr;
    size_t length = 0;
    if (ucp_mem_query(memh, &attr) != UCS_OK || reinterpret_cast<uintptr_t>(attr.address) % 64 != 0 ||
        ucp_rkey_pack(context, memh, &packed, &length) != UCS_OK)
      return {};
    own_ = std::shared_ptr<const void>(mapping, attr.address);  // the mapping's owner, pointing at the memory
    const auto address = reinterpret_cast<uint64_t>(attr.address);
    std::string card(reinterpret_cast<const char*>(&address), sizeof address);
    card.append(static_cast<const char*>(packed), length);
    ucp_rkey_buffer_release(packed);
    return card;
  }

  // Attaches rank r's region from its card; false if it has none or this process cannot reach it.
  bool attach(int r, std::string_view card) {
    uint64_t address = 0;
    std::memcpy(&address, card.data(), sizeof address);
    if (address == 0) return false;
    Peer& peer = peers_[static_cast<size_t>(r)];
    std::lock_guard lock(comm_->ucp_mutex_);
    if (ucp_ep_rkey_unpack(comm_->remote_[static_cast<size_t>(r)].endpoint, card.data() + sizeof address, &peer.key) !=
        UCS_OK) {
      peer.key = nullptr;
      return false;
    }
    return ucp_rkey_ptr(peer.key, address, &peer.data) == UCS_OK;
  }

  // Destroys the peers' keys, which belong to the communicator's worker (caller holds its ucp_mutex_): their
  // regions are unreadable from here on.
  void release_peers() {
    for (Peer& p : peers_) {
      if (p.key) ucp_rkey_destroy(p.key);
      p = {};
    }
    comm_ = nullptr;
  }

 private:
  struct Peer {
    ucp_rkey_h key = nullptr;
    void* data = nullptr;
  };
  UcxCommunicator* comm_;
  const int rank_;
  std::shared_ptr<const void> own_;
  std::vector<Peer> peers_;
};

// Over shared memory: this rank's region is shared memory UCX allocates (System V or POSIX), and each peer's is
// attached through the remote key that peer packed (ucp_rkey_ptr). The cards (address and key) go round by
// all_gather, and every rank learns whether all of them could attach every peer's region.
std::unique_ptr<MappedRegions> UcxCommunicator::map_regions(size_t bytes, const CollectiveOptions& options) {
  failure_.check();
  if (medium_.network || size() == 1 || bytes == 0) return nullptr;
  auto regions = std::make_unique<Regions>(*this);
  std::string card = regions->map_own(bytes);  // empty where UCX could not
  int64_t longest = static_cast<int64_t>(card.size());
  all_reduce(&longest, 1, DType::int64, ReduceOp::MAX, options);
  if (longest == 0) return nullptr;
  card.resize(static_cast<size_t>(longest));  // empty cards stay all zero: no address
  const size_t each = card.size();
  std::string cards(each * static_cast<size_t>(size()), '\0');
  all_gather(card.data(), cards.data(), each, options);
  int64_t attached = 1;
  for (int r = 0; r < size() && attached; ++r)
    if (r != rank()) attached = regions->attach(r, std::string_view(cards).substr(each * static_cast<size_t>(r), each));
  all_reduce(&attached, 1, DType::int64, ReduceOp::MIN, options);
  if (!attached) return nullptr;
  return regions;
}

// The watcher: a peer's pidfd becomes readable when that process exits.
void UcxCommunicator::watch() {
  std::vector<pollfd> fds{{stop_fd_, POLLIN, 0}};
  std::vector<int> ranks{-1};
  bool any_without_pidfd = false;
  for (int r = 0; r < size(); ++r) {
    const Peer& p = remote_[static_cast<size_t>(r)];
    if (r == rank()) continue;
    if (p.pidfd >= 0) {
      fds.push_back({p.pidfd, POLLIN, 0});
      ranks.push_back(r);
    } else {
      any_without_pidfd = true;
    }
  }
  for (;;) {
    if (::poll(fds.data(), fds.size(), any_without_pidfd ? 100 : -1) < 0 && errno != EINTR) return;
    if (fds[0].revents) return;
    int gone = -1;
    for (size_t i = 1; i < fds.size() && gone < 0; ++i)
      if (fds[i].revents) gone = ranks[i];
    for (int r = 0; r < size() && gone < 0; ++r) {
      const Peer& p = remote_[static_cast<size_t>(r)];
      if (r != rank() && p.pidfd < 0 && ::kill(p.pid, 0) == -1 && errno == ESRCH) gone = r;
    }
    if (gone >= 0) {
      failure_.record(peer_exited(gone));
      return;
    }
  }
}

Failure UcxCommunicator::peer_exited(int r) const {
  return {Failure::unavailable,
          make_message("shared-memory collectives on ", peers_.self(), " of ", size(), ": ", peers_.name(r), " (pid ",
                       remote_[static_cast<size_t>(r)].pid,
                       ") exited; the job failed; restart it (lockstep launch --max-restarts)"),
          peers_.task(r)};
}

void UcxCommunicator::release_regions() {
  std::lock_guard lock(ucp_mutex_);
  for (Regions* r : regions_) r->release_peers();
}

}  // namespace detail

std::string shared_memory_domain() {
  std::string boot;
  try {
    boot = trim(read_file("/proc/sys/kernel/random/boot_id"));
  } catch (const Error&) {
    boot = "boot:?";
  }
  // Which /dev/shm: processes in different mount namespaces (`ip netns exec` gives each its own) may share it.
  struct stat shm {};
  const std::string dev_shm =
      ::stat("/dev/shm", &shm) == 0 ? make_message("shm:", shm.st_dev, ":", shm.st_ino) : std::string("shm:?");
  return make_message(boot, " ", detail::namespace_of("ipc"), " ", detail::namespace_of("pid"), " ",
                      detail::namespace_of("net"), " ", dev_shm);
}

std::unique_ptr<Communicator> make_shared_memory_communicator(KeyValueStore& store, int rank, int size,
                                                              const SharedMemoryOptions& options) {
  LS_CHECK(size >= 1 && size < (1 << 16), ValueError, "shared-memory communicator size must be in [1, 65535], got ",
           size);
  detail::check_rendezvous(options, rank, size, "SharedMemoryOptions");
  auto communicator =
      std::make_unique<detail::UcxCommunicator>(rank, size, options, detail::UcxCommunicator::Medium{false, ""});
  communicator->connect(store, options);
  return communicator;
}

}  // namespace lockstep::distribute
