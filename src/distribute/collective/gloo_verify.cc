// The one part of the gloo backend below gloo's public interfaces: a tcp pair that keeps only a connection that
// proves it knows the pair's secret.
//
// Why it reaches below them. gloo (Debian's snapshot 2022-05) gives every pair its own listening socket and takes
// the first connection accepted on it as the peer, then closes the socket: a port scan or any stray client during
// the rendezvous became "the peer" (its bytes read as gloo messages, which can make gloo's event loop terminate
// the process; its close a lost connection) and the real peer's connect was refused. Vetting a connection means
// deciding, before gloo reads a byte of it, whether gloo may have it, and this gloo offers no hook for that:
// no device-wide listener, no call that adopts a connected socket, no TLS transport in Debian's build, and its
// event loop runs the accept itself. So this file subclasses tcp::Pair and uses its protected members (the
// socket, the state, the pending read, the address) through gloo's installed headers, which need the stand-in
// gloo-compat/gloo/common/memory.h that Debian's package lacks. It is the only file compiled with that
// directory, and the size check below turns any disagreement between those headers and the library into a
// build error rather than a corrupt heap.
#include <fcntl.h>
#include <gloo/common/error.h>
#include <gloo/common/logging.h>
#include <gloo/transport/tcp/address.h>
#include <gloo/transport/tcp/context.h>
#include <gloo/transport/tcp/pair.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <random>

#include "gloo-impl.h"

namespace lockstep::distribute::detail {
namespace {

namespace tcp = gloo::transport::tcp;
using std::chrono::milliseconds;

// A VerifiedPair listens as gloo's pair does but keeps each accepted connection aside until it has sent
// the pair's secret: a random number that rides in the pair's address as its sequence number (unused by
// this gloo), so it reaches the peer only through the coordination service's store. The connecting side
// sends it first thing; any other connection is dropped and the pair keeps listening.
class VerifiedPair final : public tcp::Pair {
 public:
  VerifiedPair(tcp::Context* context, tcp::Device* device, int rank, milliseconds timeout)
      : tcp::Pair(context, device, rank, timeout), secret_(random_secret()) {
    // gloo's constructor starts listening before this object can vet connections. Nobody knows that port yet
    // (its address is published after this returns), so the socket is kept, unless gloo has taken a connection
    // on it in the meantime: then that one is dropped and the pair starts over on a new socket. (Keeping it
    // saves the event loop's tick that unregistering waits for: about 10 ms per pair.)
    bool start_over = false;
    {
      std::lock_guard lock(m_);
      start_over = state_ != LISTENING || ex_ != nullptr;
      if (start_over) {
        if (fd_ != kNoSocket) {
          device_->unregisterDescriptor(fd_, this);
          ::close(fd_);
          fd_ = kNoSocket;
        }
        ex_ = nullptr;
        rx_ = tcp::Op();
        peer_ = tcp::Address();
        state_ = INITIALIZING;
      }
    }
    if (start_over) listen();
    std::lock_guard lock(m_);
    ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) | O_NONBLOCK);  // a connection gone before accept() must not block
    ::listen(fd_, kBacklog);  // gloo's backlog of 1 would make the peer queue behind strays
    self_ = tcp::Address(self_.getSockaddr(), secret_);
    armed_ = true;
  }

  ~VerifiedPair() override {
    std::lock_guard lock(m_);
    drop_candidates();
  }

  void connect(const std::vector<char>& bytes) override {
    const tcp::Address peer(bytes);
    {
      std::lock_guard lock(m_);
      peer_secret_ = peer.getSeq();
    }
    tcp::Pair::connect(tcp::Address(peer.getSockaddr()));  // without the secret, which gloo would print in errors
  }

  // Called by gloo's event loop for the listening socket, the connections held aside (all registered with
  // this pair) and, once connected, the pair's socket. Events that do not concern the current state are
  // harmless: every check here is non-blocking and the loop is level-triggered.
  void handleEvents(int events) override {
    {
      std::unique_lock lock(m_, std::try_to_lock);
      if (!lock) return;  // gloo's own rule: someone else holds the pair; the event comes again next tick
      if (state_ == LISTENING) {
        if (armed_) {
          accept_candidates();
          check_candidates();
        }
        return;
      }
      drop_candidates();
      if (state_ == CONNECTING) {
        finish_connecting();
        return;
      }
      // An event of the epoll batch in which another descriptor's event connected or closed the pair is
      // stale: gloo handles none once closed, and insists on queued writes for an EPOLLOUT.
      if (state_ != CONNECTED) return;
      if (tx_.empty()) events &= ~EPOLLOUT;
    }
    tcp::Pair::handleEvents(events);
  }

 private:
  static constexpr int kNoSocket = -1;
  static constexpr int kBacklog = 64;
  // Connections held aside at most; one more drops the oldest (the peer's sends its secret at once).
  static constexpr size_t kMaxCandidates = 64;

