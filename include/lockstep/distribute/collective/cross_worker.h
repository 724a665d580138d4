// The cross-worker toolkit: what the layers above the collectives do across workers, written once — bytes
// from one worker to all, every worker's bytes to all, a value agreed on, and an error one worker raised
// raised on every worker with its type. Each function is a collective: every worker calls it at the same
// point with the same options. With no communicator (one worker) each works on this worker alone.
#pragma once
#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "lockstep/distribute/collective/communicator.h"

namespace lockstep::distribute {

// `bytes` of rank `root` on every worker (any length; the others' `bytes` are replaced).
void broadcast_bytes(Communicator* comm, std::string& bytes, int root, const CollectiveOptions& options);

// Every worker's `mine`, in rank order.
std::vector<std::string> all_gather_bytes(Communicator* comm, const std::string& mine, const CollectiveOptions& options);

// The reduction (SUM, MAX, MIN) of every worker's `mine`, the same on all of them.
int64_t agree(Communicator* comm, int64_t mine, ReduceOp op, const CollectiveOptions& options);

// Raises, on every worker, the error of the lowest rank whose `error` is set: that rank rethrows its own
// exception, the others raise the same lockstep error type (core/error.h's ErrorKind) with the same message.
// Returns on every worker when no rank has one.
void raise_if_any(Communicator* comm, std::exception_ptr error, const CollectiveOptions& options);

// Runs `fn` on the chief (rank 0) alone and returns on every worker only once it has finished there; what it
// raised is raised on every worker. The others wait up to options.timeout. For work only the chief does but
// every worker must see done: writing a file the others may read next. Called inside another on_chief's `fn`
// (on the chief, while the others wait for that one) it runs `fn` alone.
void on_chief(Communicator* comm, const std::function<void()>& fn, const CollectiveOptions& options);

// As on_chief, for a chief that reads: `read` runs on the chief and its result reaches every worker (no shared
// file system needed). Inside another on_chief's `fn` it just runs `read`.
std::vector<std::string> read_on_chief(Communicator* comm, const std::function<std::vector<std::string>()>& read,
                                       const CollectiveOptions& options);

}  // namespace lockstep::distribute
