// The network backend (network.h): the UCX engine (ucx-impl.h) on UCX's TCP transport, on the interface of the
// worker's own address, with UCX's peer failure handling: a broken connection fails the collective in flight and
// names the peer.
#include "lockstep/distribute/collective/network.h"

#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>

#include <cstring>

#include "ucx-impl.h"

namespace lockstep::distribute {
namespace detail {
namespace {

// Whether two socket addresses hold the same IP address.
bool same_ip(const sockaddr* a, const sockaddr* b) {
  if (a->sa_family != b->sa_family) return false;
  if (a->sa_family == AF_INET)
    return reinterpret_cast<const sockaddr_in*>(a)->sin_addr.s_addr ==
           reinterpret_cast<const sockaddr_in*>(b)->sin_addr.s_addr;
  if (a->sa_family == AF_INET6)
    return std::memcmp(&reinterpret_cast<const sockaddr_in6*>(a)->sin6_addr,
                       &reinterpret_cast<const sockaddr_in6*>(b)->sin6_addr, sizeof(in6_addr)) == 0;
  return false;
}

// The network interface of this host that holds `hostname`'s address ("lo" for 127.0.0.1), or "" if none does.
std::string interface_of(const std::string& hostname) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* addresses = nullptr;
  if (::getaddrinfo(hostname.c_str(), nullptr, &hints, &addresses) != 0) return "";
  ifaddrs* interfaces = nullptr;
  std::string name;
  if (::getifaddrs(&interfaces) == 0) {
    for (const addrinfo* a = addresses; a && name.empty(); a = a->ai_next)
      for (const ifaddrs* i = interfaces; i && name.empty(); i = i->ifa_next)
        if (i->ifa_addr && same_ip(a->ai_addr, i->ifa_addr)) name = i->ifa_name;
    ::freeifaddrs(interfaces);
  }
  ::freeaddrinfo(addresses);
  return name;
}

}  // namespace

// UCX's report, from inside ucp_worker_progress (ucp_mutex_ held), that the connection to a peer broke. It is
// kept until the progress call returns: a notice the peer sent before it closed (its own failure, which names
// the cause) arrives in the same call and comes first (check_broken).
void UcxCommunicator::on_endpoint_error(void* arg, ucp_ep_h, ucs_status_t status) {
  Peer& peer = *static_cast<Peer*>(arg);
  if (peer.broken == UCS_OK) peer.broken = status;
}

// The first peer whose connection broke, as a failure (caller holds ucp_mutex_, after check_notice).
void UcxCommunicator::check_broken() {
  for (const Peer& p : remote_) {
    if (p.broken == UCS_OK) continue;
    failure_.record(lost_connection(p.rank, p.broken));
    return;
  }
}

Failure UcxCommunicator::lost_connection(int r, ucs_status_t status) const {
  return {Failure::unavailable,
          make_message("network collectives on ", peers_.self(), " of ", size(), " lost its connection to ",
                       peers_.name(r), " (UCX: ", ucs_status_string(status),
                       "): that worker exited or its host is unreachable; the job failed; restart it "
                       "(lockstep launch --max-restarts)"),
          peers_.task(r)};
}

}  // namespace detail

std::unique_ptr<Communicator> make_network_communicator(KeyValueStore& store, int rank, int size,
                                                        const NetworkOptions& options) {
  LS_CHECK(size >= 1 && size < (1 << 16), ValueError, "network communicator size must be in [1, 65535], got ", size);
  detail::check_rendezvous(options, rank, size, "NetworkOptions");
  auto communicator = std::make_unique<detail::UcxCommunicator>(
      rank, size, options, detail::UcxCommunicator::Medium{true, detail::interface_of(options.hostname)});
  communicator->connect(store, options);
  return communicator;
}

}  // namespace lockstep::distribute