  struct Candidate {
    int fd = kNoSocket;
    uint64_t order = 0;  // lower = accepted earlier
    size_t got = 0;
    std::array<char, sizeof(tcp::sequence_number_t)> hello{};
  };

  static tcp::sequence_number_t random_secret() {
    std::random_device device;
    const uint64_t bits = (static_cast<uint64_t>(device()) << 32) ^ device();
    return static_cast<tcp::sequence_number_t>(bits >> 1);  // non-negative: -1 means "no sequence number"
  }

  void accept_candidates() {
    for (;;) {
      const int fd = ::accept4(fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd == -1) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        return;  // none left (or out of descriptors: the next tick tries again)
      }
      auto slot =
          std::find_if(candidates_.begin(), candidates_.end(), [](const Candidate& c) { return c.fd == kNoSocket; });
      if (slot == candidates_.end() && candidates_.size() < kMaxCandidates) {
        slot = candidates_.emplace(candidates_.end());
      } else if (slot == candidates_.end()) {
        slot = std::min_element(candidates_.begin(), candidates_.end(),
                                [](const Candidate& a, const Candidate& b) { return a.order < b.order; });
        drop(*slot);
      }
      *slot = Candidate{fd, ++accepted_};
      device_->registerDescriptor(fd, EPOLLIN, this);
    }
  }

  // Reads what each held connection has sent of its hello: the one with the secret becomes the pair's
  // connection, one with anything else (or closed) is dropped.
  void check_candidates() {
    for (Candidate& c : candidates_) {
      if (c.fd == kNoSocket) continue;
      const ssize_t n = ::recv(c.fd, c.hello.data() + c.got, c.hello.size() - c.got, 0);
      if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) continue;
      if (n <= 0) {
        drop(c);
        continue;
      }
      c.got += static_cast<size_t>(n);
      if (c.got < c.hello.size()) continue;
      if (std::memcmp(c.hello.data(), &secret_, sizeof secret_) != 0) {
        drop(c);
        continue;
      }
      const int fd = c.fd;
      device_->unregisterDescriptor(fd, this);
      c.fd = kNoSocket;
      device_->unregisterDescriptor(fd_, this);
      ::close(fd_);
      fd_ = fd;
      drop_candidates();  // c with them: nothing below may touch it
      handleConnected();  // gloo's own path after accept(): socket options, registration, CONNECTED
      return;
    }
  }

  // The connecting side: once connect() completed, the secret goes first, then the pair is gloo's.
  void finish_connecting() {
    pollfd ready{fd_, POLLOUT, 0};
    if (::poll(&ready, 1, 0) != 1) return;  // an event for another descriptor: wait for this one's
    int error = 0;
    socklen_t size = sizeof error;
    if (::getsockopt(fd_, SOL_SOCKET, SO_ERROR, &error, &size) == -1) error = errno;
    if (error == 0) {
      const ssize_t sent = ::send(fd_, &peer_secret_, sizeof peer_secret_, MSG_NOSIGNAL);
      if (sent != static_cast<ssize_t>(sizeof peer_secret_)) error = sent == -1 ? errno : EPIPE;
    }
    if (error != 0) {
      signalException(GLOO_ERROR_MSG("connect ", peer_.str(), ": ", std::strerror(error)));  // gloo's wording
      return;
    }
    handleConnected();
  }

  // A stray connection closes with a reset, so no TIME_WAIT piles up under a port scan.
  void drop(Candidate& c) {
    device_->unregisterDescriptor(c.fd, this);
    const linger reset{1, 0};
    ::setsockopt(c.fd, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
    ::close(c.fd);
    c.fd = kNoSocket;
  }

  void drop_candidates() {
    for (Candidate& c : candidates_) {
      if (c.fd != kNoSocket) drop(c);
    }
    candidates_.clear();
  }

  const tcp::sequence_number_t secret_;      // what a connection to this pair's socket must send first
  tcp::sequence_number_t peer_secret_ = -1;  // what this side sends when it connects to the peer's
  bool armed_ = false;                       // listening on the socket whose address carries secret_
  std::vector<Candidate> candidates_;        // accepted connections that have not shown the secret yet
  uint64_t accepted_ = 0;
};

// Our view of gloo's headers must describe the installed library: its tcp::Context::createPair allocates
// 0x380 bytes for a tcp::Pair.
static_assert(sizeof(tcp::Pair) == 0x380, "gloo's tcp headers do not match libgloo 0.0~git20220518");

class VerifyingContext final : public tcp::Context {
 public:
  using tcp::Context::Context;
  std::unique_ptr<gloo::transport::Pair>& createPair(int rank) override {
    pairs_[static_cast<size_t>(rank)] = std::make_unique<VerifiedPair>(this, device_.get(), rank, getTimeout());
    return pairs_[static_cast<size_t>(rank)];
  }
};

}  // namespace

std::shared_ptr<gloo::transport::Context> make_verified_context(std::shared_ptr<tcp::Device> device, int rank,
                                                                int size) {
  return std::make_shared<VerifyingContext>(std::move(device), rank, size);
}

}  // namespace lockstep::distribute::detail
