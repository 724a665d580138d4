// The network collective backend, for workers on different hosts (and RING): UCX's point-to-point messages over its
// TCP transport, the ring all-reduce of the MPI backend, and the rendezvous (each worker's UCX address) through
// the coordination service's KeyValueStore. It is the shared-memory backend's engine with the network in place of
// shared memory (one engine, ucx_engine.cc).
//
// Stray connections: each worker listens on one TCP port, UCX's, which speaks first with a handshake (a magic
// number, then the peer's address): a connection that sends anything else, nothing, or closes is dropped by UCX,
// and the port keeps listening, so port scans and stray clients during the rendezvous do not break it.
#pragma once
#include <memory>
#include <string>

#include "lockstep/distribute/collective/communicator.h"

namespace lockstep::distribute {

struct NetworkOptions : RendezvousOptions {
  NetworkOptions() { prefix = "net"; }
  // This worker's own address (its TF_CONFIG host, a name or an IP): UCX uses the network interface that holds
  // it, so that traffic goes where the cluster spec says. An address on no interface here leaves the choice to
  // UCX (every interface).
  std::string hostname = "127.0.0.1";
};

// Connects rank `rank` of `size` to the others; blocks until all of them have called it (or until
// connect_timeout: DeadlineExceededError naming a rank that did not come).
//
// Errors: a collective that runs past CollectiveOptions.timeout throws DeadlineExceededError; a peer whose
// connection breaks (its process exited, its host went away) makes the collective in flight or the next one throw
// UnavailableError naming it, with that peer's task as its culprit(). Either way the communicator is broken: it
// tells its peers, and every later call throws the same error at once. Build a new one (new prefix) to go on.
//
// Waiting: a collective polls UCX while its messages move and sleeps on UCX's event file descriptor once none has
// for 100 µs, leaving the core to other work while the wire is busy.
//
// Thread-safety: collectives with distinct tags may run at once from different threads (messages are matched by
// tag); two in flight with the same tag are undefined.
std::unique_ptr<Communicator> make_network_communicator(KeyValueStore& store, int rank, int size,
                                                        const NetworkOptions& options);

}  // namespace lockstep::distribute
