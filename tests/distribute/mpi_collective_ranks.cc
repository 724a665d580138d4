// One rank of the MPI backend's tests: mpi_collective_test.cc starts it as
// `mpirun -np N mpi_collective_ranks <case>`. Each rank checks its results, prints "rank R ok <case>" or
// "rank R FAIL <case>: why" lines, and exits 1 after a failure.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "lockstep/core/error.h"
#include "lockstep/distribute/collective/mpi.h"
#include "lockstep/distribute/strategy/strategy.h"

namespace ls = lockstep;
namespace dist = lockstep::distribute;
using namespace std::chrono_literals;

namespace {

int g_rank = 0;
int g_failures = 0;

void check(bool ok, const std::string& what) {
  if (!ok) {
    std::printf("rank %d FAIL %s\n", g_rank, what.c_str());
    ++g_failures;
  }
}

// Every rank's copy of `bytes` must be identical: gathers them and compares with rank 0's.
void check_identical(dist::Communicator& c, const void* data, size_t bytes, const std::string& what) {
  std::vector<char> all(bytes * static_cast<size_t>(c.size()));
  c.all_gather(data, all.data(), bytes, {77, 30s});
  for (int r = 1; r < c.size(); ++r)
    check(std::memcmp(all.data(), all.data() + static_cast<size_t>(r) * bytes, bytes) == 0,
          what + ": rank " + std::to_string(r) + " holds other bits than rank 0");
}

// Rank r's input for element i: small integers (exact in every dtype, so the expected result is exact).
double input(int r, size_t i) { return static_cast<double>((static_cast<int>(i) * 7 + r * 3) % 11) - 5; }

template <typename T>
void check_all_reduce(dist::Communicator& c, ls::DType dtype, dist::ReduceOp op, const std::string& what, size_t n) {
  const std::string name = what + " of " + std::to_string(n);
  std::vector<T> data(n);
  for (size_t i = 0; i < n; ++i) data[i] = T(static_cast<float>(input(c.rank(), i)));
  c.all_reduce(data.data(), n, dtype, op, {1, 30s});
  bool ok = true;
  for (size_t i = 0; i < n && ok; ++i) {
    double want = input(0, i);
    for (int r = 1; r < c.size(); ++r) {
      const double x = input(r, i);
      want = op == dist::ReduceOp::MAX ? std::max(want, x) : op == dist::ReduceOp::MIN ? std::min(want, x) : want + x;
    }
    if (op == dist::ReduceOp::MEAN) {
      want /= c.size();
      if constexpr (std::is_integral_v<T>) want = std::trunc(want);
    }
    const double got = static_cast<double>(static_cast<float>(data[i]));
    const double tolerance = std::is_same_v<T, ls::bfloat16> ? 1e-2 * std::abs(want) : 1e-6 * std::abs(want);
    ok = std::abs(got - want) <= tolerance;
    if (!ok) check(false, std::string("all_reduce ") + name + " element " + std::to_string(i) + ": got " +
                              std::to_string(got) + ", expected " + std::to_string(want));
  }
  check_identical(c, data.data(), n * sizeof(T), std::string("all_reduce ") + name);
}

// n = 1001 goes through MPI_Iallreduce, 100001 (from 200 KB) through the backend's own ring, in several
// pieces for 8-byte types; neither is a multiple of the number of ranks.
template <typename T>
void check_all_reduce(dist::Communicator& c, ls::DType dtype, dist::ReduceOp op, const std::string& name) {
  for (const size_t n : {size_t{1001}, size_t{100001}}) check_all_reduce<T>(c, dtype, op, name, n);
}

template <typename T>
void check_all_ops(dist::Communicator& c, ls::DType dtype) {
  const std::string d(ls::dtype_name(dtype));
  check_all_reduce<T>(c, dtype, dist::ReduceOp::SUM, d + " SUM");
  check_all_reduce<T>(c, dtype, dist::ReduceOp::MEAN, d + " MEAN");
  check_all_reduce<T>(c, dtype, dist::ReduceOp::MAX, d + " MAX");
  check_all_reduce<T>(c, dtype, dist::ReduceOp::MIN, d + " MIN");
}

void collectives() {
  auto c = dist::make_mpi_communicator();
  g_rank = c->rank();
  check_all_ops<float>(*c, ls::DType::float32);
  check_all_ops<ls::bfloat16>(*c, ls::DType::bfloat16);
  check_all_ops<double>(*c, ls::DType::float64);
  check_all_ops<int64_t>(*c, ls::DType::int64);
  check_all_ops<int32_t>(*c, ls::DType::int32);

  // Random float32 sums (rounding depends on the order): every rank must still hold the same bits.
  std::mt19937 gen(1234u + static_cast<unsigned>(c->rank()));
  std::normal_distribution<float> normal;
  std::vector<float> noise(300000);  // large enough for OpenMPI's large-message algorithms
  for (float& x : noise) x = normal(gen);
  c->all_reduce(noise.data(), noise.size(), ls::DType::float32, dist::ReduceOp::SUM, {2, 30s});
  check_identical(*c, noise.data(), noise.size() * sizeof(float), "all_reduce of random float32");

  // A NaN wins MAX and MIN on every rank, whichever rank holds it.
  std::vector<float> nan{c->rank() == 1 ? std::numeric_limits<float>::quiet_NaN() : 1.0f, 2.0f};
  c->all_reduce(nan.data(), nan.size(), ls::DType::float32, dist::ReduceOp::MAX, {3, 30s});
  check(std::isnan(nan[0]) && nan[1] == 2.0f, "float32 MAX with a NaN on rank 1 does not give NaN");

  c->all_reduce(nullptr, 0, ls::DType::float32, dist::ReduceOp::SUM, {1, 30s});  // nothing to do

  for (int root = 0; root < c->size(); ++root) {
    std::vector<int> data(513, c->rank() == root ? root * 100 + 1 : -1);
    c->broadcast(data.data(), data.size() * sizeof(int), root, {4, 30s});
    check(std::all_of(data.begin(), data.end(), [&](int x) { return x == root * 100 + 1; }),
          "broadcast from root " + std::to_string(root));
  }

  std::vector<int64_t> mine{c->rank() * 10, c->rank() * 10 + 1, c->rank() * 10 + 2};
  std::vector<int64_t> all(mine.size() * static_cast<size_t>(c->size()), -1);
  c->all_gather(mine.data(), all.data(), mine.size() * sizeof(int64_t), {5, 30s});
  for (int r = 0; r < c->size(); ++r)
    for (int k = 0; k < 3; ++k)
      check(all[static_cast<size_t>(r * 3 + k)] == r * 10 + k, "all_gather slot of rank " + std::to_string(r));

  c->barrier({6, 30s});
  try {
    c->all_reduce(mine.data(), 1, ls::DType::uint8, dist::ReduceOp::SUM, {1, 30s});
    check(false, "all_reduce of uint8 did not throw");
  } catch (const ls::InvalidArgumentError& e) {
    check(std::string(e.what()).find("uint8") != std::string::npos, std::string("uint8 message: ") + e.what());
  }
  c->barrier({6, 30s});
  if (!g_failures) std::printf("rank %d ok collectives\n", g_rank);
}

// Threads with distinct tags issue all-reduces of different sizes at once, in another order and pace on
// every rank; MPI would cross them if they shared a communicator.
void concurrent_tags() {
  auto c = dist::make_mpi_communicator();
  g_rank = c->rank();
  constexpr int kThreads = 4, kRounds = 40;
  // The first collective of each tag (which creates its communicator) comes in one order on every rank.
  for (int t = 0; t < kThreads; ++t) c->barrier({static_cast<uint32_t>(10 + t), 30s});
  std::vector<std::thread> threads;
  std::vector<int> bad(kThreads, 0);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 gen(static_cast<unsigned>(c->rank() * 100 + t));
      for (int round = 0; round < kRounds; ++round) {
        std::this_thread::sleep_for(std::chrono::microseconds(gen() % 2000));
        const size_t n = 100 + static_cast<size_t>(t) * 5000 + static_cast<size_t>(round);
        std::vector<double> data(n, c->rank() + 1 + t * 1000 + round);
        c->all_reduce(data.data(), n, ls::DType::float64, dist::ReduceOp::SUM, {static_cast<uint32_t>(10 + t), 60s});
        double want = 0;
        for (int r = 0; r < c->size(); ++r) want += r + 1 + t * 1000 + round;
        for (double x : data) bad[static_cast<size_t>(t)] += x != want;
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) check(bad[static_cast<size_t>(t)] == 0, "concurrent tag " + std::to_string(10 + t));
  if (!g_failures) std::printf("rank %d ok concurrent\n", g_rank);
}

// Two ranks start new tags in different orders: both must fail naming the tags, not cross them.
void new_tags_out_of_order() {
  auto c = dist::make_mpi_communicator();
  g_rank = c->rank();
  const uint32_t tag = c->rank() == 0 ? 21 : 22;
  double x = 1;
  try {
    c->all_reduce(&x, 1, ls::DType::float64, dist::ReduceOp::SUM, {tag, 30s});
    check(false, "crossed tags did not throw");
  } catch (const ls::InvalidArgumentError& e) {
    const std::string m = e.what();
    check(m.find(c->rank() == 0 ? "tag 22" : "tag 21") != std::string::npos, "message names the other tag: " + m);
  }
  if (!g_failures) std::printf("rank %d ok out_of_order\n", g_rank);
}

// Rank 0 all-reduces alone: it must throw DeadlineExceededError naming its 300 ms timeout, and the
// communicator then fails every call at once with the same error (not with its own 30 s timeout's).
void timeout() {
  auto c = dist::make_mpi_communicator();
  g_rank = c->rank();
  c->barrier({30, 30s});  // tag 30's communicator exists on both ranks
  if (c->rank() == 0) {
    float x = 1;
    std::string first;
    try {
      c->all_reduce(&x, 1, ls::DType::float32, dist::ReduceOp::SUM, {30, 300ms});
      check(false, "an all_reduce nobody joined returned");
    } catch (const ls::DeadlineExceededError& e) {
      first = e.what();
    }
    check(first.find("all_reduce") != std::string::npos && first.find("300 ms") != std::string::npos,
          "timeout message names the collective and the timeout: " + first);
    try {
      c->barrier({31, 30s});
      check(false, "a broken communicator accepted a barrier");
    } catch (const ls::DeadlineExceededError& e) {
      check(e.what() == first, std::string("later call repeats the first error: ") + e.what());
    }
    try {
      dist::make_mpi_communicator();
      check(false, "a new communicator was made after an abandoned collective");
    } catch (const ls::UnavailableError&) {
    }
    std::printf("rank 0 timeout message: %s\n", first.c_str());
  }
  if (!g_failures) std::printf("rank %d ok timeout\n", g_rank);
  std::fflush(stdout);
}

// A strategy whose last collective is a broadcast: rank 0 sends and leaves at once, rank 1 receives it two
// seconds later (longer than the data plane takes to notice a closed peer). Leaving must not close the
// connections before every worker is done (it once did, and rank 1 failed with "lost its connection").
// Run with LOCKSTEP_COLLECTIVE=ring (the network backend) or mpi.
void last_broadcast() {
  int value = 0;
  {
    dist::MultiWorkerMirroredStrategy strategy;
    g_rank = strategy.worker_rank();
    if (g_rank == 0) value = 42;
    else std::this_thread::sleep_for(2s);
    strategy.cross_worker()->broadcast(&value, sizeof value, 0, {5, 30s});
  }
  check(value == 42, "rank " + std::to_string(g_rank) + " received " + std::to_string(value));
  if (!g_failures) std::printf("rank %d ok last_broadcast\n", g_rank);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string which = argc > 1 ? argv[1] : "";
  try {
    if (which == "collectives") collectives();
    else if (which == "concurrent") concurrent_tags();
    else if (which == "out_of_order") new_tags_out_of_order();
    else if (which == "timeout") timeout();
    else if (which == "last_broadcast") last_broadcast();
    else check(false, "unknown case '" + which + "'");
  } catch (const std::exception& e) {
    check(false, which + " threw: " + e.what());
  }
  std::fflush(stdout);
  return g_failures ? 1 : 0;
}
