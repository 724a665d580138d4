// The MPI collective backend (OpenMPI): for jobs started by mpirun or srun --mpi=pmix, one rank per worker,
// with MPI's own non-blocking collectives (the engine HPC clusters tune for their network) instead of gloo.
// Also the process-wide MPI runtime: MPI is initialised only in a process an MPI launcher started.
#pragma once
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "lockstep/distribute/collective/communicator.h"

namespace lockstep::distribute {

// True when an MPI launcher started this process: OMPI_COMM_WORLD_SIZE (OpenMPI's mpirun), PMIX_RANK (srun
// --mpi=pmix, mpirun) or PMI_RANK (srun --mpi=pmi2, MPICH's hydra) is set, and LOCKSTEP_USE_MPI is not "0".
// Reads the environment only; a plain `lockstep train` never touches MPI.
bool launched_by_mpi();

// Initialises MPI once per process with MPI_THREAD_MULTIPLE and finalises it at exit (unless the
// application initialised MPI itself). Returns this process's rank and the size of MPI_COMM_WORLD.
// ValueError when launched_by_mpi() is false; UnavailableError when MPI gives less than
// MPI_THREAD_MULTIPLE. Called by make_mpi_communicator and MPIClusterResolver; calling it first is harmless.
struct MPIWorld {
  int rank = 0;
  int size = 1;
};
MPIWorld initialize_mpi();

struct MPIOptions {
  // Per rank, e.g. "worker:1 at host:port", for error messages; empty: "rank N".
  std::vector<std::string> peer_names;
  // How long creating the communicator may wait for the other ranks (it is collective).
  std::chrono::milliseconds connect_timeout{std::chrono::seconds(120)};
};

// A communicator over all ranks of MPI_COMM_WORLD (initialising MPI if needed); every rank must call it at
// the same point, as it duplicates MPI_COMM_WORLD (a collective). Its rank and size are MPI's.
//
// Matching: MPI matches the collectives of one communicator in the order they are issued, where gloo
// matches them by tag. So each tag gets a communicator of its own, duplicated from this one at the tag's
// first collective: collectives of one tag are issued in the same order on every rank (the Communicator
// contract), so matching per tag is what gloo gives, and collectives of different tags may run at once
// from different threads. Those duplications are themselves matched in issue order, so the first
// collective of each new tag must come in the same order on every rank (the strategy's do: tag 0 at start,
// the input tag before each step, buckets in backward order, metrics after). Each new communicator checks
// that every rank made it for the same tag: one that breaks the rule fails with InvalidArgumentError naming
// both tags instead of collectives crossing silently.
//
// Results: from 64 KiB on, all_reduce is a ring (reduce-scatter, then all-gather) over MPI's point-to-point
// messages, with lockstep's reduction rules: each rank sends and receives 2(n-1)/n of the buffer, where
// OpenMPI's non-blocking MPI_Iallreduce reduces to one rank and broadcasts back for 2-3 ranks, and OpenMPI's
// shared-memory transport moves each large message in one copy between the processes. Each segment is
// reduced once, on one rank, and copied to the others. Smaller buffers go through MPI_Iallreduce, with
// MPI_SUM/MAX/MIN where MPI's own rule equals lockstep's and lockstep's rules as user operations otherwise
// (bfloat16 through float32; a NaN wins MAX and MIN); its algorithms likewise reduce each element on one rank
// or keep the order of operations on every rank. Either way every rank ends with bitwise the same result.
//
// Errors: every wait polls MPI_Testall until CollectiveOptions.timeout (connect_timeout when creating), then
// throws DeadlineExceededError naming the collective, tag and timeout. MPI cannot cancel a collective, so
// the communicator is then broken: every later call throws the same error at once, the buffer of the
// collective that timed out must stay valid until the process ends, this process cannot create another
// MPI communicator, and it skips MPI_Finalize at exit (mpirun then reports it as failed, which ends the
// job). A dead peer ends the whole job through mpirun; the coordination service names it.
//
// Thread-safety: collectives with distinct tags may run at once from different threads; two in flight
// with the same tag are undefined (as for gloo). Counts above 2^31 - 1 elements are split into several
// MPI calls; all_gather takes at most 2^31 - 1 bytes per rank.
std::unique_ptr<Communicator> make_mpi_communicator(const MPIOptions& options = {});

}  // namespace lockstep::distribute
