// Workers of one job inside a test: threads of this process, each with its own MultiWorkerMirroredStrategy
// on 127.0.0.1, as two worker processes would run. Test helper only.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "free_port.h"
#include "lockstep/distribute/strategy/strategy.h"

namespace lockstep::testing {

// Runs fn(rank, strategy) on workers 0 .. n-1 at once and returns what each threw ("" when nothing), so that a
// failure on one worker is reported rather than hanging the others until their timeout.
inline std::vector<std::string> on_workers(
    int n, const std::function<void(int rank, distribute::MultiWorkerMirroredStrategy& strategy)>& fn) {
  std::vector<std::string> addresses;
  for (int i = 0; i < n; ++i) addresses.push_back("127.0.0.1:" + std::to_string(free_port()));
  const distribute::ClusterSpec spec({{"worker", addresses}});
  std::vector<std::string> errors(static_cast<size_t>(n));
  auto worker = [&](int rank) {
    try {
      distribute::MultiWorkerMirroredStrategy strategy(
          {.timeout_seconds = 60}, std::make_unique<distribute::SimpleClusterResolver>(spec, "worker", rank));
      fn(rank, strategy);
    } catch (const std::exception& e) {
      errors[static_cast<size_t>(rank)] = e.what();
    }
  };
  std::vector<std::thread> others;
  for (int rank = 1; rank < n; ++rank) others.emplace_back(worker, rank);
  worker(0);
  for (std::thread& t : others) t.join();
  return errors;
}

inline std::vector<std::string> on_two_workers(
    const std::function<void(int rank, distribute::MultiWorkerMirroredStrategy& strategy)>& fn) {
  return on_workers(2, fn);
}

}  // namespace lockstep::testing
