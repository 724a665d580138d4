// The shared-memory collective backend, for workers that share a host: UCX's point-to-point messages over its
// shared-memory transports only (shared segments, and cross-memory attach for large messages: one copy, straight
// from one process to the other), the ring all-reduce of the MPI backend, and the rendezvous (each worker's UCX
// address) through the coordination service's KeyValueStore. No socket is opened.
#pragma once
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "lockstep/distribute/collective/communicator.h"

namespace lockstep::distribute {

// What shared memory can reach from this process: the boot, the IPC, PID and network namespaces, and /dev/shm.
// Two processes with the same value share a host for the shared-memory backend; processes in different network
// namespaces (the simulated hosts of docs/scaling.md) do not, so that they keep talking over their network.
std::string shared_memory_domain();

struct SharedMemoryOptions : RendezvousOptions {
  SharedMemoryOptions() { prefix = "shm"; }
};

// Connects rank `rank` of `size` to the others, which must all have this process's shared_memory_domain() (else
// UnavailableError naming the first that has not); blocks until all of them have called it (or until
// connect_timeout: DeadlineExceededError naming a rank that did not come).
//
// Errors: a collective that runs past CollectiveOptions.timeout throws DeadlineExceededError; a peer process that
// exits makes the collective in flight (at once: a thread waits on every peer's pidfd) or the next one throw
// UnavailableError naming it, with that peer's task as its culprit(). Either way the communicator is broken and
// every later call throws the same error at once. Build a new one (new prefix) to go on.
//
// Waiting: once a message of a collective has moved (its peers are in it too), it polls to the end; before that it
// polls for 100 µs, then sleeps on UCX's event file descriptor, leaving the core to a peer still computing.
//
// Thread-safety: collectives with distinct tags may run at once from different threads (messages are matched
// by tag); two in flight with the same tag are undefined.
std::unique_ptr<Communicator> make_shared_memory_communicator(KeyValueStore& store, int rank, int size,
                                                              const SharedMemoryOptions& options);

}  // namespace lockstep::distribute
