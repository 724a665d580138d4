// Collective backends, each rank a thread: local (LocalGroup) and gloo over 127.0.0.1 (rendezvous through
// an in-memory store). Every test runs on both; results are checked against references computed here and
// for bitwise equality across ranks.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <thread>

#include "lockstep/core/error.h"
#include "lockstep/distribute/collective/gloo.h"
#include "lockstep/distribute/collective/hierarchical.h"
#include "lockstep/distribute/collective/network.h"
#include "lockstep/distribute/collective/shared_memory.h"
#include "lockstep/distribute/collective/local.h"
#include "lockstep/distribute/collective/nccl.h"
#include "lockstep/tensor/ops.h"

namespace lockstep::distribute {
namespace {

using std::chrono::milliseconds;

// A KeyValueStore in memory, for ranks that are threads of this process.
class MemoryStore final : public KeyValueStore {
 public:
  void set(const std::string& key, const std::string& value) override {
    std::lock_guard lock(mutex_);
    values_[key] = value;
    cv_.notify_all();
  }
  std::string get(const std::string& key, milliseconds timeout) override {
    std::unique_lock lock(mutex_);
    if (!cv_.wait_for(lock, timeout, [&] { return values_.count(key) > 0; }))
      throw DeadlineExceededError("MemoryStore: no key " + key);
    return values_[key];
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::map<std::string, std::string> values_;
};

// Runs body(communicator) on `size` threads, one communicator each; rethrows the lowest rank's exception.
using Body = std::function<void(Communicator&)>;
struct Backend {
  std::string name;
  bool rank_order;  // all_reduce sums in rank order (so any float data has an exact reference)
  std::function<void(int size, const Body& body)> run;
};

void PrintTo(const Backend& backend, std::ostream* os) {
  *os << backend.name;
}  // names ctest's tests

void run_threads(int size, const std::function<void(int)>& fn) {
  std::vector<std::exception_ptr> errors(static_cast<size_t>(size));
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      try {
        fn(r);
      } catch (...) {
        errors[static_cast<size_t>(r)] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

Backend local_backend() {
  return {"Local", true, [](int size, const Body& body) {
            LocalGroup group(size);
            run_threads(size, [&](int r) { body(*group.communicator(r)); });
          }};
}

// A backend of ranks that meet through a store, each rank a thread with its own communicator (`make` with
// `Options`, ranks named "worker:r").
template <typename Options, auto make>
Backend process_backend(const char* name) {
  return {name, false, [](int size, const Body& body) {
            MemoryStore store;
            Options options;
            for (int r = 0; r < size; ++r) options.peer_names.push_back("worker:" + std::to_string(r));
            options.connect_timeout = std::chrono::seconds(20);
            run_threads(size, [&](int r) { body(*make(store, r, size, options)); });
          }};
}

Backend gloo_backend() { return process_backend<GlooOptions, make_gloo_communicator>("Gloo"); }
Backend shared_memory_backend() {
  return process_backend<SharedMemoryOptions, make_shared_memory_communicator>("SharedMemory");
}
Backend network_backend() { return process_backend<NetworkOptions, make_network_communicator>("Network"); }

// Hosts of two ranks each (rank r on host r / 2), each host and the hosts' leaders a LocalGroup.
Backend hierarchical_backend() {
  return {"Hierarchical", false, [](int size, const Body& body) {
            const int hosts = (size + 1) / 2;
            std::vector<std::unique_ptr<LocalGroup>> host_groups;
            for (int h = 0; h < hosts; ++h) host_groups.push_back(std::make_unique<LocalGroup>(std::min(2, size - 2 * h)));
            LocalGroup leaders(hosts);
            std::vector<int> host_of;
            for (int r = 0; r < size; ++r) host_of.push_back(r / 2);
            run_threads(size, [&](int r) {
              auto c = make_hierarchical_communicator(r, host_of, host_groups[static_cast<size_t>(r / 2)]->communicator(r % 2),
                                                      r % 2 == 0 ? leaders.communicator(r / 2) : nullptr);
              body(*c);
            });
          }};
}

class CollectiveTest : public ::testing::TestWithParam<Backend> {
 protected:
  void run(int size, const Body& body) { GetParam().run(size, body); }
};

// ---- all_reduce against a reference ----

uint64_t mix(uint64_t x) {  // splitmix64: cheap, reproducible test data
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Rank r's element i: floats spread over magnitudes 2^-4..2^3 so that the sum depends on its order.
template <typename T>
T value(int rank, size_t i, uint64_t seed) {
  const uint64_t h = mix(seed * 1000003u + static_cast<uint64_t>(rank) * 7919u + i);
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(static_cast<int64_t>(h % 2001) - 1000);
  } else {
    static constexpr double kScale[8] = {1.0 / 16, 1.0 / 8, 1.0 / 4, 1.0 / 2, 1, 2, 4, 8};
    const double v = (static_cast<double>(h & 0xfffff) / 0x80000 - 1.0) * kScale[(h >> 32) & 7];
    if constexpr (std::is_same_v<T, bfloat16>) {
      return bfloat16(static_cast<float>(v));
    } else {
      return static_cast<T>(v);
    }
  }
}

template <typename T>
double as_double(T v) {
  if constexpr (std::is_same_v<T, bfloat16>) {
    return static_cast<float>(v);
  } else {
    return static_cast<double>(v);
  }
}

template <typename T>
T step_value(ReduceOp op, T a, T b) {
  return op == ReduceOp::MAX ? std::max(a, b) : op == ReduceOp::MIN ? std::min(a, b) : a + b;
}

// Rank-order fold, the way the spec defines it; bfloat16 rounds after every step.
template <typename T>
T reference(ReduceOp op, int size, size_t i, uint64_t seed) {
  auto step = [&](T a, T b) -> T {
    if constexpr (std::is_same_v<T, bfloat16>) {
      return bfloat16(static_cast<float>(step_value(op, static_cast<float>(a), static_cast<float>(b))));
    } else {
      return step_value(op, a, b);
    }
  };
  T acc = value<T>(0, i, seed);
  for (int r = 1; r < size; ++r) acc = step(acc, value<T>(r, i, seed));
  if (op == ReduceOp::MEAN) {
    if constexpr (std::is_same_v<T, bfloat16>) {
      acc = bfloat16(static_cast<float>(acc) / static_cast<float>(size));
    } else {
      acc = acc / static_cast<T>(size);
    }
  }
  return acc;
}

uint64_t fnv1a(const void* data, size_t bytes) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < bytes; ++i) h = (h ^ static_cast<const uint8_t*>(data)[i]) * 1099511628211ull;
  return h;
}

template <typename T>
void all_reduce_case(Communicator& c, bool rank_order, ReduceOp op, size_t count, uint64_t seed,
                     std::vector<uint64_t>& hashes) {
  std::vector<T> data(count);
  for (size_t i = 0; i < count; ++i) data[i] = value<T>(c.rank(), i, seed);
  c.all_reduce(data.data(), count, dtype_of<T>(), op);
  hashes.push_back(fnv1a(data.data(), count * sizeof(T)));
  if (c.rank() != 0) return;  // the others are compared with rank 0 through the hashes
  // Reduction order only matters for floating sums; where it does, an order other than the rank order
  // (gloo's ring) is checked against a bound instead of bit for bit.
  const bool exact = rank_order || c.size() <= 2 || std::is_integral_v<T> || op == ReduceOp::MAX || op == ReduceOp::MIN;
  const double eps = std::is_same_v<T, bfloat16> ? 1.0 / 64 : std::is_same_v<T, float> ? 1e-6 : 1e-14;
  for (size_t i = 0; i < count; ++i) {
    const T want = reference<T>(op, c.size(), i, seed);
    if (exact) {
      ASSERT_EQ(std::memcmp(&data[i], &want, sizeof(T)), 0)
          << dtype_name(dtype_of<T>()) << " op " << static_cast<int>(op) << " count " << count << " element " << i
          << ": got " << as_double(data[i]) << ", want " << as_double(want);
    } else {
      double magnitude = 0;
      for (int r = 0; r < c.size(); ++r) magnitude += std::abs(as_double(value<T>(r, i, seed)));
      ASSERT_NEAR(as_double(data[i]), as_double(want), eps * magnitude * c.size())
          << dtype_name(dtype_of<T>()) << " element " << i;
    }
  }
}

TEST_P(CollectiveTest, AllReduceEveryDtypeAndOpMatchesReferenceBitwiseOnEveryRank) {
  for (int size : {1, 2, 3, 4}) {
    std::vector<std::vector<uint64_t>> hashes(static_cast<size_t>(size));
    run(size, [&](Communicator& c) {
      auto& mine = hashes[static_cast<size_t>(c.rank())];
      uint64_t seed = 0;
      for (ReduceOp op : {ReduceOp::SUM, ReduceOp::MEAN, ReduceOp::MAX, ReduceOp::MIN}) {
        for (size_t count : {size_t{1}, size_t{7}, size_t{1} << 20}) {
          if (count > 7 && (size == 1 || size == 3)) continue;  // keeps the suite quick
          all_reduce_case<float>(c, GetParam().rank_order, op, count, ++seed, mine);
          all_reduce_case<bfloat16>(c, GetParam().rank_order, op, count, ++seed, mine);
          all_reduce_case<double>(c, GetParam().rank_order, op, count, ++seed, mine);
          all_reduce_case<int64_t>(c, GetParam().rank_order, op, count, ++seed, mine);
          all_reduce_case<int32_t>(c, GetParam().rank_order, op, count, ++seed, mine);
        }
      }
    });
    for (int r = 1; r < size; ++r)
      EXPECT_EQ(hashes[static_cast<size_t>(r)], hashes[0]) << "rank " << r << " of " << size;
  }
}

TEST_P(CollectiveTest, AllReduceRejectsUnsupportedDtype) {
  run(2, [&](Communicator& c) {
    uint8_t x = 1;
    EXPECT_THROW(c.all_reduce(&x, 1, DType::uint8, ReduceOp::SUM), InvalidArgumentError);
    c.barrier();  // still usable: the bad call never reached the peers
  });
}

// ---- broadcast, all_gather, barrier ----

TEST_P(CollectiveTest, BroadcastFromEveryRoot) {
  run(3, [&](Communicator& c) {
    for (size_t bytes : {size_t{1}, size_t{1000}, size_t{3} << 20}) {
      for (int root = 0; root < c.size(); ++root) {
        std::vector<uint8_t> data(bytes, 0xEE);
        if (c.rank() == root) {
          for (size_t i = 0; i < bytes; ++i) data[i] = static_cast<uint8_t>(mix(i + 31 * static_cast<size_t>(root)));
        }
        c.broadcast(data.data(), bytes, root);
        for (size_t i = 0; i < bytes; ++i) {
          ASSERT_EQ(data[i], static_cast<uint8_t>(mix(i + 31 * static_cast<size_t>(root))))
              << "root " << root << " rank " << c.rank() << " byte " << i;
        }
      }
    }
  });
}

TEST_P(CollectiveTest, AllGatherPlacesRankRAtOffsetR) {
  run(3, [&](Communicator& c) {
    auto pattern = [](int rank, size_t i) { return static_cast<uint8_t>(mix(i * 3 + static_cast<size_t>(rank))); };
    for (size_t bytes : {size_t{1}, size_t{13}, size_t{1} << 20}) {
      std::vector<uint8_t> input(bytes);
      for (size_t i = 0; i < bytes; ++i) input[i] = pattern(c.rank(), i);
      std::vector<uint8_t> output(bytes * 3, 0);
      c.all_gather(input.data(), output.data(), bytes);
      // In place: this rank's part already sits at its offset.
      std::vector<uint8_t> in_place(bytes * 3, 0);
      std::memcpy(in_place.data() + static_cast<size_t>(c.rank()) * bytes, input.data(), bytes);
      c.all_gather(in_place.data() + static_cast<size_t>(c.rank()) * bytes, in_place.data(), bytes);
      for (int r = 0; r < 3; ++r) {
        for (size_t i = 0; i < bytes; ++i) {
          ASSERT_EQ(output[static_cast<size_t>(r) * bytes + i], pattern(r, i)) << "from rank " << r;
          ASSERT_EQ(in_place[static_cast<size_t>(r) * bytes + i], pattern(r, i)) << "in place, from rank " << r;
        }
      }
    }
  });
}

TEST_P(CollectiveTest, BarrierWaitsForEveryRank) {
  std::atomic<int> arrived{0};
  run(3, [&](Communicator& c) {
    for (int round = 1; round <= 5; ++round) {
      std::this_thread::sleep_for(milliseconds(5 * c.rank()));
      arrived.fetch_add(1);
      c.barrier();
      EXPECT_GE(arrived.load(), 3 * round);
      c.barrier();  // nobody starts the next round before everybody has checked this one
    }
  });
}

// ---- tags ----

TEST_P(CollectiveTest, CollectivesWithDifferentTagsRunConcurrently) {
  run(2, [&](Communicator& c) {
    // Each rank's two threads issue their tags in opposite orders, so sharing one queue would deadlock.
    auto worker = [&](uint32_t tag) {
      CollectiveOptions o{.tag = tag, .timeout = std::chrono::seconds(20)};
      for (int i = 0; i < 30; ++i) {
        std::vector<double> v(1000 + tag, static_cast<double>(tag * 100 + c.rank() + i));
        c.all_reduce(v.data(), v.size(), DType::float64, ReduceOp::SUM, o);
        for (double x : v) ASSERT_EQ(x, 2.0 * (tag * 100 + i) + 1) << "tag " << tag;
        int64_t b = c.rank() == 1 ? static_cast<int64_t>(tag * 7 + i) : -1;
        c.broadcast(&b, sizeof b, 1, o);
        ASSERT_EQ(b, static_cast<int64_t>(tag * 7 + i));
      }
    };
    const uint32_t first = c.rank() == 0 ? 1 : 2;
    std::thread other(worker, 3 - first);
    worker(first);
    other.join();
  });
}

// ---- failures ----

// A rank may finish its last collective, and close, while a peer is still in one that does not need it (a
// broadcast whose sender is done): the peer's collective and its result stand. Every root, every late rank.
TEST_P(CollectiveTest, ARankThatClosesAfterItsLastCollectiveFailsNoOne) {
  for (int root = 0; root < 3; ++root) {
    for (int late = 0; late < 3; ++late) {
      if (late == root) continue;
      run(3, [&](Communicator& c) {
        if (c.rank() == late) std::this_thread::sleep_for(milliseconds(100));  // the others are done by then
        uint64_t v = c.rank() == root ? 0x5eed0000u + static_cast<uint64_t>(root) : 0;
        c.broadcast(&v, sizeof v, root);
        EXPECT_EQ(v, 0x5eed0000u + static_cast<uint64_t>(root)) << "root " << root << " rank " << c.rank();
      });
    }
  }
}

// Shared memory maps every rank's region for every other to read in place; the other backends map none. Either
// way every rank gets the same answer.
TEST_P(CollectiveTest, MappedRegionsAreReadInPlaceByEveryRankOrMappedByNone) {
  constexpr size_t kCount = 100000;
  std::vector<int> mapped(3, -1);
  run(3, [&](Communicator& c) {
    std::unique_ptr<MappedRegions> regions = c.map_regions(kCount * sizeof(float));
    mapped[static_cast<size_t>(c.rank())] = regions != nullptr;
    c.barrier();  // a backend that maps nothing returns at once: no rank closes while another still connects
    if (!regions) return;
    auto* mine = static_cast<float*>(regions->region(c.rank()));
    EXPECT_EQ(reinterpret_cast<uintptr_t>(mine) % 64, 0u);
    auto value = [](int rank, int step, size_t i) { return static_cast<float>(rank * 1000003 + step * 7 + i); };
    for (int step = 0; step < 3; ++step) {
      for (size_t i = 0; i < kCount; ++i) mine[i] = value(c.rank(), step, i);
      c.barrier();  // every region written
      for (int r = 0; r < c.size(); ++r) {
        const auto* theirs = static_cast<const float*>(regions->region(r));
        size_t wrong = 0;
        for (size_t i = 0; i < kCount; ++i) wrong += theirs[i] != value(r, step, i);
        EXPECT_EQ(wrong, 0u) << "rank " << c.rank() << " reading rank " << r << " at step " << step;
      }
      c.barrier();  // every region read before it is written again
    }
    // This rank's own region outlives the regions object for as long as something holds it.
    std::shared_ptr<const void> own = regions->own();
    regions.reset();
    EXPECT_EQ(static_cast<const float*>(own.get())[kCount - 1], value(c.rank(), 2, kCount - 1));
  });
  const int expected = GetParam().name == "SharedMemory" ? 1 : 0;
  EXPECT_EQ(mapped, std::vector<int>(3, expected));
}

// Every timeout below but the first is long (a timeout that ended a call would name it: "120000 ms"), so an
// error naming the 300 ms timeout or a lost peer shows that a broken group failed the call at once.
TEST_P(CollectiveTest, RankThatNeverJoinsGivesDeadlineExceededWithinTheTimeout) {
  const CollectiveOptions o{.tag = 5, .timeout = milliseconds(300)};
  const CollectiveOptions patient{.tag = 5, .timeout = std::chrono::seconds(120)};
  std::atomic<int> deadline{0};
  std::vector<std::string> messages(3), again(2);
  std::mutex absent_mutex;
  std::condition_variable absent_cv;
  int failed = 0;
  run(3, [&](Communicator& c) {
    float x = 1;
    if (c.rank() == 2) {
      // The absent rank: it stays away until the others have failed, then finds the group broken.
      std::unique_lock lock(absent_mutex);
      absent_cv.wait_for(lock, std::chrono::seconds(60), [&] { return failed == 2; });
      lock.unlock();
      try {
        c.all_reduce(&x, 1, DType::float32, ReduceOp::SUM, patient);
        ADD_FAILURE() << "all_reduce returned in a broken group";
      } catch (const Error& e) {
        messages[2] = e.what();
      }
      return;
    }
    try {
      c.all_reduce(&x, 1, DType::float32, ReduceOp::SUM, o);
      ADD_FAILURE() << "all_reduce returned without rank 2";
    } catch (const DeadlineExceededError& e) {
      deadline.fetch_add(1);
      messages[static_cast<size_t>(c.rank())] = e.what();
    } catch (const UnavailableError& e) {
      messages[static_cast<size_t>(c.rank())] = e.what();  // gloo: woken by the peer that timed out first
    }
    // Later calls fail at once with the same error, whatever their own timeout.
    try {
      c.barrier(patient);
      ADD_FAILURE() << "barrier passed in a broken group";
    } catch (const Error& e) {
      again[static_cast<size_t>(c.rank())] = e.what();
    }
    std::lock_guard lock(absent_mutex);
    ++failed;
    absent_cv.notify_all();
  });
  EXPECT_GE(deadline.load(), 1);
  auto names_a_cause = [](const std::string& m) {
    return m.find("timed out after 300 ms") != std::string::npos || m.find("lost its connection") != std::string::npos;
  };
  for (int r = 0; r < 3; ++r) {
    const std::string& m = messages[static_cast<size_t>(r)];
    EXPECT_TRUE(names_a_cause(m)) << "rank " << r << ": " << m;
    EXPECT_EQ(m.find("120000 ms"), std::string::npos) << "rank " << r << " waited out its own timeout: " << m;
  }
  for (int r = 0; r < 2; ++r)
    EXPECT_EQ(again[static_cast<size_t>(r)], messages[static_cast<size_t>(r)]) << "rank " << r;
  if (GetParam().rank_order) {
    EXPECT_NE(messages[0].find("replica(s) 2 did not arrive"), std::string::npos) << messages[0];
  }
  std::cout << "    " << GetParam().name << " timeout message: " << messages[0] << "\n";
}

INSTANTIATE_TEST_SUITE_P(Collective, CollectiveTest, ::testing::Values(local_backend(), gloo_backend(), shared_memory_backend(), network_backend(),
                                                            hierarchical_backend()),
                         [](const ::testing::TestParamInfo<Backend>& info) { return info.param.name; });

// ---- NCCL: one rank per GPU this machine has (ranks are threads), on GPU and on host buffers ----

TEST(NcclTest, AllReducesBroadcastsAndGathersOnGpuAndHostBuffers) {
  const int gpus = gpu_count();
  if (gpus == 0) GTEST_SKIP() << "no GPU visible to this process";
  MemoryStore store;
  run_threads(gpus, [&](int r) {
    NcclOptions o;
    o.device = r;
    auto c = make_nccl_communicator(store, r, gpus, o);
    const Device gpu = Device::gpu(r);
    // On the GPU: 1000 floats, rank r contributes r + i.
    std::vector<float> mine(1000);
    for (size_t i = 0; i < mine.size(); ++i) mine[i] = static_cast<float>(r) + static_cast<float>(i);
    Tensor t = from_vector(mine, Shape{1000}).to(gpu);
    c->all_reduce(t.device_data(), 1000, DType::float32, ReduceOp::SUM, {});
    const std::vector<float> sum = t.to_vector<float>();
    for (size_t i = 0; i < sum.size(); i += 97)
      EXPECT_EQ(sum[i], static_cast<float>(gpus * (gpus - 1) / 2) + static_cast<float>(gpus) * static_cast<float>(i));
    // On the host (metrics, initial values): staged through the GPU.
    std::vector<double> host{static_cast<double>(r), 2.0};
    c->all_reduce(host.data(), 2, DType::float64, ReduceOp::MAX, {});
    EXPECT_EQ(host, (std::vector<double>{static_cast<double>(gpus - 1), 2.0}));
    std::vector<int64_t> value{r == 0 ? 42 : -1};
    c->broadcast(value.data(), sizeof(int64_t), 0, {});
    EXPECT_EQ(value[0], 42);
    std::vector<int32_t> gathered(static_cast<size_t>(gpus));
    const int32_t own = 10 + r;
    c->all_gather(&own, gathered.data(), sizeof own, {});
    for (int k = 0; k < gpus; ++k) EXPECT_EQ(gathered[static_cast<size_t>(k)], 10 + k);
    c->barrier();
  });
}

TEST(NcclTest, WithoutCudaOrGpuTheErrorSaysWhatToUse) {
  if (nccl_available()) GTEST_SKIP() << "this build has NCCL";
  MemoryStore store;
  EXPECT_THROW(make_nccl_communicator(store, 0, 1, {}), FailedPreconditionError);
}

// ---- local-only behaviour ----

TEST(LocalGroupTest, AbortWakesEveryWaiterWithUnavailable) {
  LocalGroup group(3);
  std::vector<std::string> messages(3);
  run_threads(3, [&](int r) {
    auto c = group.communicator(r);
    if (r == 0) {
      std::this_thread::sleep_for(milliseconds(100));
      group.abort("replica 0 failed: boom");
      return;
    }
    double x = 1;
    // The timeout is long: the abort's message, not the timeout's DeadlineExceededError, shows it woke the call.
    try {
      c->all_reduce(&x, 1, DType::float64, ReduceOp::SUM, {.timeout = std::chrono::seconds(120)});
    } catch (const UnavailableError& e) {
      messages[static_cast<size_t>(r)] = e.what();
    }
    EXPECT_THROW(c->barrier(), UnavailableError);  // for good
  });
  for (int r = 1; r < 3; ++r) EXPECT_EQ(messages[static_cast<size_t>(r)], "replica 0 failed: boom");
}

TEST(LocalGroupTest, MismatchedCollectivesOnATagAreAnErrorNotAHang) {
  LocalGroup group(2);
  std::vector<std::string> messages(2);
  run_threads(2, [&](int r) {
    auto c = group.communicator(r);
    float x[4] = {1, 2, 3, 4};
    try {
      if (r == 0) {
        c->all_reduce(x, 4, DType::float32, ReduceOp::SUM, {.timeout = std::chrono::seconds(10)});
      } else {
        std::this_thread::sleep_for(milliseconds(20));
        c->all_reduce(x, 3, DType::float32, ReduceOp::SUM, {.timeout = std::chrono::seconds(10)});
      }
    } catch (const InvalidArgumentError& e) {
      messages[static_cast<size_t>(r)] = e.what();
    }
  });
  EXPECT_EQ(messages[0], messages[1]);
  EXPECT_NE(
      messages[1].find("replica 1 called all_reduce(3 float32, SUM) while replica 0 called all_reduce(4 float32, SUM)"),
      std::string::npos)
      << messages[1];
}

TEST(LocalGroupTest, RejectsBadRanks) {
  EXPECT_THROW(LocalGroup(0), ValueError);
  LocalGroup group(2);
  EXPECT_THROW(group.communicator(2), ValueError);
  EXPECT_THROW(group.communicator(0)->broadcast(nullptr, 0, 5), ValueError);
}

// ---- gloo-only behaviour ----

TEST(GlooCommunicatorTest, RendezvousTimeoutNamesTheMissingRank) {
  MemoryStore store;
  GlooOptions options;
  options.peer_names = {"worker:0 at 127.0.0.1:1", "worker:1 at 127.0.0.1:2"};
  options.peer_tasks = {"worker:0", "worker:1"};
  options.connect_timeout = milliseconds(300);
  try {
    make_gloo_communicator(store, 0, 2, options);
    FAIL() << "connected without rank 1";
  } catch (const DeadlineExceededError& e) {
    EXPECT_NE(std::string(e.what()).find("worker:1 at 127.0.0.1:2 (rank 1)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("waited 300 ms"), std::string::npos) << e.what();  // the timeout it was given
    EXPECT_EQ(e.culprit(), "worker:1");
  }
}

TEST(GlooCommunicatorTest, PeerThatLeavesMidCollectiveFailsTheOthersAtOnceNamingIt) {
  MemoryStore store;
  GlooOptions options;
  options.peer_names = {"worker:0", "worker:1", "worker:2"};
  options.peer_tasks = options.peer_names;
  std::vector<std::string> messages(2), culprits(2);
  run_threads(3, [&](int r) {
    auto c = make_gloo_communicator(store, r, 3, options);
    std::vector<float> v(1 << 20, 1.0f);
    c->all_reduce(v.data(), v.size(), DType::float32, ReduceOp::SUM);
    if (r == 2) {
      std::this_thread::sleep_for(milliseconds(100));
      return;  // closes its connections while the others wait for it
    }
    // The timeout is long: the closed connection, named in an UnavailableError, must end the call (the timeout
    // would be a DeadlineExceededError).
    try {
      c->all_reduce(v.data(), v.size(), DType::float32, ReduceOp::SUM, {.timeout = std::chrono::seconds(120)});
    } catch (const UnavailableError& e) {
      messages[static_cast<size_t>(r)] = e.what();
      culprits[static_cast<size_t>(r)] = e.culprit();
    }
    EXPECT_THROW(c->barrier(), UnavailableError);  // broken for good, at once
  });
  for (int r = 0; r < 2; ++r) {
    EXPECT_NE(messages[static_cast<size_t>(r)].find("restart it (lockstep launch --max-restarts)"), std::string::npos)
        << "rank " << r << ": " << messages[static_cast<size_t>(r)];
  }
  // Whoever noticed first names worker:2; the other may name the rank that closed on noticing it. The culprit, a
  // fact taken from the pairs' state, is the task the message names.
  EXPECT_TRUE(messages[0].find("worker:2 (rank 2)") != std::string::npos ||
              messages[1].find("worker:2 (rank 2)") != std::string::npos)
      << messages[0] << "\n"
      << messages[1];
  for (int r = 0; r < 2; ++r) {
    const std::string& culprit = culprits[static_cast<size_t>(r)];
    EXPECT_TRUE(culprit == "worker:2" || culprit == "worker:" + std::to_string(1 - r)) << culprit;
    EXPECT_NE(messages[static_cast<size_t>(r)].find(culprit + " (rank"), std::string::npos)
        << culprit << ": " << messages[static_cast<size_t>(r)];
  }
}

TEST(GlooCommunicatorTest, CollectivePastItsTimeoutIsDeadlineExceededAndBlamesNobody) {
  MemoryStore store;
  GlooOptions options;
  options.peer_tasks = {"worker:0", "worker:1"};
  std::promise<void> timed_out;
  std::shared_future<void> done = timed_out.get_future().share();
  run_threads(2, [&](int r) {
    auto c = make_gloo_communicator(store, r, 2, options);
    if (r == 1) {
      done.wait();  // takes no part until rank 0 has given up
      return;
    }
    float x = 1;
    try {
      c->all_reduce(&x, 1, DType::float32, ReduceOp::SUM, {.timeout = milliseconds(200)});
      ADD_FAILURE() << "an all_reduce without its peer returned";
    } catch (const DeadlineExceededError& e) {
      EXPECT_NE(std::string(e.what()).find("timed out after 200 ms"), std::string::npos) << e.what();
      EXPECT_EQ(e.culprit(), "");
    }
    EXPECT_THROW(c->barrier(), DeadlineExceededError);  // the same error, at once
    timed_out.set_value();
  });
}

TEST(GlooCommunicatorTest, RejectsBadArguments) {
  MemoryStore store;
  EXPECT_THROW(make_gloo_communicator(store, 2, 2, {}), ValueError);
  GlooOptions options;
  options.peer_names = {"only one"};
  EXPECT_THROW(make_gloo_communicator(store, 0, 2, options), ValueError);
  options.peer_names = {};
  options.peer_tasks = {"worker:0"};
  EXPECT_THROW(make_gloo_communicator(store, 0, 2, options), ValueError);
}

TEST(GlooCommunicatorTest, SingleRankNeedsNoPeers) {
  MemoryStore store;
  auto c = make_gloo_communicator(store, 0, 1, {});
  float x[2] = {3, 5};
  c->all_reduce(x, 2, DType::float32, ReduceOp::MEAN);
  EXPECT_EQ(x[1], 5.0f);
  c->barrier();
}

}  // namespace
}  // namespace lockstep::distribute
