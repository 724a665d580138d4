// The cross-worker toolkit on three ranks that are threads (the local backend), and the collective tag table:
// no two features share a tag, and none falls among the gradient buckets'.
#include "lockstep/distribute/collective/cross_worker.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <set>
#include <thread>
#include <typeinfo>

#include "lockstep/core/error.h"
#include "lockstep/distribute/collective/local.h"

namespace lockstep::distribute {
namespace {

constexpr int kRanks = 3;
const CollectiveOptions kOptions = collective_options(Tag::kCheckpoint, std::chrono::seconds(20));

// Runs fn(rank, comm) on kRanks threads; the exception each rank ended with (null: none), by rank.
std::vector<std::exception_ptr> on_ranks(const std::function<void(int, Communicator*)>& fn) {
  LocalGroup group(kRanks);
  std::vector<std::exception_ptr> errors(kRanks);
  std::vector<std::thread> threads;
  for (int r = 0; r < kRanks; ++r)
    threads.emplace_back([&, r, comm = std::shared_ptr<Communicator>(group.communicator(r))] {
      try {
        fn(r, comm.get());
      } catch (...) {
        errors[static_cast<size_t>(r)] = std::current_exception();
      }
    });
  for (std::thread& t : threads) t.join();
  return errors;
}

std::string what(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    return std::string(typeid(x).name()) + ": " + x.what();
  }
}

TEST(CollectiveTags, EveryFeatureHasItsOwnTagAboveTheBuckets) {
  std::set<uint32_t> seen;
  for (uint32_t t = kBucketTagLimit; t < static_cast<uint32_t>(Tag::kEnd); ++t) {
    EXPECT_STRNE(tag_name(static_cast<Tag>(t)), "") << "tag " << t << " has no name in tag_name()";
    EXPECT_TRUE(seen.insert(t).second);
  }
  // Every named tag is one of these: the enum has no gaps and no value assigned twice.
  std::set<std::string> names;
  for (uint32_t t : seen) EXPECT_TRUE(names.insert(tag_name(static_cast<Tag>(t))).second) << tag_name(static_cast<Tag>(t));
  EXPECT_EQ(static_cast<uint32_t>(Tag::kMetrics), kBucketTagLimit);
  EXPECT_EQ(bucket_tag(0), 1u);
  EXPECT_LT(bucket_tag(kBucketTagLimit - 2), kBucketTagLimit);
  EXPECT_THROW(bucket_tag(kBucketTagLimit - 1), ValueError);
}

TEST(CrossWorker, BytesOfAnyLengthReachEveryRank) {
  std::vector<std::vector<std::string>> gathered(kRanks);
  std::vector<std::string> broadcast(kRanks);
  auto errors = on_ranks([&](int r, Communicator* c) {
    std::string mine(static_cast<size_t>(r * 1000), static_cast<char>('a' + r));  // rank 0 sends nothing
    gathered[static_cast<size_t>(r)] = all_gather_bytes(c, mine, kOptions);
    std::string b = r == 1 ? std::string("from one\0with a zero", 20) : "ignored";
    broadcast_bytes(c, b, 1, kOptions);
    broadcast[static_cast<size_t>(r)] = b;
  });
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_FALSE(errors[static_cast<size_t>(r)]) << what(errors[static_cast<size_t>(r)]);
    ASSERT_EQ(gathered[static_cast<size_t>(r)].size(), size_t{kRanks});
    for (int s = 0; s < kRanks; ++s)
      EXPECT_EQ(gathered[static_cast<size_t>(r)][static_cast<size_t>(s)],
                std::string(static_cast<size_t>(s * 1000), static_cast<char>('a' + s)));
    EXPECT_EQ(broadcast[static_cast<size_t>(r)], std::string("from one\0with a zero", 20));
  }
  EXPECT_EQ(all_gather_bytes(nullptr, "alone", kOptions), std::vector<std::string>{"alone"});
}

