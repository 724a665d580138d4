// The backend registry: the cross-worker collective backends in one table (backends.cc), each with its name, whether
// this build and process can use it, which clusters it fits and how it connects, and the one place that picks among
// them for a request, LOCKSTEP_COLLECTIVE and the cluster.
#pragma once
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "lockstep/distribute/collective/communicator.h"
#include "lockstep/tensor/tensor.h"

namespace lockstep::distribute {

// tf.distribute.experimental.CommunicationImplementation: the backend a strategy asks for. MPI (a lockstep
// extension): OpenMPI's collectives, for jobs started by mpirun or srun --mpi=pmix.
enum class CommunicationImplementation { AUTO, RING, NCCL, MPI };

// A worker's view of the cluster, for the backends' rendezvous: every training task in job order, and this one's
// rank among them.
struct BackendCluster {
  KeyValueStore* store = nullptr;  // the coordination service's
  int rank = 0;
  std::vector<std::string> tasks;      // "worker:1"
  std::vector<std::string> addresses;  // "host:port", as TF_CONFIG gives them
  Device device;                       // this worker's: GPUs may reduce over NCCL
  std::chrono::milliseconds connect_timeout{0};
};

// The communicator between the workers, and whether it takes the replicas' GPU memory as it is (NCCL) rather
// than host copies.
struct CrossWorker {
  std::unique_ptr<Communicator> communicator;
  bool takes_device_memory = false;
};

// The request once the environment has had its say: AUTO becomes what LOCKSTEP_COLLECTIVE says (auto, or a
// backend's name that it takes), else MPI under an MPI launcher, and otherwise stays AUTO for
// connect_cross_worker to settle. ValueError for a value the variable does not take, or MPI without an MPI launcher.
CommunicationImplementation choose_collective(CommunicationImplementation requested);

// Connects this worker to the others over the backend that `requested` (choose_collective's answer) and the
// cluster pick, and logs which: MPI for MPI; for GPU workers (not RING) NCCL when each has a GPU of its own; then,
// on host memory, the network for RING or when every worker has a host of its own (gloo in its place when
// LOCKSTEP_COLLECTIVE=gloo), shared memory when all share one host, and shared memory inside hosts with the network
// between them otherwise. Only AUTO asks where the workers are (through the store); other requests see one host.
CrossWorker connect_cross_worker(const BackendCluster& cluster, CommunicationImplementation requested);

}  // namespace lockstep::distribute
