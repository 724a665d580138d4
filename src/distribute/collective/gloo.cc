// The gloo backend: a tcp device on the worker's own address, a full mesh of pairs set up through our
// KeyValueStore, and gloo's ring algorithms (each element of an all_reduce is reduced by one rank and then
// copied to the others, so every rank ends with the same bits). A watchdog turns a broken connection into
// an error naming the peer, at once; gloo errors become lockstep errors. A pair takes only the connection
// that proves it knows the pair's secret from the store, so stray clients cannot break the rendezvous.
#include "lockstep/distribute/collective/gloo.h"

#include <fcntl.h>
#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/common/logging.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/context.h>
#include <gloo/transport/tcp/address.h>
#include <gloo/transport/tcp/context.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/transport/tcp/pair.h>
#include <gloo/transport/unbound_buffer.h>
#include <gloo/types.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <optional>
#include <random>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "reduce-impl.h"

namespace lockstep::distribute {
namespace {

namespace tcp = gloo::transport::tcp;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// Room for one "[ipv6]:port" socket address in the address exchange after connecting.
constexpr size_t kAddressBytes = 80;

// gloo writes to sockets with writev, which raises SIGPIPE when the peer has died; the default action
// would kill this worker instead of letting the collective throw. A handler someone installed is kept.
void ignore_sigpipe() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction current = {};
    if (sigaction(SIGPIPE, nullptr, &current) == 0 && !(current.sa_flags & SA_SIGINFO) &&
        current.sa_handler == SIG_DFL) {
      signal(SIGPIPE, SIG_IGN);
    }
  });
}

// gloo prefixes messages with "[/path/file.cc:123] "; the reader wants the part after it.
std::string strip_location(const std::string& message) {
  if (message.size() > 1 && message[0] == '[') {
    const size_t close = message.find("] ");
    if (close != std::string::npos && message.find(".cc:") < close) return message.substr(close + 2);
  }
  return message;
}

// "rank 2" or "worker:2 at host:port (rank 2)".
std::string peer_name(const std::vector<std::string>& names, int rank) {
  if (rank >= 0 && static_cast<size_t>(rank) < names.size() && !names[static_cast<size_t>(rank)].empty())
    return make_message(names[static_cast<size_t>(rank)], " (rank ", rank, ")");
  return make_message("rank ", rank);
}

// The rank whose socket address ("[ip]:port") appears in a gloo message, or -1.
int find_peer(const std::string& message, const std::vector<std::pair<std::string, int>>& addresses) {
  for (const auto& [address, rank] : addresses) {
    for (size_t at = message.find(address); at != std::string::npos; at = message.find(address, at + 1)) {
      const size_t after = at + address.size();
      if (after == message.size() || !std::isdigit(static_cast<unsigned char>(message[after]))) return rank;
    }
  }
  return -1;
}

// gloo's rendezvous store on ours. Keys get the prefix; get() blocks, because connectFullMesh calls it
// without wait(); values fetched by wait() are kept so the get() after it does not fetch them again. The
// whole rendezvous shares one deadline. It also learns the listening address of every rank's pairs, so
// that a failed connection can be blamed on the right peer.
class StoreAdapter final : public gloo::rendezvous::Store {
 public:
  StoreAdapter(KeyValueStore& store, const GlooOptions& options, int rank, int size)
      : store_(store), options_(options), rank_(rank), size_(size), deadline_(Clock::now() + options.connect_timeout) {}

  void set(const std::string& key, const std::vector<char>& data) override {
    store_.set(full_key(key), std::string(data.begin(), data.end()));
  }
  std::vector<char> get(const std::string& key) override { return fetch(key, options_.connect_timeout); }
  void wait(const std::vector<std::string>& keys) override { wait(keys, options_.connect_timeout); }
  void wait(const std::vector<std::string>& keys, const milliseconds& timeout) override {
    for (const std::string& key : keys) fetch(key, timeout);
  }

  const std::vector<std::pair<std::string, int>>& listen_addresses() const { return listen_addresses_; }

 private:
  std::string full_key(const std::string& key) const { return options_.prefix + "/" + key; }

