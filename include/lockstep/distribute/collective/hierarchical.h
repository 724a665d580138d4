// A communicator over workers grouped by host, as NCCL and Horovod reduce across nodes: each collective runs
// inside every host on the host's own communicator (shared memory), between the hosts' first workers on a second
// one (the network), and back inside every host. Only one worker per host then sends over the network.
#pragma once
#include <memory>
#include <vector>

#include "lockstep/distribute/collective/communicator.h"

namespace lockstep::distribute {

// `host_of[r]` is the host (0-based, numbered in the order of their first rank) of every rank r of the job; this
// rank is `rank`. `local` connects this host's ranks, ranked in job order; `leaders` connects the first rank of
// every host, ranked by host, and is null on the other ranks. Ranks keep their job rank: all_gather places rank
// r's bytes at r * bytes. all_reduce sums inside each host first, so for more than two ranks its float sums are
// grouped differently from a flat ring (every rank still ends with the same bits).
std::unique_ptr<Communicator> make_hierarchical_communicator(int rank, std::vector<int> host_of,
                                                             std::unique_ptr<Communicator> local,
                                                             std::unique_ptr<Communicator> leaders);

}  // namespace lockstep::distribute
