// The backend registry: one entry per cross-worker backend (its name, whether it can be used here, which clusters it
// fits, how it connects), the choice among them, and the facts about the cluster that the choice asks the store.
#include "lockstep/distribute/collective/backends.h"

#include <algorithm>
#include <cstdlib>
#include <numeric>
#include <optional>
#include <string_view>

#include "lockstep/core/logging.h"
#include "lockstep/distribute/collective/gloo.h"
#include "lockstep/distribute/collective/hierarchical.h"
#include "lockstep/distribute/collective/mpi.h"
#include "lockstep/distribute/collective/nccl.h"
#include "lockstep/distribute/collective/network.h"
#include "lockstep/distribute/collective/shared_memory.h"
#include "lockstep/kernels/cuda/runtime.h"

namespace lockstep::distribute {
namespace {

using enum CommunicationImplementation;

// Some of the workers (`ranks`, in job order) that one communicator joins: this worker is `rank` among them, and
// the keys of their rendezvous start with `prefix`.
struct Group {
  const BackendCluster& cluster;
  std::vector<int> ranks;
  int rank = 0;
  std::string prefix;
  int size() const { return static_cast<int>(ranks.size()); }
};

// The facts about the cluster that the choice needs and only the store knows, each asked when first needed: every
// worker asks the same ones in the same order.
class Survey {
 public:
  Survey(const BackendCluster& cluster, CommunicationImplementation requested)
      : cluster_(cluster), requested_(requested) {}

  // The host of every worker as shared memory sees it (shared_memory_domain()): hosts numbered 0, 1, ... in the
  // order of their first worker. Only AUTO asks; under another request every worker counts as on host 0.
  const std::vector<int>& host_of() {
    if (!host_of_) host_of_ = requested_ == AUTO ? ask_hosts() : std::vector<int>(static_cast<size_t>(size()), 0);
    return *host_of_;
  }
  int hosts() { return *std::max_element(host_of().begin(), host_of().end()) + 1; }
  int size() const { return static_cast<int>(cluster_.tasks.size()); }
  const BackendCluster& cluster() const { return cluster_; }

 private:
  std::vector<int> ask_hosts() const {
    KeyValueStore& store = *cluster_.store;
    store.set(make_message("domain/", cluster_.rank), shared_memory_domain());
    std::vector<std::string> domains;
    std::vector<int> host_of;
    for (int r = 0; r < size(); ++r) {
      const std::string domain =
          r == cluster_.rank ? shared_memory_domain() : store.get(make_message("domain/", r), cluster_.connect_timeout);
      const auto known = std::find(domains.begin(), domains.end(), domain);
      host_of.push_back(static_cast<int>(known - domains.begin()));
      if (known == domains.end()) domains.push_back(domain);
    }
    return host_of;
  }

