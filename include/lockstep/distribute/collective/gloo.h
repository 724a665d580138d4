// The gloo collective backend: one worker process per rank, TCP between every pair of workers, and the
// rendezvous (who listens where) through the coordination service's KeyValueStore. The fallback to the network
// backend (network.h), chosen only by LOCKSTEP_COLLECTIVE=gloo.
#pragma once
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "lockstep/distribute/collective/communicator.h"

namespace lockstep::distribute {

// Collective order: each worker issues its cross-worker collectives from one thread in program order (the
// strategy's step, identical on every worker), gradient buckets are numbered in the order their gradients
// become ready and carry tag = bucket number, and the strategy's own collectives use fixed tags above
// those. gloo matches messages by (collective, tag) only, so it cannot detect a worker that breaks this
// order; it shows up as a timeout, or a count mismatch that gloo reports by terminating the process.
struct GlooOptions : RendezvousOptions {
  GlooOptions() { prefix = "gloo"; }
  // The address this rank's gloo pairs listen on (the worker's own TF_CONFIG host).
  std::string hostname = "127.0.0.1";
};

// Connects rank `rank` of `size` to the others; blocks until all of them have called it (or until
// connect_timeout: DeadlineExceededError naming a rank that did not come). Ignores SIGPIPE for the
// process if its disposition is the default, so a dead peer is an exception here rather than a signal.
// Stray connections: gloo (Debian's 2022 snapshot) gives each pair a listening socket of its own and takes the
// first connection on it as the peer, with no handshake. A port scan or stray client that reaches a socket during
// the rendezvous becomes "the peer": the rendezvous then fails, or gloo's event loop ends the process on its bytes.
// The strategy therefore uses gloo only when LOCKSTEP_COLLECTIVE=gloo asks, on a network without such clients; the
// network backend (network.h) is the default, and its listener drops them.
//
// Errors: a collective that runs past CollectiveOptions.timeout throws DeadlineExceededError; a peer that
// dies or closes its connections makes the collective in flight (within a second) or the next one throw
// UnavailableError naming it, with that peer's task as its culprit(). Either way the communicator is broken: it
// closes its connections, so the other workers fail fast too, and every later call throws the same error at
// once. Build a new one (new prefix) to go on.
//
// Thread-safety: collectives with distinct tags may run at once from different threads (gloo matches
// them by tag); two in flight with the same tag and kind are undefined. Each communicator runs two
// threads (gloo's socket loop and a watchdog); creating one costs a store round trip and size-1 TCP
// connections (a few ms on loopback): once per job, not per step.
std::unique_ptr<Communicator> make_gloo_communicator(KeyValueStore& store, int rank, int size,
                                                     const GlooOptions& options);

}  // namespace lockstep::distribute
