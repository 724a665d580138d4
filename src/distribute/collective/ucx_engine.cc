// The UCX engine of the shared-memory and network backends (ucx-impl.h): the worker and its endpoints, the
// rendezvous, the collectives on tag-matched messages (the ring all-reduce), the waits that progress UCX, and the
// failure notices a broken communicator sends its peers.
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <ucs/debug/log_def.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdlib>
#include <cstring>
#include <set>

#include "lockstep/distribute/collective/shared_memory.h"
#include "ucx-impl.h"

namespace lockstep::distribute::detail {
namespace {

using std::chrono::milliseconds;

// The ring's reduce-scatter pieces, as in the MPI backend.
constexpr size_t kRingPiece = 256 << 10;
// How long a wait polls before it sleeps on UCX's event descriptor, while no message of its collective moves.
constexpr auto kSpin = std::chrono::microseconds(100);
// The longest one sleep lasts: a wait rechecks its deadline and the peers' state at least this often.
constexpr int kSleepMs = 1;

int open_pidfd(pid_t pid) {
#ifdef SYS_pidfd_open
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
#else
  (void)pid;
  return -1;
#endif
}

// A message's UCX tag: the collective's tag, the message's step within the collective, and its sender.
uint64_t message_tag(uint32_t tag, size_t step, int sender) {
  return (uint64_t{tag} << 32) | (static_cast<uint64_t>(step & 0xffff) << 16) | static_cast<uint64_t>(sender);
}
// The message a rank sends every peer when its communicator breaks (its error, at most kNoticeBytes), on a tag
// no collective uses (a ring's steps stay below 0xffff).
const uint64_t kNoticeTag = message_tag(0xffffffffu, 0xffff, 0);
constexpr uint64_t kAnySender = ~uint64_t{0xffff};

// Set while this thread frees a broken communicator's UCX worker: its warnings about abandoned requests are dropped.
thread_local bool t_quiet = false;

// UCX aborts the process when a transfer fails on an endpoint without error handling, the only mode its shared-
// memory transports offer (1.13): it logs the failed copy from a peer process that has exited as FATAL. A peer's
// exit is a failure this backend reports itself (the watcher's UnavailableError naming the peer), so when a peer
// of a live communicator has exited (or does within half a second), UCX's FATAL message is dropped and the failed
// transfer ends as an error.
std::mutex g_live_mutex;
std::set<const UcxCommunicator*>* g_live = new std::set<const UcxCommunicator*>;

ucs_log_func_rc_t on_ucx_log(const char*, unsigned, const char*, ucs_log_level_t level,
                             const ucs_log_component_config_t*, const char*, va_list) {
  if (t_quiet && level >= UCS_LOG_LEVEL_WARN) return UCS_LOG_FUNC_RC_STOP;
  if (level != UCS_LOG_LEVEL_FATAL) return UCS_LOG_FUNC_RC_CONTINUE;
  std::lock_guard lock(g_live_mutex);
  for (const UcxCommunicator* c : *g_live)
    if (c->exited_peer(milliseconds(500)) >= 0) return UCS_LOG_FUNC_RC_STOP;
  return UCS_LOG_FUNC_RC_CONTINUE;
}

void remember(const UcxCommunicator* c) {
  static std::once_flag once;
  std::call_once(once, [] { ucs_log_push_handler(on_ucx_log); });
  std::lock_guard lock(g_live_mutex);
  g_live->insert(c);
}

void forget(const UcxCommunicator* c) {
  std::lock_guard lock(g_live_mutex);
  g_live->erase(c);
}

}  // namespace

UcxCommunicator::~UcxCommunicator() {
  forget(this);
  if (watcher_.joinable()) {
    const uint64_t one = 1;
    [[maybe_unused]] const ssize_t n = ::write(stop_fd_, &one, sizeof one);
    watcher_.join();
  }
  for (const Peer& p : remote_)
    if (p.pidfd >= 0) ::close(p.pidfd);
  if (stop_fd_ >= 0) ::close(stop_fd_);
  if (!worker_) return;
  if (notice_ && !UCS_PTR_IS_ERR(notice_)) {
    ucp_request_cancel(worker_, notice_);
    notice_sends_.push_back(notice_);
  }
  // Without a request given up on, UCX is progressed a little longer: the notices this rank sent get a second
  // to leave, and the endpoints close. With one, UCX is not progressed again (a transfer into a buffer its
  // owner has freed could go on): the worker is freed as it is.
  if (!abandoned_) {
    const auto deadline = Clock::now() + std::chrono::seconds(1);
    for (void* request : notice_sends_) {
      while (ucp_request_check_status(request) == UCS_INPROGRESS && Clock::now() < deadline)
        ucp_worker_progress(worker_);
      abandoned_ = abandoned_ || ucp_request_check_status(request) == UCS_INPROGRESS;  // the peer is gone
    }
  }
  for (void* request : notice_sends_) ucp_request_free(request);
  // UCX warns, as it frees the worker of a broken communicator, about each request that never completed and each
  // message that came for none (a second peer's notice): expected then, not printed.
  t_quiet = abandoned_ || failure_.happened();
  if (!abandoned_) close_endpoints();
  release_regions();  // the peers' remote keys belong to the worker
  ucp_worker_destroy(worker_);
  context_.reset();  // freed once the tensors viewing this rank's mapped regions are gone too
  t_quiet = false;
}

void UcxCommunicator::connect(KeyValueStore& store, const RendezvousOptions& options) {
  if (size() == 1) return;
  const auto deadline = Clock::now() + options.connect_timeout;
  start_ucx();
  remote_.resize(static_cast<size_t>(size()));
  store.set(make_message(options.prefix, "/", rank()), own_card());
  for (int r = 0; r < size(); ++r) {
    if (r == rank()) continue;
    std::string card;
    try {
      card = store.get(make_message(options.prefix, "/", r),
                       std::max(milliseconds(0), std::chrono::duration_cast<milliseconds>(deadline - Clock::now())));
    } catch (const DeadlineExceededError&) {
      throw DeadlineExceededError(
          make_message(medium_.name(), " rendezvous: ", peers_.self(), " waited ", options.connect_timeout.count(),
                       " ms for ", peers_.name(r), " to publish its address (store key '", options.prefix, "/", r,
                       "'); that worker did not start, crashed, or uses another prefix; check its log and restart "
                       "the job"),
          Culprit{peers_.task(r)});
    }
    reach(r, card);
  }
  {
    ucp_request_param_t param{};
    std::lock_guard lock(ucp_mutex_);
    notice_ = ucp_tag_recv_nbx(worker_, notice_text_.data(), notice_text_.size(), kNoticeTag, kAnySender, &param);
    if (UCS_PTR_IS_ERR(notice_)) check(UCS_PTR_STATUS(notice_), "ucp_tag_recv_nbx");
  }
  remember(this);
  if (!medium_.network) {
    stop_fd_ = ::eventfd(0, EFD_CLOEXEC);
    LS_CHECK(stop_fd_ >= 0, UnavailableError, "shared-memory collectives: eventfd failed: ", std::strerror(errno));
    watcher_ = std::thread([this] { watch(); });
  }
  // The first exchange with every peer: each endpoint is wired up, and every rank is known to be here.
  barrier({0, std::max(milliseconds(1), std::chrono::duration_cast<milliseconds>(deadline - Clock::now()))});
}

void UcxCommunicator::all_reduce(void* data, size_t count, DType dtype, ReduceOp op, const CollectiveOptions& options) {
  failure_.check();
  detail::visit_reducible(dtype, medium_.network ? "network all_reduce" : "shared-memory all_reduce", [&](auto x) {
    using T = decltype(x);
    if (count == 0) return;
    if (size() > 1) {
      const Op o{"all_reduce", options, Clock::now() + options.timeout};
      const int next = (rank() + 1) % size(), prev = (rank() + size() - 1) % size();
      auto exchange = [&](size_t step, const char* out, size_t out_bytes, char* in, size_t in_bytes) {
        std::array<void*, 2> requests{};
        if (in_bytes > 0) requests[0] = post_recv(prev, in, in_bytes, message_tag(options.tag, step, prev), o);
        if (out_bytes > 0) requests[1] = post_send(next, out, out_bytes, message_tag(options.tag, step, rank()), o);
        wait(requests.data(), requests.size(), o);
      };
      thread_local std::vector<std::byte> staging;
      detail::ring_all_reduce(static_cast<char*>(data), count, sizeof(T), rank(), size(),
                              detail::reduce_function<T>(op == ReduceOp::MEAN ? ReduceOp::SUM : op), kRingPiece,
                              staging, exchange);
    }
    // Every rank divides the same bits the same way, so MEAN stays identical across ranks.
    if (op == ReduceOp::MEAN) detail::divide_elements<T>(data, count, size());
  });
}

void UcxCommunicator::broadcast(void* data, size_t bytes, int root, const CollectiveOptions& options) {
  LS_CHECK(root >= 0 && root < size(), ValueError, "broadcast root must be a rank in [0, ", size(), "), got ", root);
  failure_.check();
  if (size() == 1 || bytes == 0) return;
  const Op o{"broadcast", options, Clock::now() + options.timeout};
  std::vector<void*> requests(static_cast<size_t>(size()), nullptr);
  if (rank() == root) {
    for (int r = 0; r < size(); ++r)
      if (r != root) requests[static_cast<size_t>(r)] = post_send(r, data, bytes, message_tag(options.tag, 0, root), o);
  } else {
    requests[0] = post_recv(root, data, bytes, message_tag(options.tag, 0, root), o);
  }
  wait(requests.data(), requests.size(), o);
}

// Sends `bytes` at `mine` to every other rank and receives each rank's `bytes` at into(rank).
template <typename Into>
void UcxCommunicator::exchange_with_all(const char* kind, const CollectiveOptions& options, const void* mine,
                                        size_t bytes, Into&& into) {
  const Op o{kind, options, Clock::now() + options.timeout};
  std::vector<void*> requests;
  for (int r = 0; r < size(); ++r) {
    if (r == rank()) continue;
    requests.push_back(post_recv(r, into(r), bytes, message_tag(options.tag, 0, r), o));
    requests.push_back(post_send(r, mine, bytes, message_tag(options.tag, 0, rank()), o));
  }
  wait(requests.data(), requests.size(), o);
}

void UcxCommunicator::all_gather(const void* input, void* output, size_t bytes, const CollectiveOptions& options) {
  failure_.check();
  char* const out = static_cast<char*>(output);
  char* const mine = out + static_cast<size_t>(rank()) * bytes;
  if (bytes > 0 && mine != input) std::memmove(mine, input, bytes);
  if (size() == 1 || bytes == 0) return;
  exchange_with_all("all_gather", options, mine, bytes, [&](int r) { return out + static_cast<size_t>(r) * bytes; });
}

void UcxCommunicator::barrier(const CollectiveOptions& options) {
  failure_.check();
  if (size() == 1) return;
  char none = 0;
  exchange_with_all("barrier", options, &none, 0, [&](int) { return &none; });
}

void UcxCommunicator::check(ucs_status_t status, const char* what) const {
  if (status == UCS_OK) return;
  if (medium_.network)
    throw UnavailableError(make_message(
        "network collectives on ", peers_.self(), ": UCX ", what, " failed: ", ucs_status_string(status), " (TCP on ",
        medium_.interface.empty() ? std::string("any interface") : "interface " + medium_.interface,
        "); check that this worker's TF_CONFIG address is one of this host's and reachable from the other workers"));
  throw UnavailableError(make_message(
      "shared-memory collectives on ", peers_.self(), ": UCX ", what, " failed: ", ucs_status_string(status),
      "; the workers cannot use shared memory here: set CommunicationImplementation::RING (or "
      "LOCKSTEP_COLLECTIVE=ring) to use the network"));
}

void UcxCommunicator::start_ucx() {
  ucp_config_t* config = nullptr;
  check(ucp_config_read(nullptr, nullptr, &config), "ucp_config_read");
  // Shared memory only (no socket, no network device), or TCP only on the worker's interface, whatever UCX_TLS
  // and UCX_NET_DEVICES say.
  ucs_status_t modified = ucp_config_modify(config, "TLS", medium_.network ? "tcp" : "sm");
  if (modified == UCS_OK && !medium_.interface.empty())
    modified = ucp_config_modify(config, "NET_DEVICES", medium_.interface.c_str());
  // Over TCP every message goes eagerly (unless UCX_RNDV_THRESH says otherwise): UCX's rendezvous handshakes per
  // ring piece left a 1 Gbit/s link 40% idle.
  if (modified == UCS_OK && medium_.network && !std::getenv("UCX_RNDV_THRESH"))
    modified = ucp_config_modify(config, "RNDV_THRESH", "inf");
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_REQUEST_SIZE;
  params.features = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP;
  params.request_size = sizeof(int);  // each request's own space: the peer it is with (posted)
  ucp_context_h context = nullptr;
  const ucs_status_t initialised = modified == UCS_OK ? ucp_init(&params, config, &context) : modified;
  ucp_config_release(config);
  check(initialised, medium_.network ? "ucp_init (TCP transport)" : "ucp_init (shared-memory transports)");
  context_.reset(context, ucp_cleanup);
  ucp_worker_params_t worker{};
  worker.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE | UCP_WORKER_PARAM_FIELD_EVENTS;
  worker.thread_mode = UCS_THREAD_MODE_SERIALIZED;
  worker.events = UCP_WAKEUP_TAG_SEND | UCP_WAKEUP_TAG_RECV | UCP_WAKEUP_TX | UCP_WAKEUP_RX;
  check(ucp_worker_create(context_.get(), &worker, &worker_), "ucp_worker_create");
  if (ucp_worker_get_efd(worker_, &event_fd_) != UCS_OK) event_fd_ = -1;  // then a wait naps instead
}

// What a peer needs to reach this rank: its shared-memory domain ("network" on the network), its pid and its UCX
// address, one per line.
std::string UcxCommunicator::own_card() {
  ucp_address_t* address = nullptr;
  size_t length = 0;
  check(ucp_worker_get_address(worker_, &address, &length), "ucp_worker_get_address");
  std::string card = make_message(medium_.network ? "network" : shared_memory_domain(), "\n", ::getpid(), "\n");
  card.append(reinterpret_cast<const char*>(address), length);
  ucp_worker_release_address(worker_, address);
  return card;
}

void UcxCommunicator::reach(int r, const std::string& card) {
  const size_t domain_end = card.find('\n');
  const size_t pid_end = domain_end == std::string::npos ? std::string::npos : card.find('\n', domain_end + 1);
  LS_CHECK(pid_end != std::string::npos, DataLossError, medium_.name(), " rendezvous: ", peers_.name(r),
           " published a malformed address; it runs another lockstep version: run one version on every worker");
  Peer& peer = remote_[static_cast<size_t>(r)];
  ucp_ep_params_t params{};
  params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
  params.address = reinterpret_cast<const ucp_address_t*>(card.data() + pid_end + 1);
  if (medium_.network) {
    peer.rank = r;
    params.field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLER;
    params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    params.err_handler = {&UcxCommunicator::on_endpoint_error, &peer};
    std::lock_guard lock(ucp_mutex_);
    check(ucp_ep_create(worker_, &params, &peer.endpoint), "ucp_ep_create");
    return;
  }
  const std::string domain = card.substr(0, domain_end);
  if (domain != shared_memory_domain())
    throw UnavailableError(
        make_message("shared-memory collectives: ", peers_.name(r), " is not on the host of ", peers_.self(),
                     " as shared memory sees it (", domain, " against ", shared_memory_domain(),
                     "); use CommunicationImplementation::RING (or LOCKSTEP_COLLECTIVE=ring) across hosts"),
        Culprit{peers_.task(r)});
  peer.pid = static_cast<pid_t>(std::stol(card.substr(domain_end + 1, pid_end - domain_end - 1)));
  peer.pidfd = open_pidfd(peer.pid);
  params.err_mode = UCP_ERR_HANDLING_MODE_NONE;  // UCX 1.13 has no peer failure handling over shared memory
  std::lock_guard lock(ucp_mutex_);
  check(ucp_ep_create(worker_, &params, &peer.endpoint), "ucp_ep_create");
}

void UcxCommunicator::close_endpoints() {
  std::vector<void*> closing;
  for (Peer& p : remote_) {
    if (!p.endpoint) continue;
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    // Over shared memory no flush, as a peer may be gone (and UCX would not notice). On the network a healthy
    // communicator flushes: its protocol messages may still be on their way (a forced close leaves them on the
    // endpoint, which UCX 1.13 aborts on as it frees the worker), and a peer that is gone fails the flush.
    param.flags = medium_.network && !failure_.happened() ? 0 : UCP_EP_CLOSE_FLAG_FORCE;
    void* request = ucp_ep_close_nbx(p.endpoint, &param);
    if (request && !UCS_PTR_IS_ERR(request)) closing.push_back(request);
  }
  const auto deadline = Clock::now() + std::chrono::seconds(1);
  for (void* request : closing) {
    while (ucp_request_check_status(request) == UCS_INPROGRESS && Clock::now() < deadline) ucp_worker_progress(worker_);
    ucp_request_free(request);  // one still in progress is released by UCX when it ends, or with the worker
  }
}

void* UcxCommunicator::post_send(int peer, const void* data, size_t bytes, uint64_t tag, const Op& o) {
  ucp_request_param_t param{};
  std::lock_guard lock(ucp_mutex_);
  return posted(ucp_tag_send_nbx(remote_[static_cast<size_t>(peer)].endpoint, data, bytes, tag, &param), peer, o);
}

void* UcxCommunicator::post_recv(int peer, void* data, size_t bytes, uint64_t tag, const Op& o) {
  ucp_request_param_t param{};
  std::lock_guard lock(ucp_mutex_);
  return posted(ucp_tag_recv_nbx(worker_, data, bytes, tag, ~uint64_t{0}, &param), peer, o);
}

void* UcxCommunicator::posted(ucs_status_ptr_t request, int peer, const Op& o) {
  if (UCS_PTR_IS_ERR(request)) {
    const ucs_status_t status = UCS_PTR_STATUS(request);  // on the network: the endpoint to `peer` has failed
    failure_.raise(medium_.network ? lost_connection(peer, status) : transport_failure(o, status));
  }
  if (request) *static_cast<int*>(request) = peer;  // so that a failed request names its peer
  return request;                                   // null: done already
}

Failure UcxCommunicator::transport_failure(const Op& o, ucs_status_t status) const {
  return {Failure::unavailable,
          make_message(op_name(o), " failed in UCX: ", ucs_status_string(status), "; the job failed; restart it")};
}

std::string UcxCommunicator::op_name(const Op& o) const {
  return make_message(medium_.name(), " ", o.kind, " (tag ", o.options.tag, ") on ", peers_.self(), " of ", size());
}

// Progresses UCX until every request is done (each set to null as it completes). The wait adapts: over shared
// memory, once a message of the collective has moved, the peers are in it too and it polls to the end; until
// then it polls kSpin and then sleeps on UCX's event descriptor, leaving the core to a peer still computing
// (sleeping between the ring's steps would add a wake-up to each). On the network it sleeps whenever nothing
// has moved for kSpin. Throws on the deadline, a transport error or a
// failure another thread recorded, after cancelling the requests still in flight (the communicator is broken by
// then and progresses UCX only to close its endpoints).
void UcxCommunicator::wait(void** requests, size_t n, const Op& o) {
  try {
    wait_for_all(requests, n, o);
  } catch (const Error& e) {
    std::lock_guard lock(ucp_mutex_);
    for (size_t i = 0; i < n; ++i) {
      if (!requests[i]) continue;
      ucp_request_cancel(worker_, requests[i]);
      ucp_request_free(requests[i]);
      abandoned_ = true;
    }
    tell_peers(e.what());
    throw;
  }
}

void UcxCommunicator::wait_for_all(void** requests, size_t n, const Op& o) {
  auto last_moved = Clock::now();
  for (;;) {
    bool pending = false, errored = false;
    {
      std::lock_guard lock(ucp_mutex_);
      if (!failure_.happened()) {
        while (ucp_worker_progress(worker_) != 0) o.moved = true;
      }
      check_notice();
      for (size_t i = 0; i < n; ++i) {
        if (!requests[i]) continue;
        const ucs_status_t status = ucp_request_check_status(requests[i]);
        if (status == UCS_INPROGRESS) {
          pending = true;
          continue;
        }
        const int peer = peer_of(requests[i]);
        ucp_request_free(requests[i]);
        requests[i] = nullptr;
        o.moved = true;
        if (status != UCS_OK) {
          check_broken();  // the network: the broken connection UCX reported, named
          if (medium_.network) failure_.record(lost_connection(peer, status));  // else the one this request was with
          const int gone = exited_peer(milliseconds(500));  // a transfer from a process that died fails so
          failure_.record(gone >= 0 ? peer_exited(gone) : transport_failure(o, status));
          errored = true;
        }
      }
    }
    if (!pending && !errored) return;  // a peer may exit once it has its data: the next collective tells
    {
      // A broken connection fails this collective only while it waits for that peer: a peer may close after its
      // last collective while this one goes on without it (a broadcast whose sender is done).
      std::lock_guard lock(ucp_mutex_);
      for (size_t i = 0; i < n; ++i) {
        if (!requests[i]) continue;
        const int peer = peer_of(requests[i]);
        const ucs_status_t broken = remote_[static_cast<size_t>(peer)].broken;
        if (broken == UCS_OK) continue;
        failure_.record(lost_connection(peer, broken));
        break;
      }
    }
    failure_.check();
    const auto now = Clock::now();
    if (now >= o.deadline) failure_.raise(detail::timed_out(op_name(o), o.options.timeout));
    // On the network, where a step waits for the wire, a wait polls only while messages move and sleeps once none
    // has for kSpin: four workers polling on two cores halved what a 1 Gbit/s link carried.
    if (medium_.network && o.moved) {
      last_moved = now;
      o.moved = false;
    }
    if (o.moved || now - last_moved < kSpin) continue;
    sleep_until_event();
  }
}

void UcxCommunicator::sleep_until_event() {
  if (event_fd_ < 0) {
    std::this_thread::sleep_for(std::chrono::microseconds(50));
    return;
  }
  ucs_status_t armed;
  {
    std::lock_guard lock(ucp_mutex_);
    armed = ucp_worker_arm(worker_);
  }
  if (armed != UCS_OK) return;  // UCS_ERR_BUSY: events are waiting
  pollfd ready{event_fd_, POLLIN, 0};
  ::poll(&ready, 1, kSleepMs);
}

// A peer's communicator broke and said why: so is this one (caller holds ucp_mutex_).
void UcxCommunicator::check_notice() {
  if (!notice_ || UCS_PTR_IS_ERR(notice_)) return;
  ucp_tag_recv_info_t info{};
  if (ucp_tag_recv_request_test(notice_, &info) == UCS_INPROGRESS) return;
  ucp_request_free(notice_);
  notice_ = nullptr;
  const int sender = static_cast<int>(info.sender_tag & 0xffff);
  told_ = true;  // the peer has told the others itself
  failure_.record(
      {Failure::unavailable,
       make_message(medium_.name(), " collectives on ", peers_.self(), " of ", size(), ": ", peers_.name(sender),
                    " failed: ", std::string(notice_text_.data(), std::min(info.length, notice_text_.size())))});
}

// Sends every peer this communicator's failure, once, without waiting for it: each peer's next wait fails too,
// as gloo's peers do when a broken communicator closes its connections (caller holds ucp_mutex_). The sends
// complete as UCX progresses; the destructor finishes them.
void UcxCommunicator::tell_peers(const std::string& message) {
  if (told_) return;
  told_ = true;
  notice_sent_ = message.substr(0, kNoticeBytes);
  for (int r = 0; r < size(); ++r) {
    if (r == rank()) continue;
    ucp_request_param_t param{};
    void* request = ucp_tag_send_nbx(remote_[static_cast<size_t>(r)].endpoint, notice_sent_.data(), notice_sent_.size(),
                                     message_tag(0xffffffffu, 0xffff, rank()), &param);
    if (request && !UCS_PTR_IS_ERR(request)) notice_sends_.push_back(request);
  }
  ucp_worker_progress(worker_);
}

}  // namespace lockstep::distribute::detail