  const BackendCluster& cluster_;
  const CommunicationImplementation requested_;
  std::optional<std::vector<int>> host_of_;
};

// The group's peers named as the cluster names them ("worker:1 at host:port"), for the rendezvous' messages.
void name_peers(const Group& g, RendezvousOptions& options) {
  for (int r : g.ranks) {
    const size_t i = static_cast<size_t>(r);
    options.peer_names.push_back(g.cluster.tasks[i] + " at " + g.cluster.addresses[i]);
    options.peer_tasks.push_back(g.cluster.tasks[i]);
  }
  options.connect_timeout = g.cluster.connect_timeout;
}

// This worker's host as its address gives it ("[::1]:80" gives ::1): the interface the network backends use.
std::string own_host(const BackendCluster& c) {
  const std::string& own = c.addresses[static_cast<size_t>(c.rank)];
  return own.front() == '[' ? own.substr(1, own.find(']') - 1) : own.substr(0, own.rfind(':'));
}

std::unique_ptr<Communicator> connect_network(const Group& g) {
  NetworkOptions n;
  n.hostname = own_host(g.cluster);
  n.prefix = g.prefix;
  name_peers(g, n);
  return make_network_communicator(*g.cluster.store, g.rank, g.size(), n);
}

std::unique_ptr<Communicator> connect_gloo(const Group& g) {
  GlooOptions o;
  o.hostname = own_host(g.cluster);
  o.prefix = "gloo-" + g.prefix;
  name_peers(g, o);
  return make_gloo_communicator(*g.cluster.store, g.rank, g.size(), o);
}

std::unique_ptr<Communicator> connect_mpi(const Group& g) {
  MPIOptions m;
  for (int r : g.ranks)
    m.peer_names.push_back(g.cluster.tasks[static_cast<size_t>(r)] + " at " +
                           g.cluster.addresses[static_cast<size_t>(r)]);
  m.connect_timeout = g.cluster.connect_timeout;
  return make_mpi_communicator(m);
}

// Whether every worker has a GPU of its own (NCCL refuses two ranks on one GPU): each publishes its GPU's UUID.
bool one_gpu_per_worker(Survey& survey) {
  const BackendCluster& c = survey.cluster();
#if LOCKSTEP_WITH_CUDA
  const std::string mine = kernels::cuda::device_uuid(c.device.index);
#else
  const std::string mine = c.device.str();
#endif
  c.store->set(make_message("gpu/", c.rank), mine);
  std::vector<std::string> seen;
  for (int r = 0; r < survey.size(); ++r) {
    const std::string gpu = r == c.rank ? mine : c.store->get(make_message("gpu/", r), c.connect_timeout);
    if (std::find(seen.begin(), seen.end(), gpu) != seen.end()) return false;
    seen.push_back(gpu);
  }
  return true;
}

std::unique_ptr<Communicator> connect_nccl(const Group& g) {
  NcclOptions n;
  n.device = g.cluster.device.index;
  name_peers(g, n);
  return make_nccl_communicator(*g.cluster.store, g.rank, g.size(), n);
}

std::unique_ptr<Communicator> connect_shared_memory(const Group& g) {
  SharedMemoryOptions m;
  m.prefix = g.prefix;
  name_peers(g, m);
  return make_shared_memory_communicator(*g.cluster.store, g.rank, g.size(), m);
}

struct Backend {
  const char* name;   // as LOCKSTEP_COLLECTIVE and CommunicationImplementation spell it
  const char* shown;  // as the log line at start names it
  // What LOCKSTEP_COLLECTIVE=<name> asks for in place of AUTO; nullopt where the variable does not take the name.
  std::optional<CommunicationImplementation> from_env;
  bool (*usable)();       // whether this build has it (compiled in) and this process can use it
  bool (*fits)(Survey&);  // whether it can carry this cluster's collectives (may ask the store)
  std::unique_ptr<Communicator> (*connect)(const Group&);
};

bool always() {
  return true;
}
bool anywhere(Survey&) {
  return true;
}

// In the order LOCKSTEP_COLLECTIVE's error lists them.
const Backend kBackends[] = {
    {"ring", "UCX over TCP", RING, always, anywhere, connect_network},
    {"gloo", "gloo (TCP)", RING, always, anywhere, connect_gloo},
    {"mpi", "MPI", MPI, launched_by_mpi, anywhere, connect_mpi},
    {"nccl", "NCCL", std::nullopt, nccl_available, one_gpu_per_worker, connect_nccl},
    {"shared_memory", "shared memory (UCX)", std::nullopt, always, [](Survey& s) { return s.hosts() == 1; },
     connect_shared_memory},
};

const Backend& backend(std::string_view name) {
  return *std::find_if(std::begin(kBackends), std::end(kBackends), [&](const Backend& b) { return b.name == name; });
}

// The backend LOCKSTEP_COLLECTIVE names, or null when it is unset, "auto" or not a name it takes.
const Backend* backend_from_env() {
  const char* v = std::getenv("LOCKSTEP_COLLECTIVE");
  if (!v) return nullptr;
  for (const Backend& b : kBackends)
    if (b.from_env && std::string_view(v) == b.name) return &b;
  return nullptr;
}

// "ring, gloo or mpi": the backends' names that LOCKSTEP_COLLECTIVE takes.
std::string env_names() {
  std::vector<const char*> names;
  for (const Backend& b : kBackends)
    if (b.from_env) names.push_back(b.name);
  std::string text;
  for (size_t i = 0; i < names.size(); ++i)
    text += make_message(i == 0 ? "" : i + 1 == names.size() ? " or " : ", ", names[i]);
  return text;
}

// The engine between hosts, and RING's: the network backend, or the one LOCKSTEP_COLLECTIVE names in its place
// (gloo).
const Backend& network_backend() {
  const Backend* asked = backend_from_env();
  return asked && asked->from_env == RING ? *asked : backend("ring");
}

// Text from the environment, cut short enough to quote in a one-line error.
std::string shorten(const std::string& text) {
  return text.size() > 24 ? text.substr(0, 20) + "..." : text;
}

CrossWorker connect_mpi_world(const BackendCluster& cluster, const std::vector<int>& everyone) {
  const Backend& mpi = backend("mpi");
  std::unique_ptr<Communicator> c = mpi.connect({cluster, everyone, cluster.rank, ""});
  // MPI numbers the ranks itself: they must be the cluster's, or gradients would meet the wrong peers.
  const int size = static_cast<int>(everyone.size());
  LS_CHECK(c->rank() == cluster.rank && c->size() == size, ValueError, "MPI made this process rank ", c->rank(), " of ",
           c->size(), " but the cluster (", cluster.tasks[static_cast<size_t>(cluster.rank)], ") makes it rank ",
           cluster.rank, " of ", size,
           ": under mpirun leave TF_CONFIG unset (the MPI resolver uses MPI's ranks), or set LOCKSTEP_COLLECTIVE=ring");
  log(LogLevel::info, "collective backend: ", mpi.shown);
  return {std::move(c)};
}

// Host memory: the network alone, shared memory alone, or shared memory inside each host and the network between
// the hosts' first workers.
CrossWorker connect_hosts(Survey& survey, const BackendCluster& cluster, CommunicationImplementation requested,
                          const std::vector<int>& everyone) {
  const Backend& network = network_backend();
  const Backend& shared_memory = backend("shared_memory");
  const int size = survey.size(), hosts = survey.hosts();
  if (requested == RING || hosts == size) {
    CrossWorker cross{network.connect({cluster, everyone, cluster.rank, "net"})};
    log(LogLevel::info, "collective backend: ", network.shown, ", ",
        &network != &backend("ring") ? make_message("as LOCKSTEP_COLLECTIVE=", network.name, " asks")
        : requested == RING          ? std::string("as CommunicationImplementation::RING asks")
                                     : std::string("every worker on a host of its own"));
    return cross;
  }
  if (shared_memory.fits(survey)) {
    CrossWorker cross{shared_memory.connect({cluster, everyone, cluster.rank, "shm"})};
    log(LogLevel::info, "collective backend: ", shared_memory.shown, ", all ", size, " workers on one host");
    return cross;
  }
  const std::vector<int>& host_of = survey.host_of();
  const int host = host_of[static_cast<size_t>(cluster.rank)];
  std::vector<int> mine, leaders;
  for (int r = 0; r < size; ++r) {
    if (host_of[static_cast<size_t>(r)] == host) mine.push_back(r);
    if (std::find(host_of.begin(), host_of.begin() + r, host_of[static_cast<size_t>(r)]) == host_of.begin() + r)
      leaders.push_back(r);
  }
  const int local_rank = static_cast<int>(std::find(mine.begin(), mine.end(), cluster.rank) - mine.begin());
  auto local = shared_memory.connect({cluster, mine, local_rank, make_message("shm/", host)});
  auto between = local_rank == 0 ? network.connect({cluster, leaders, host, "net-leaders"}) : nullptr;
  CrossWorker cross{make_hierarchical_communicator(cluster.rank, host_of, std::move(local), std::move(between))};
  log(LogLevel::info, "collective backend: ", shared_memory.shown, " inside each of ", hosts, " hosts, ", network.shown,
      " between them");
  return cross;
}

}  // namespace

CommunicationImplementation choose_collective(CommunicationImplementation requested) {
  if (const char* v = std::getenv("LOCKSTEP_COLLECTIVE")) {
    const std::string value = v;
    const Backend* named = backend_from_env();
    LS_CHECK(value == "auto" || named, ValueError, "LOCKSTEP_COLLECTIVE='", shorten(value),
             "' is not a collective backend: set it to auto, ", env_names(), ", or unset it");
    if (requested == AUTO && named) requested = *named->from_env;
  }
  const Backend& mpi = backend("mpi");
  if (requested == AUTO && mpi.usable()) return MPI;
  if (requested == MPI)
    LS_CHECK(mpi.usable(), ValueError,
             "the MPI collective backend needs a job started by mpirun or srun "
             "--mpi=pmix (none of OMPI_COMM_WORLD_SIZE, PMIX_RANK, PMI_RANK is set, or LOCKSTEP_USE_MPI=0): start "
             "it with mpirun -np N, or use AUTO or RING");
  return requested;
}

CrossWorker connect_cross_worker(const BackendCluster& cluster, CommunicationImplementation requested) {
  std::vector<int> everyone(cluster.tasks.size());
  std::iota(everyone.begin(), everyone.end(), 0);
  if (requested == MPI) return connect_mpi_world(cluster, everyone);
  Survey survey(cluster, requested);
  // GPU workers: NCCL when each has a GPU of its own (TF's AUTO picks NCCL for GPUs), else the host backends on
  // host copies of the gradients. (A GPU device exists only in a build that has NCCL.)
  const Backend& nccl = backend("nccl");
  if (cluster.device.is_gpu() && requested != RING && nccl.usable()) {
    const bool own_gpus = nccl.fits(survey);
    LS_CHECK(own_gpus || requested != NCCL, ValueError,
             "CommunicationImplementation::NCCL needs a GPU per worker, but some workers share one: give each "
             "worker its own GPU (CUDA_VISIBLE_DEVICES), or use RING");
    if (own_gpus) {
      CrossWorker cross{nccl.connect({cluster, everyone, cluster.rank, "nccl"}), true};
      log(LogLevel::info, "collective backend: ", nccl.shown, ", one GPU per worker");
      return cross;
    }
    log(LogLevel::info, "workers share a GPU, which NCCL cannot use: gradients are reduced as host copies");
  }
  return connect_hosts(survey, cluster, requested, everyone);
}

}  // namespace lockstep::distribute
