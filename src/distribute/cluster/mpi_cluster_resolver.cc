// MPIClusterResolver: the cluster of a job an MPI launcher started, from MPI's rank and size, with every
// rank's "host:port" gathered over MPI (each rank picks a free port on its own host).
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "cluster-impl.h"
#include "lockstep/distribute/cluster/cluster_resolver.h"
#include "lockstep/distribute/collective/mpi.h"

namespace lockstep::distribute {

using cluster_impl::fail;
using cluster_impl::quote;

namespace {

// What each rank tells the others: LOCKSTEP_HOST (or empty), its host name, and its port; fixed-size fields.
constexpr size_t kField = 256;
constexpr size_t kSlot = 3 * kField;

// A socket bound to a free port on every interface, held until all ranks have chosen, so that ranks on one
// host cannot pick the same port; rank 0's service binds it again once it is closed.
class PortReservation {
 public:
  PortReservation() : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_ANY);
    socklen_t length = sizeof address;
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length) != 0)
      throw UnavailableError(make_message("MPI cluster: cannot reserve a free TCP port on this host (",
                                          std::strerror(errno), "); set TF_CONFIG to choose the addresses"));
    port_ = ntohs(address.sin_port);
  }
  ~PortReservation() {
    if (fd_ >= 0) ::close(fd_);
  }
  PortReservation(const PortReservation&) = delete;
  PortReservation& operator=(const PortReservation&) = delete;
  int port() const { return port_; }

 private:
  int fd_;
  int port_ = 0;
};

void put(char* field, const std::string& value) {
  std::memcpy(field, value.data(), std::min(value.size(), kField - 1));
}

std::string get(const char* field) {
  return std::string(field, strnlen(field, kField));
}

}  // namespace

MPIClusterResolver::MPIClusterResolver(std::chrono::milliseconds timeout) {
  MPIOptions options;
  options.connect_timeout = timeout;
  std::unique_ptr<Communicator> comm = make_mpi_communicator(options);
  task_id_ = comm->rank();
  const size_t size = static_cast<size_t>(comm->size());

  const char* chosen = std::getenv("LOCKSTEP_HOST");
  if (chosen && std::strlen(chosen) >= kField)
    fail("LOCKSTEP_HOST ", quote(chosen), " is longer than ", kField - 1, " characters: set it to a host name or IP");
  char hostname[kField] = {};
  if (::gethostname(hostname, sizeof hostname - 1) != 0) std::strcpy(hostname, "localhost");

  const PortReservation reservation;
  std::vector<char> mine(kSlot, '\0'), all(kSlot * size, '\0');
  put(mine.data(), chosen ? chosen : "");
  put(mine.data() + kField, hostname);
  put(mine.data() + 2 * kField, std::to_string(reservation.port()));
  comm->all_gather(mine.data(), all.data(), kSlot, {0, timeout});

  bool one_machine = true;
  for (size_t r = 0; r < size; ++r) one_machine = one_machine && get(all.data() + r * kSlot + kField) == hostname;
  std::vector<std::string> addresses;
  for (size_t r = 0; r < size; ++r) {
    const char* slot = all.data() + r * kSlot;
    std::string host = get(slot);
    if (host.empty()) host = one_machine ? "127.0.0.1" : get(slot + kField);
    addresses.push_back(host + ":" + get(slot + 2 * kField));
  }
  spec_ = ClusterSpec({{"worker", addresses}});
  validate_cluster(spec_, "worker", task_id_, "MPI (host names from LOCKSTEP_HOST or gethostname)");
}

}  // namespace lockstep::distribute
