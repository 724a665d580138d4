// Iterator::save_state / restore_state: a fresh iterator of a rebuilt pipeline (as after a restart)
// restored from a saved state must yield bitwise what the saved iterator yields next, at any point:
// inside a shuffle buffer, across repeat epochs, through batch, cache and prefetch, mid range-for.
#include <gtest/gtest.h>

#include <cstring>

#include "data_test_util.h"
#include "lockstep/data/dataset.h"

namespace lockstep::data {
namespace {

using nlohmann::json;
using testing::drain;
using testing::expect_resumes;
using testing::same_element;

Element plus_one(const Element& e) {
  Tensor x = e.x().clone();
  float* p = x.data<float>();
  for (int64_t i = 0; i < x.numel(); ++i) p[i] += 1;
  return {x, e.y(), {}};
}

Dataset slices(int64_t n) { return Dataset::from_tensor_slices(testing::rows_tensor(n), testing::labels_tensor(n)); }

TEST(IteratorState, InsideAShuffleBuffer) {
  for (size_t k : {0, 1, 17, 69, 70, 99, 100}) expect_resumes([] { return slices(100).shuffle(30, 7); }, k);
}

TEST(IteratorState, AcrossRepeatEpochs) {
  for (size_t k : {99, 100, 101, 250}) expect_resumes([] { return slices(100).shuffle(100, 3).repeat(4); }, k, 120);
  // A shuffle above a repeat: its buffer spans epochs.
  for (size_t k : {5, 130}) expect_resumes([] { return slices(50).repeat().shuffle(40, 9); }, k);
  // Nested: a reshuffling shuffle inside a repeat inside a repeat.
  expect_resumes([] { return Dataset::range(0, 7).shuffle(7, 1).repeat(3).shuffle(4, 2).repeat(2); }, 30);
}

TEST(IteratorState, ThroughBatchMapFilterTakeSkipShard) {
  auto make = [] {
    return slices(300)
        .skip(3)
        .filter([](const Element& e) { return e.y().item<int64_t>() != 4; })
        .shard(2, 1)
        .map(plus_one)
        .shuffle(25, 11)
        .take(100)
        .repeat()
        .batch(7);
  };
  for (size_t k : {0, 3, 14, 15, 33}) expect_resumes(make, k, 20);
  expect_resumes([] { return slices(100).shuffle(100, 1).batch(8, true).repeat(); }, 23, 10);
}

TEST(IteratorState, ThroughPrefetch) {
  auto make = [] { return slices(200).shuffle(64, 5).repeat(3).batch(9).prefetch(3); };
  for (size_t k : {0, 1, 10, 22, 23, 66, 67}) expect_resumes(make, k, 10);
  expect_resumes([] { return slices(40).prefetch(2).shuffle(16, 3).prefetch(kAutotune); }, 13);
}

TEST(IteratorState, ThroughCacheFillingAndReplaying) {
  auto make = [] { return slices(30).map(plus_one).cache().shuffle(30, 4).repeat(3); };
  // Epoch 0 fills the cache, later epochs read it; the rebuilt pipeline's cache starts empty.
  for (size_t k : {10, 30, 45, 75}) expect_resumes(make, k);
  // Restoring into a pipeline whose cache is already filled (same process) reuses it.
  Dataset ds = make();
  Iterator a = ds.make_iterator(0);
  drain(a, 50);
  json state = a.save_state();
  std::vector<Element> expected = drain(a, 30);
  Iterator b = ds.make_iterator(1);
  b.restore_state(state);
  std::vector<Element> actual = drain(b, 30);
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_TRUE(same_element(actual[i], expected[i]));
}

TEST(IteratorState, AtTheEndStaysAtTheEnd) {
  expect_resumes([] { return slices(10).shuffle(4, 1).batch(3); }, 4, 5);
  expect_resumes([] { return Dataset::range(0, 0).repeat(); }, 0, 5);
}

TEST(IteratorState, MidRangeForResumesAtTheCurrentElement) {
  Dataset ds = slices(50).shuffle(50, 8).batch(4);
  Iterator it = ds.make_iterator(0);
  json state;
  Element current;
  std::vector<Element> after;
  int n = 0;
  for (; it != std::default_sentinel; ++it, ++n) {  // what range-for does: the iterator looks ahead
    if (n == 3) {
      current = *it;
      state = it.save_state();
    } else if (n > 3) {
      after.push_back(*it);
    }
  }
  Iterator restored = ds.make_iterator(0);
  restored.restore_state(state);
  EXPECT_TRUE(same_element(*restored.next(), current));
  std::vector<Element> rest = drain(restored, 100);
  ASSERT_EQ(rest.size(), after.size());
  for (size_t i = 0; i < rest.size(); ++i) EXPECT_TRUE(same_element(rest[i], after[i]));
}

TEST(IteratorState, IsSmallForAMnistSizedShuffle) {
  Tensor x = Tensor::empty({60000, 28, 28}, DType::float32), y = Tensor::empty({60000}, DType::uint8);
  std::memset(x.raw_data(), 0, 60000 * 784 * 4);
  std::memset(y.raw_data(), 0, 60000);
  auto make = [&] { return Dataset::from_tensor_slices(x, y).shuffle(60000, 1).repeat().batch(64).prefetch(2); };
  Iterator it = make().make_iterator();
  drain(it, 1500);  // into the second epoch
  json state = it.save_state();
  EXPECT_LT(state.dump().size(), 1500u) << state.dump();
  Iterator restored = make().make_iterator();
  restored.restore_state(state);
  EXPECT_TRUE(same_element(*restored.next(), *it.next()));
}

TEST(IteratorState, ADifferentPipelineIsRefusedByName) {
  Iterator a = slices(100).shuffle(30, 7).batch(4).make_iterator();
  a.next();
  json state = a.save_state();
  Iterator b = slices(100).shuffle(31, 7).batch(4).make_iterator();
  try {
    b.restore_state(state);
    FAIL() << "restore_state accepted another pipeline";
  } catch (const ValueError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("shuffle(buffer_size=30"), std::string::npos) << m;
    EXPECT_NE(m.find("shuffle(buffer_size=31"), std::string::npos) << m;
  }
  Iterator c = slices(100).shuffle(30, 7).make_iterator();
  EXPECT_THROW(c.restore_state(state), ValueError);
  EXPECT_THROW(c.restore_state(json{{"format", "something else"}}), ValueError);
  json broken = state;
  broken["state"] = json::object();
  Iterator d = slices(100).shuffle(30, 7).batch(4).make_iterator();
  EXPECT_THROW(d.restore_state(broken), ValueError);
}

// Found by fuzz_dataset_state: a position of 5.18e20 (a float) was converted to an integer, which is undefined
// behaviour; a state holds integers only.
TEST(IteratorState, RefusesNumbersThatAreNotIntegers) {
  Iterator a = slices(100).shuffle(30, 7).batch(4).make_iterator();
  a.next();
  const json saved = a.save_state();
  for (const json& bad : {json(5.18e20), json(1.5)}) {
    json state = saved;
    state["state"]["input"]["input_at_start"]["position"] = bad;
    Iterator b = slices(100).shuffle(30, 7).batch(4).make_iterator();
    try {
      b.restore_state(state);
      FAIL() << "restore_state accepted position " << bad;
    } catch (const ValueError& e) {
      EXPECT_NE(std::string(e.what()).find("a number that is not an integer"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace lockstep::data