TEST(CrossWorker, AgreeReducesOneValue) {
  std::vector<int64_t> sums(kRanks), maxima(kRanks), minima(kRanks);
  on_ranks([&](int r, Communicator* c) {
    sums[static_cast<size_t>(r)] = agree(c, r + 1, ReduceOp::SUM, kOptions);
    maxima[static_cast<size_t>(r)] = agree(c, r == 1 ? 7 : 0, ReduceOp::MAX, kOptions);
    minima[static_cast<size_t>(r)] = agree(c, 10 - r, ReduceOp::MIN, kOptions);
  });
  EXPECT_EQ(sums, std::vector<int64_t>(kRanks, 6));
  EXPECT_EQ(maxima, std::vector<int64_t>(kRanks, 7));
  EXPECT_EQ(minima, std::vector<int64_t>(kRanks, 8));
  EXPECT_THROW(agree(nullptr, 1, ReduceOp::MEAN, kOptions), ValueError);
}

TEST(CrossWorker, AnErrorOfOneRankIsRaisedOnEveryRankWithItsType) {
  auto errors = on_ranks([&](int r, Communicator* c) {
    std::exception_ptr mine;
    if (r == 1) mine = std::make_exception_ptr(NotFoundError("no file on rank 1"));
    if (r == 2) mine = std::make_exception_ptr(ValueError("bad value on rank 2"));
    raise_if_any(c, mine, kOptions);
  });
  for (const std::exception_ptr& e : errors) {
    ASSERT_TRUE(e);
    // The lowest failing rank's error, as NotFoundError, everywhere (rank 2 included, which raised its own).
    try {
      std::rethrow_exception(e);
    } catch (const NotFoundError& x) {
      EXPECT_STREQ(x.what(), "no file on rank 1");
    } catch (const std::exception& x) {
      ADD_FAILURE() << "another type: " << what(e);
    }
  }
  EXPECT_NO_THROW(raise_if_any(nullptr, nullptr, kOptions));
  EXPECT_THROW(raise_if_any(nullptr, std::make_exception_ptr(DataLossError("x")), kOptions), DataLossError);
}

TEST(CrossWorker, OnChiefReturnsEverywhereOnlyOnceTheChiefIsDone) {
  std::atomic<bool> done{false};
  std::atomic<int> ran{0}, early{0};
  auto errors = on_ranks([&](int, Communicator* c) {
    on_chief(c, [&] {
      ++ran;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the others must wait this out
      // A nested on_chief or read_on_chief runs here alone: the others are waiting in the outer one.
      if (read_on_chief(c, [] { return std::vector<std::string>{"x"}; }, kOptions) == std::vector<std::string>{"x"})
        on_chief(c, [&] { done = true; }, kOptions);
    }, kOptions);
    if (!done) ++early;
  });
  for (const std::exception_ptr& e : errors) EXPECT_FALSE(e) << what(e);
  EXPECT_EQ(ran, 1);
  EXPECT_EQ(early, 0);
}

TEST(CrossWorker, OnChiefRaisesTheChiefsErrorEverywhereAndReadOnChiefSharesItsBytes) {
  auto errors = on_ranks([&](int, Communicator* c) {
    on_chief(c, [] { throw DataLossError("the chief's file is corrupted"); }, kOptions);
  });
  for (const std::exception_ptr& e : errors) EXPECT_NE(what(e).find("the chief's file is corrupted"), std::string::npos);
  for (const std::exception_ptr& e : errors) EXPECT_THROW(std::rethrow_exception(e), DataLossError);

  std::vector<std::vector<std::string>> read(kRanks);
  errors = on_ranks([&](int r, Communicator* c) {
    read[static_cast<size_t>(r)] = read_on_chief(c, [r] { return std::vector<std::string>{"config", "", std::to_string(r)}; },
                                                 kOptions);
  });
  for (int r = 0; r < kRanks; ++r) EXPECT_EQ(read[static_cast<size_t>(r)], (std::vector<std::string>{"config", "", "0"}));
}

}  // namespace
}  // namespace lockstep::distribute