  std::vector<char> fetch(const std::string& key, milliseconds timeout) {
    if (auto it = values_.find(key); it != values_.end()) return it->second;
    const auto left = std::chrono::duration_cast<milliseconds>(deadline_ - Clock::now());
    std::string value;
    try {
      value = store_.get(full_key(key), std::max(milliseconds(0), std::min(timeout, left)));
    } catch (const DeadlineExceededError&) {
      const int owner = key_rank(key);
      throw DeadlineExceededError(make_message(
          "gloo rendezvous: ", peer_name(options_.peer_names, rank_), " waited ", options_.connect_timeout.count(),
          " ms for ", owner >= 0 ? peer_name(options_.peer_names, owner) : "a peer",
          " to publish its gloo address (store key '", full_key(key),
          "'); that worker did not start, crashed, or uses another prefix; check its log and restart the job"));
    }
    std::vector<char> bytes(value.begin(), value.end());
    learn_addresses(key, bytes);
    return values_.emplace(key, std::move(bytes)).first->second;
  }

  // Keys are "rank_<r>" (hostnames, for gloo's local ranks) and "<r>" (the addresses of r's pairs).
  static int key_rank(const std::string& key) {
    std::string digits = key.rfind("rank_", 0) == 0 ? key.substr(5) : key;
    if (digits.empty() ||
        !std::all_of(digits.begin(), digits.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
      return -1;
    return std::stoi(digits);
  }

  void learn_addresses(const std::string& key, const std::vector<char>& bytes) {
    if (key.rfind("rank_", 0) == 0 || size_ < 2 || bytes.size() % static_cast<size_t>(size_ - 1) != 0) return;
    const int owner = key_rank(key);
    if (owner < 0) return;
    const size_t each = bytes.size() / static_cast<size_t>(size_ - 1);
    try {
      for (size_t at = 0; at < bytes.size(); at += each) {
        const tcp::Address address(std::vector<char>(bytes.begin() + at, bytes.begin() + at + each));
        listen_addresses_.emplace_back(tcp::Address(address.getSockaddr()).str(), owner);  // without the secret
      }
    } catch (const std::exception&) {
      // Only used to name a peer in an error message; an unexpected layout just names nobody.
    }
  }

  KeyValueStore& store_;
  const GlooOptions& options_;
  const int rank_;
  const int size_;
  const Clock::time_point deadline_;
  std::unordered_map<std::string, std::vector<char>> values_;
  std::vector<std::pair<std::string, int>> listen_addresses_;
};

// gloo (2022-05) gives every pair its own listening socket and takes the first connection accepted on it
// as the peer, then closes the socket: a port scan or any stray client during the rendezvous became "the
// peer" (its bytes read as gloo messages, its close a lost connection) and the real peer's connect was
// refused. A VerifiedPair listens the same way but keeps each accepted connection aside until it has sent
// the pair's secret: a random number that rides in the pair's address as its sequence number (unused by
// this gloo), so it reaches the peer only through the coordination service's store. The connecting side
// sends it first thing; any other connection is dropped and the pair keeps listening.
class VerifiedPair final : public tcp::Pair {
 public:
  VerifiedPair(tcp::Context* context, tcp::Device* device, int rank, milliseconds timeout)
      : tcp::Pair(context, device, rank, timeout), secret_(random_secret()) {
    // gloo's constructor starts listening before this object can vet connections (and may even have taken
    // one). Nobody knows that port yet, its address is published after this returns: start over on a new one.
    {
      std::lock_guard lock(m_);
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
    listen();
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

// gloo (2022-05) tells only queued operations that their connection broke, not a message that was half
// sent or half received at that moment: a collective waiting for one would sit out its whole timeout. So
// the transport context is wrapped (through gloo's public virtual interfaces) to keep a list of the live
// buffers, and a broken communicator wakes every wait on them.
class TrackingContext;

class TrackedBuffer final : public gloo::transport::UnboundBuffer {
 public:
  TrackedBuffer(std::unique_ptr<gloo::transport::UnboundBuffer> inner, std::shared_ptr<TrackingContext> context);
  ~TrackedBuffer() override;

  bool waitRecv(int* rank, milliseconds timeout) override { return inner_->waitRecv(rank, timeout); }
  bool waitSend(int* rank, milliseconds timeout) override { return inner_->waitSend(rank, timeout); }
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
  explicit TrackingContext(std::shared_ptr<gloo::transport::Context> inner)
      : gloo::transport::Context(inner->rank, inner->size), inner_(std::move(inner)) {}

  std::unique_ptr<gloo::transport::Pair>& createPair(int rank) override {
    inner_->setTimeout(getTimeout());  // connectFullMesh set it on this wrapper (setTimeout is not virtual)
    return inner_->createPair(rank);
  }
  std::unique_ptr<gloo::transport::Pair>& getPair(int rank) override { return inner_->getPair(rank); }
  std::unique_ptr<gloo::transport::UnboundBuffer> createUnboundBuffer(void* ptr, size_t size) override {
    return std::make_unique<TrackedBuffer>(inner_->createUnboundBuffer(ptr, size), shared_from_this());
  }

  void add(TrackedBuffer* buffer) {
    std::lock_guard lock(buffers_mutex_);
    buffers_.insert(buffer);
  }
  void remove(TrackedBuffer* buffer) {
    std::lock_guard lock(buffers_mutex_);
    buffers_.erase(buffer);
  }
  // Every wait in progress (or the next one on each buffer) returns at once as if done; the collective
  // then throws at its next send or recv, since the connections are closed by then.
  void wake_all() {
    std::lock_guard lock(buffers_mutex_);
    for (TrackedBuffer* buffer : buffers_) {
      buffer->abortWaitRecv();
      buffer->abortWaitSend();
    }
  }

 private:
  std::shared_ptr<gloo::transport::Context> inner_;
  std::mutex buffers_mutex_;
  std::unordered_set<TrackedBuffer*> buffers_;
};

TrackedBuffer::TrackedBuffer(std::unique_ptr<gloo::transport::UnboundBuffer> inner,
                             std::shared_ptr<TrackingContext> context)
    : gloo::transport::UnboundBuffer(inner->ptr, inner->size), inner_(std::move(inner)), context_(std::move(context)) {
  context_->add(this);
}
TrackedBuffer::~TrackedBuffer() {
  context_->remove(this);
}

class TrackingDevice final : public tcp::Device {
 public:
  using tcp::Device::Device;
  std::shared_ptr<gloo::transport::Context> createContext(int rank, int size) override {
    auto device = std::static_pointer_cast<tcp::Device>(std::enable_shared_from_this<tcp::Device>::shared_from_this());
    auto context = std::make_shared<TrackingContext>(std::make_shared<VerifyingContext>(device, rank, size));
    last_context = context.get();
    return context;
  }
  TrackingContext* last_context = nullptr;
};

using detail::Failure;

// A recv on every pair in a slot no collective uses: gloo fails it as soon as any connection breaks, which
// is how the watchdog learns of a dead peer even while no collective runs.
const uint64_t kCanarySlot = gloo::Slot::build(0xff, 0);
constexpr milliseconds kForever = std::chrono::hours(24 * 3650);  // a wait on it that ends would break the context
// How long collectives in flight get to fail on their own after a connection broke before being woken.
constexpr milliseconds kWakeGrace{300};

class GlooCommunicator final : public Communicator {
 public:
  GlooCommunicator(int rank, int size, const GlooOptions& options)
      : rank_(rank), size_(size), names_(options.peer_names) {}

  ~GlooCommunicator() override {
    if (!watchdog_.joinable()) return;
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    cv_.notify_all();
    canary_->abortWaitRecv();
    watchdog_.join();
  }

  void connect(KeyValueStore& store, const GlooOptions& options) {
    if (size_ == 1) return;
    try {
      tcp::attr attr;
      attr.hostname = options.hostname;
      device_ = std::make_shared<TrackingDevice>(tcp::CreateDeviceAttr(attr));
    } catch (const std::exception& e) {
      throw UnavailableError(make_message("gloo cannot listen on host '", options.hostname, "' on ", self(), " (",
                                          strip_location(e.what()),
                                          "); set this worker's TF_CONFIG address to a name or IP of this machine"));
    }
    StoreAdapter adapter(store, options, rank_, size_);
    context_ = std::make_shared<gloo::rendezvous::Context>(rank_, size_);
    context_->setTimeout(options.connect_timeout);
    try {
      std::shared_ptr<gloo::transport::Device> device = device_;
      context_->connectFullMesh(adapter, device);
      transport_ = device_->last_context;
      exchange_addresses(options.connect_timeout);
      // A pair accepted before it was told its peer keeps the peer's listening address as its name.
      addresses_.insert(addresses_.end(), adapter.listen_addresses().begin(), adapter.listen_addresses().end());
      canary_ = context_->createUnboundBuffer(&canary_byte_, 1);
      for (int peer = 0; peer < size_; ++peer) {
        if (peer != rank_) canary_->recv(peer, kCanarySlot, 0, 1);
      }
    } catch (const gloo::Exception& e) {
      throw_connect_error(e.what(), adapter);
    } catch (const gloo::EnforceNotMet& e) {
      throw_connect_error(e.what(), adapter);
    }
    watchdog_ = std::thread([this] { watch(); });
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void all_reduce(void* data, size_t count, DType dtype, ReduceOp op, const CollectiveOptions& options) override {
    check_failure();
    detail::visit_reducible(dtype, "all_reduce", [&](auto x) {
      using T = decltype(x);
      if (count == 0) return;
      if (size_ > 1) {
        run("all_reduce", options, [&] {
          gloo::AllreduceOptions o(context_);
          o.setOutput(static_cast<T*>(data), count);
          o.setReduceFunction(detail::reduce_function<T>(op));
          o.setTag(options.tag);
          o.setTimeout(gloo_timeout(options));
          gloo::allreduce(o);
        });
      }
      // Every rank divides the same bits the same way, so MEAN stays identical across ranks.
      if (op == ReduceOp::MEAN) detail::divide_elements<T>(data, count, size_);
    });
  }

  void broadcast(void* data, size_t bytes, int root, const CollectiveOptions& options) override {
    LS_CHECK(root >= 0 && root < size_, ValueError, "broadcast root must be a rank in [0, ", size_, "), got ", root);
    check_failure();
    if (size_ == 1 || bytes == 0) return;
    run("broadcast", options, [&] {
      gloo::BroadcastOptions o(context_);
      o.setOutput(static_cast<uint8_t*>(data), bytes);
      o.setRoot(root);
      o.setTag(options.tag);
      o.setTimeout(gloo_timeout(options));
      gloo::broadcast(o);
    });
  }

  void all_gather(const void* input, void* output, size_t bytes, const CollectiveOptions& options) override {
    check_failure();
    uint8_t* mine = static_cast<uint8_t*>(output) + static_cast<size_t>(rank_) * bytes;
    if (bytes > 0 && mine != input) std::memmove(mine, input, bytes);
    if (size_ == 1 || bytes == 0) return;
    run("all_gather", options, [&] {
      gloo::AllgatherOptions o(context_);
      o.setOutput(static_cast<uint8_t*>(output), bytes * static_cast<size_t>(size_));  // in place: ours is there
      o.setTag(options.tag);
      o.setTimeout(gloo_timeout(options));
      gloo::allgather(o);
    });
  }

  void barrier(const CollectiveOptions& options) override {
    check_failure();
    if (size_ == 1) return;
    run("barrier", options, [&] {
      gloo::BarrierOptions o(context_);
      o.setTag(options.tag);
      o.setTimeout(gloo_timeout(options));
      gloo::barrier(o);
    });
  }

 private:
  std::string self() const { return peer_name(names_, rank_); }

  static milliseconds gloo_timeout(const CollectiveOptions& options) {
    return std::max(options.timeout, milliseconds(1));  // gloo reads 0 as "use the context's timeout"
  }

  void check_failure() {
    std::unique_lock lock(mutex_);
    if (failure_) refuse(lock);
  }

  // A collective refused because of an earlier failure. If the failure was noticed between collectives
  // (a connection closed), the peers may already wait for this rank in the collective it now refuses:
  // closing the connections tells them at once. Not done when the failure is noticed, because a peer that
  // closes right after the last collective of a job is no failure for the others.
  [[noreturn]] void refuse(std::unique_lock<std::mutex>& lock) {
    if (!broken_) {
      broken_ = true;
      lock.unlock();
      break_connections();
      lock.lock();
    }
    failure_->raise();
  }

  template <typename F>
  void run(const char* kind, const CollectiveOptions& options, F&& f) {
    uint64_t wakes = 0;
    {
      std::unique_lock lock(mutex_);
      if (failure_) refuse(lock);
      ++in_flight_;
      wakes = wakes_;
    }
    struct Leave {
      GlooCommunicator* c;
      ~Leave() {
        std::lock_guard lock(c->mutex_);
        --c->in_flight_;
        c->cv_.notify_all();
      }
    } leave{this};
    try {
      f();
    } catch (const gloo::Exception& e) {
      fail(kind, options, e.what());
    } catch (const gloo::EnforceNotMet& e) {
      fail(kind, options, e.what());
    }
    // Woken by the watchdog, gloo may return as if done; a collective that finished before the failure
    // (a peer that closed right after the last collective) keeps its result.
    std::unique_lock lock(mutex_);
    if (wakes_ != wakes) refuse(lock);
  }

  // Records the first error (later ones, on this or other threads, are its consequences), breaks the
  // connections so that the peers fail at once too, and throws.
  [[noreturn]] void fail(const char* kind, const CollectiveOptions& options, const std::string& what) {
    std::unique_lock lock(mutex_);
    if (!failure_) {
      const std::string op = make_message("gloo ", kind, " (tag ", options.tag, ") on ", self(), " of ", size_);
      const std::string detail = strip_location(what);
      if (is_timeout(detail)) {
        failure_ = Failure{Failure::deadline,
                           make_message(op, " timed out after ", options.timeout.count(),
                                        " ms: a peer did not take part (", detail,
                                        "); a worker stopped issuing collectives, issued them in another order or "
                                        "is stuck: check the other workers' logs, or raise "
                                        "CollectiveOptions.timeout if a step legitimately takes longer")};
      } else {
        failure_ = Failure{Failure::unavailable, lost_peer_message(op, detail)};
      }
    }
    refuse(lock);
  }

  static bool is_timeout(const std::string& detail) {
    return detail.find("Timed out waiting") != std::string::npos ||
           detail.find("Application timeout") != std::string::npos;
  }

  std::string lost_peer_message(const std::string& op, const std::string& detail) const {
    const int peer = find_peer(detail, addresses_);
    return make_message(op, " lost its connection to ",
                        peer >= 0 ? peer_name(names_, peer) : make_message("a peer of rank ", rank_), " (", detail,
                        "); the job failed; restart it (lockstep launch --max-restarts)");
  }

  // Waits on the canary. When a connection breaks it records the failure (unless a collective already
  // has, or will: a timeout is recorded by the collective that timed out); collectives still in flight
  // after a grace period are stuck on a wait gloo does not end, so it closes the connections and wakes them.
  void watch() {
    std::string what;
    try {
      if (!canary_->waitRecv(kForever)) return;  // woken by the destructor
    } catch (const gloo::Exception& e) {
      what = strip_location(e.what());
    }
    std::unique_lock lock(mutex_);
    if (stopping_) return;
    if (!failure_ && !is_timeout(what)) {
      failure_ =
          Failure{Failure::unavailable, lost_peer_message(make_message("gloo on ", self(), " of ", size_), what)};
    }
    const auto wake_at = Clock::now() + kWakeGrace;
    while (!stopping_ && in_flight_ > 0) {
      if (Clock::now() < wake_at) {
        cv_.wait_until(lock, wake_at);
        continue;
      }
      if (!failure_) {  // the collective that timed out has not recorded it yet
        failure_ = Failure{Failure::deadline,
                           make_message("gloo on ", self(), " of ", size_, ": a collective timed out (", what,
                                        ") and closed the connections; raise CollectiveOptions.timeout if a step "
                                        "legitimately takes longer")};
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

  // gloo has no public "close everything" call, but a buffer wait that times out makes the transport fail
  // every pair: the sockets close, so the peers see the failure at once instead of at their own timeout.
  void break_connections() {
    char byte = 0;
    auto buffer = context_->createUnboundBuffer(&byte, 1);
    try {
      buffer->waitRecv(milliseconds(1));
    } catch (const gloo::Exception&) {
    }
  }

  // Each rank tells the others the local address of its socket to each of them, so that an error naming
  // a socket address ("Connection closed by peer [ip]:port") can be mapped to the peer's name.
  void exchange_addresses(milliseconds timeout) {
    const size_t n = static_cast<size_t>(size_);
    std::vector<char> all(n * n * kAddressBytes, '\0');
    char* mine = all.data() + static_cast<size_t>(rank_) * n * kAddressBytes;
    for (int peer = 0; peer < size_; ++peer) {
      if (peer == rank_) continue;
      const std::string address = context_->getPair(peer)->address().str();
      std::memcpy(mine + static_cast<size_t>(peer) * kAddressBytes, address.data(),
                  std::min(address.size(), kAddressBytes - 1));
    }
    gloo::AllgatherOptions o(context_);
    o.setOutput(all.data(), all.size());
    o.setTimeout(timeout);
    gloo::allgather(o);
    for (int peer = 0; peer < size_; ++peer) {
      if (peer == rank_) continue;
      const char* slot = all.data() + (static_cast<size_t>(peer) * n + static_cast<size_t>(rank_)) * kAddressBytes;
      const std::string address(slot, strnlen(slot, kAddressBytes));
      if (!address.empty()) addresses_.emplace_back(address, peer);
    }
  }

  [[noreturn]] void throw_connect_error(const std::string& what, const StoreAdapter& adapter) {
    const std::string detail = strip_location(what);
    const int peer = find_peer(detail, adapter.listen_addresses());
    throw UnavailableError(make_message(
        "gloo rendezvous: ", self(), " could not connect to ", peer >= 0 ? peer_name(names_, peer) : "its peers", " (",
        detail, "); check that every worker is running and that the workers' TF_CONFIG addresses reach each other"));
  }

  const int rank_;
  const int size_;
  const std::vector<std::string> names_;
  std::shared_ptr<TrackingDevice> device_;
  std::shared_ptr<gloo::rendezvous::Context> context_;  // null when size_ == 1
  TrackingContext* transport_ = nullptr;                // context_'s transport
  std::vector<std::pair<std::string, int>> addresses_;  // the peers' socket addresses as this rank sees them
  char canary_byte_ = 0;
  std::unique_ptr<gloo::transport::UnboundBuffer> canary_;  // destroyed before context_
  std::thread watchdog_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::optional<Failure> failure_;
  int in_flight_ = 0;    // collectives running now
  uint64_t wakes_ = 0;   // times the watchdog woke them
  bool broken_ = false;  // the connections have been closed on purpose
  bool stopping_ = false;
};

}  // namespace

std::unique_ptr<Communicator> make_gloo_communicator(KeyValueStore& store, int rank, int size,
                                                     const GlooOptions& options) {
  LS_CHECK(size >= 1, ValueError, "gloo communicator size must be at least 1, got ", size);
  LS_CHECK(rank >= 0 && rank < size, ValueError, "gloo communicator rank must be in [0, ", size, "), got ", rank);
  LS_CHECK(options.peer_names.empty() || options.peer_names.size() == static_cast<size_t>(size), ValueError,
           "GlooOptions.peer_names must name all ", size, " ranks or none, got ", options.peer_names.size());
  ignore_sigpipe();
  auto communicator = std::make_unique<GlooCommunicator>(rank, size, options);
  communicator->connect(store, options);
  return communicator;
}

}  // namespace lockstep::distribute
