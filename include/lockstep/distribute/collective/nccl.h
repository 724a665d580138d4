// The NCCL collective backend, for workers with one GPU each: NCCL's rings and trees over NVLink, PCIe or the
// network, its communicator bootstrapped through the coordination service's KeyValueStore (rank 0's
// ncclUniqueId), as TF's CommunicationImplementation::NCCL. Buffers may be GPU memory (reduced where they are) or
// host memory (copied to the GPU and back), so every Communicator user works unchanged.
#pragma once
#include <memory>

#include "lockstep/distribute/collective/communicator.h"

namespace lockstep::distribute {

struct NcclOptions : RendezvousOptions {
  NcclOptions() { prefix = "nccl"; }
  int device = 0;  // this rank's GPU ("/gpu:N"); NCCL refuses two ranks on one GPU
};

// Whether this build has NCCL (a CUDA build); make_nccl_communicator throws FailedPreconditionError otherwise.
bool nccl_available();

// Connects rank `rank` of `size` on GPU options.device; blocks until all ranks have joined, at most
// connect_timeout (then DeadlineExceededError). NCCL's own failures (two ranks on one GPU, a peer that cannot be
// reached) throw UnavailableError naming the call, with "try CommunicationImplementation::RING" as the fix.
//
// Each collective waits for its result (polling the GPU's stream), at most CollectiveOptions.timeout: then the
// communicator is aborted and DeadlineExceededError thrown; a peer's failure that NCCL reports aborts it too. A
// broken communicator throws the same error from every later call. Collectives from several threads are
// serialised; every rank must issue them in the same order.
std::unique_ptr<Communicator> make_nccl_communicator(KeyValueStore& store, int rank, int size,
                                                     const NcclOptions& options);

}  // namespace lockstep::distribute
