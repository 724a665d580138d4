// Each Dataset transformation against TF's documented behaviour: outputs, cardinality, shuffle's
// determinism, range-for, the node graph, prefetch's threads and exceptions, and the error messages.
#include "lockstep/data/dataset.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <numeric>
#include <ranges>
#include <thread>

#include "data_test_util.h"
#include "lockstep/data/dataset_node.h"
#include "../error_of.h"

namespace lockstep::data {
namespace {

using testing::batches;
using testing::i64;
using testing::values;
using V = std::vector<int64_t>;

V iota(int64_t n) {
  V v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  return v;
}

using lockstep::testing::error_of;

TEST(Dataset, RangeYieldsInt64Scalars) {
  EXPECT_EQ(values(Dataset::range(0, 5)), iota(5));
  EXPECT_EQ(values(Dataset::range(5, 0, -2)), (V{5, 3, 1}));
  EXPECT_EQ(values(Dataset::range(1, 8, 3)), (V{1, 4, 7}));
  EXPECT_TRUE(values(Dataset::range(2, 2)).empty());
  Element e = *Dataset::range(3, 4).make_iterator().next();
  EXPECT_EQ(e.x().dtype(), DType::int64);
  EXPECT_EQ(e.x().rank(), 0);
  EXPECT_FALSE(e.y().defined());
}

TEST(Dataset, FromTensorSlicesYieldsViewsOfRows) {
  Tensor x = testing::rows_tensor(4), y = testing::labels_tensor(4);
  Iterator it = Dataset::from_tensor_slices(x, y).make_iterator();
  for (int64_t i = 0; i < 4; ++i) {
    Element e = *it.next();
    EXPECT_EQ(e.x().storage(), x.storage());  // a view, not a copy
    EXPECT_EQ(e.x().to_vector<float>(), (std::vector<float>{float(i), i + 0.25f, i + 0.5f}));
    EXPECT_EQ(e.y().item<int64_t>(), i % 10);
    EXPECT_FALSE(e.sample_weight().defined());
  }
  EXPECT_FALSE(it.next().has_value());
  EXPECT_FALSE(it.next().has_value());  // the end is sticky
}

TEST(Dataset, ShardTakesEveryNthFromIndex) {
  EXPECT_EQ(values(Dataset::range(0, 10).shard(3, 1)), (V{1, 4, 7}));
  EXPECT_EQ(values(Dataset::range(0, 10).shard(3, 0)), (V{0, 3, 6, 9}));
  EXPECT_EQ(values(Dataset::range(0, 10).shard(1, 0)), iota(10));
}

TEST(Dataset, BatchKeepsOrDropsTheRemainder) {
  EXPECT_EQ(batches(Dataset::range(0, 10).batch(4)), (std::vector<V>{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9}}));
  EXPECT_EQ(batches(Dataset::range(0, 10).batch(4, true)), (std::vector<V>{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  EXPECT_EQ(batches(Dataset::range(0, 8).batch(4, true)).size(), 2u);
  EXPECT_TRUE(batches(Dataset::range(0, 3).batch(4, true)).empty());
}

TEST(Dataset, BatchStacksEveryComponentContiguously) {
  Tensor x = testing::rows_tensor(10), y = testing::labels_tensor(10), w = testing::rows_tensor(10);
  // The lazy path (gathering rows of the source) and the value path (after map) must agree.
  Dataset lazy = Dataset::from_tensor_slices(x, y, w).shuffle(10, 3).batch(4);
  Dataset values_path = Dataset::from_tensor_slices(x, y, w).map([](const Element& e) { return e; }).shuffle(10, 3).batch(4);
  Iterator a = lazy.make_iterator(0), b = values_path.make_iterator(0);
  for (int k = 0; k < 3; ++k) {
    Element ea = *a.next(), eb = *b.next();
    EXPECT_TRUE(testing::same_element(ea, eb));
    EXPECT_TRUE(ea.x().is_contiguous() && eb.x().is_contiguous());
    EXPECT_EQ(ea.x().shape(), (Shape{k < 2 ? 4 : 2, 3}));
    EXPECT_EQ(ea.y().shape(), (Shape{k < 2 ? 4 : 2}));
    std::vector<float> xs = ea.x().to_vector<float>();
    std::vector<int64_t> ys = ea.y().to_vector<int64_t>();
    for (size_t r = 0; r < ys.size(); ++r) EXPECT_EQ(int64_t(xs[r * 3]) % 10, ys[r]);  // rows stay paired
  }
  EXPECT_FALSE(a.next().has_value());
}

TEST(Dataset, TakeAndSkip) {
  EXPECT_EQ(values(Dataset::range(0, 10).take(3)), (V{0, 1, 2}));
  EXPECT_EQ(values(Dataset::range(0, 10).take(20)), iota(10));
  EXPECT_EQ(values(Dataset::range(0, 10).take(-1)), iota(10));
  EXPECT_TRUE(values(Dataset::range(0, 10).take(0)).empty());
  EXPECT_EQ(values(Dataset::range(0, 10).skip(7)), (V{7, 8, 9}));
  EXPECT_TRUE(values(Dataset::range(0, 10).skip(-1)).empty());
  EXPECT_TRUE(values(Dataset::range(0, 10).skip(11)).empty());
  EXPECT_EQ(values(Dataset::range(0, 10).skip(2).take(3)), (V{2, 3, 4}));
}

TEST(Dataset, RepeatCounts) {
  EXPECT_EQ(values(Dataset::range(0, 3).repeat(2)), (V{0, 1, 2, 0, 1, 2}));
  EXPECT_TRUE(values(Dataset::range(0, 3).repeat(0)).empty());
  EXPECT_EQ(values(Dataset::range(0, 3).repeat().take(7)), (V{0, 1, 2, 0, 1, 2, 0}));
  EXPECT_EQ(values(Dataset::range(0, 3).repeat(), 8).size(), 8u);
  // An empty input ends a forever-repeat instead of spinning (TF's rule).
  EXPECT_TRUE(values(Dataset::range(0, 0).repeat()).empty());
  EXPECT_TRUE(values(Dataset::range(0, 5).filter([](const Element&) { return false; }).repeat()).empty());
}

TEST(Dataset, FilterAndMap) {
  auto even = [](const Element& e) { return e.x().item<int64_t>() % 2 == 0; };
  EXPECT_EQ(values(Dataset::range(0, 10).filter(even)), (V{0, 2, 4, 6, 8}));
  auto twice = [](const Element& e) { return Element{i64(2 * e.x().item<int64_t>()), i64(e.x().item<int64_t>()), {}}; };
  Dataset mapped = Dataset::range(0, 4).map(twice);
  EXPECT_EQ(values(mapped), (V{0, 2, 4, 6}));
  EXPECT_EQ((*mapped.make_iterator().next()).y().item<int64_t>(), 0);
  // A filter over a source keeps its items lazy: the batch below still gathers rows.
  EXPECT_EQ(batches(Dataset::range(0, 10).filter(even).batch(2)), (std::vector<V>{{0, 2}, {4, 6}, {8}}));
}

TEST(Dataset, CacheReplaysWithoutRunningTheInputAgain) {
  auto calls = std::make_shared<std::atomic<int>>(0);
  Dataset ds = Dataset::range(0, 5).map([calls](const Element& e) {
    ++*calls;
    return Element{i64(e.x().item<int64_t>() * 10), {}, {}};
  });
  Dataset cached = ds.cache();
  EXPECT_EQ(values(cached.repeat(3)), (V{0, 10, 20, 30, 40, 0, 10, 20, 30, 40, 0, 10, 20, 30, 40}));
  EXPECT_EQ(calls->load(), 5);
  EXPECT_EQ(values(cached), (V{0, 10, 20, 30, 40}));  // a new iterator reads the cache too
  EXPECT_EQ(calls->load(), 5);
  // A pass that stops early does not publish a partial cache.
  Dataset other = ds.cache();
  EXPECT_EQ(values(other.take(2)), (V{0, 10}));
  EXPECT_EQ(values(other), (V{0, 10, 20, 30, 40}));
  EXPECT_EQ(calls->load(), 5 + 2 + 5);
}

TEST(Dataset, CardinalityFollowsTF) {
  auto any = [](const Element&) { return true; };
  Dataset r = Dataset::range(0, 10);
  EXPECT_EQ(r.cardinality(), 10);
  EXPECT_EQ(Dataset::range(0, 10, 3).cardinality(), 4);
  EXPECT_EQ(Dataset::range(10, 0, -4).cardinality(), 3);
  EXPECT_EQ(r.batch(3).cardinality(), 4);
  EXPECT_EQ(r.batch(3, true).cardinality(), 3);
  EXPECT_EQ(r.repeat().cardinality(), kInfiniteCardinality);
  EXPECT_EQ(r.repeat(3).cardinality(), 30);
  EXPECT_EQ(r.repeat(0).cardinality(), 0);
  EXPECT_EQ(r.filter(any).cardinality(), kUnknownCardinality);
  EXPECT_EQ(r.filter(any).repeat().cardinality(), kInfiniteCardinality);
  EXPECT_EQ(r.filter(any).repeat(2).cardinality(), kUnknownCardinality);
  EXPECT_EQ(r.filter(any).batch(2).cardinality(), kUnknownCardinality);
  EXPECT_EQ(r.repeat().take(3).cardinality(), 3);
  EXPECT_EQ(r.repeat().batch(4).cardinality(), kInfiniteCardinality);
  EXPECT_EQ(r.take(3).cardinality(), 3);
  EXPECT_EQ(r.take(30).cardinality(), 10);
  EXPECT_EQ(r.skip(4).cardinality(), 6);
  EXPECT_EQ(r.skip(40).cardinality(), 0);
  EXPECT_EQ(r.shard(3, 0).cardinality(), 4);
  EXPECT_EQ(r.shard(3, 1).cardinality(), 3);
  EXPECT_EQ(Dataset::range(0, 0).repeat().cardinality(), 0);
  EXPECT_EQ(r.shuffle(4).map([](const Element& e) { return e; }).cache().prefetch(2).cardinality(), 10);
}

TEST(Dataset, ShuffleIsADeterministicPermutation) {
  Dataset ds = Dataset::range(0, 100);
  for (int64_t buffer : {1, 10, 100, 1000}) {
    V order = values(ds.shuffle(buffer, 42));
    V sorted = order;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, iota(100)) << "buffer " << buffer;
    EXPECT_EQ(order, values(ds.shuffle(buffer, 42))) << "same seed, same order";
    if (buffer == 1) {
      EXPECT_EQ(order, iota(100));  // a one-element buffer cannot reorder
    } else {
      EXPECT_NE(order, values(ds.shuffle(buffer, 43))) << "another seed, another order";
    }
  }
  // With a buffer of 10, output i is drawn from the first i + 10 input elements.
  V local = values(ds.shuffle(10, 5));
  for (size_t i = 0; i < local.size(); ++i) EXPECT_LE(local[i], int64_t(i) + 9);
  // No seed: a fixed default, so runs repeat.
  EXPECT_EQ(values(ds.shuffle(100)), values(ds.shuffle(100, kDefaultShuffleSeed)));
}

TEST(Dataset, ShuffleReshufflesPerEpochAndPerIterator) {
  Dataset ds = Dataset::range(0, 50).shuffle(50, 7);
  V two = values(ds.repeat(2));
  V first(two.begin(), two.begin() + 50), second(two.begin() + 50, two.end());
  EXPECT_NE(first, second);
  std::sort(second.begin(), second.end());
  EXPECT_EQ(second, iota(50));
  // Each new iterator reshuffles too; make_iterator(n) reproduces iterator n.
  V it0 = values(ds), it1 = values(ds);
  EXPECT_NE(it0, it1);
  auto drain_all = [](Iterator it) {
    V out;
    while (auto e = it.next()) out.push_back(e->x().item<int64_t>());
    return out;
  };
  EXPECT_EQ(drain_all(ds.make_iterator(0)), it0);
  EXPECT_EQ(drain_all(ds.make_iterator(1)), it1);
  // Without reshuffling every epoch has the same order.
  V same = values(Dataset::range(0, 50).shuffle(50, 7, false).repeat(2));
  EXPECT_EQ(V(same.begin(), same.begin() + 50), V(same.begin() + 50, same.end()));
}

TEST(Dataset, RangeForAndIteratorProtocol) {
  int64_t n = 0;
  for (auto& e : Dataset::range(0, 5)) EXPECT_EQ(e.x().item<int64_t>(), n++);
  EXPECT_EQ(n, 5);
  Iterator it = Dataset::range(0, 2).begin();
  EXPECT_FALSE(it == std::default_sentinel);
  EXPECT_EQ((*it).x().item<int64_t>(), 0);
  EXPECT_EQ((*it).x().item<int64_t>(), 0);  // dereferencing twice does not advance
  ++it;
  EXPECT_EQ(it.next()->x().item<int64_t>(), 1);  // next() after a look-ahead returns the looked-at element
  EXPECT_TRUE(it == std::default_sentinel);
  EXPECT_NE(error_of<RuntimeError>([&] { *it; }).find("end"), std::string::npos);
  Iterator again = Dataset::range(0, 3).begin();
  EXPECT_EQ((*again++).x().item<int64_t>(), 0);
  EXPECT_EQ((*again++).x().item<int64_t>(), 1);
  static_assert(std::input_iterator<Iterator>);
  static_assert(std::ranges::input_range<Dataset>);
}

TEST(Dataset, NodeGraphIsInspectableAndRewritable) {
  Dataset ds = Dataset::range(0, 10).shuffle(5, 1).batch(4, true).prefetch(kAutotune);
  const DatasetNode& prefetch = ds.node();
  EXPECT_EQ(prefetch.op(), "prefetch");
  EXPECT_EQ(prefetch.params()["buffer_size"], 2);
  const DatasetNode& batch = *prefetch.inputs()[0];
  EXPECT_EQ(batch.str(), "batch(batch_size=4, drop_remainder=true)");
  EXPECT_EQ(batch.inputs()[0]->op(), "shuffle");
  EXPECT_EQ(batch.inputs()[0]->inputs()[0]->op(), "range");
  // A rewrite: the same stages above a shard of the source.
  NodePtr sharded = Dataset(batch.inputs()[0]->inputs()[0]).shard(2, 1).node_ptr();
  NodePtr rebuilt = prefetch.with_inputs({batch.with_inputs({batch.inputs()[0]->with_inputs({sharded})})});
  EXPECT_EQ(Dataset(rebuilt).cardinality(), 1);
  EXPECT_EQ(values(Dataset(rebuilt)).size(), 4u);
}

TEST(Dataset, OptionsTravelWithTheDataset) {
  Options o;
  o.auto_shard_policy = Options::AutoShardPolicy::DATA;
  Dataset ds = Dataset::range(0, 4).with_options(o).batch(2);
  EXPECT_EQ(ds.options().auto_shard_policy, Options::AutoShardPolicy::DATA);
  EXPECT_EQ(Dataset::range(0, 4).options().auto_shard_policy, Options::AutoShardPolicy::AUTO);
}

TEST(Prefetch, YieldsTheSameElements) {
  Dataset ds = Dataset::range(0, 100).shuffle(30, 2).batch(7);
  EXPECT_EQ(batches(ds.prefetch(3)), batches(ds));
  EXPECT_EQ(values(Dataset::range(0, 20).prefetch(kAutotune).map([](const Element& e) { return e; })), iota(20));
  EXPECT_EQ(values(Dataset::range(0, 5).prefetch(0)), iota(5));
}

TEST(Prefetch, RethrowsBackgroundErrorsFromNext) {
  Dataset ds = Dataset::range(0, 10)
                   .map([](const Element& e) {
                     LS_CHECK(e.x().item<int64_t>() != 5, ValueError, "element 5 is bad");
                     return e;
                   })
                   .prefetch(2);
  Iterator it = ds.make_iterator();
  for (int64_t i = 0; i < 5; ++i) EXPECT_EQ(it.next()->x().item<int64_t>(), i);
  EXPECT_EQ(error_of<ValueError>([&] { it.next(); }), "element 5 is bad");
  EXPECT_EQ(error_of<ValueError>([&] { it.next(); }), "element 5 is bad");  // sticky, never a hang
}

// A destructor that waited for its input to end instead of stopping the thread would never return on the
// repeated inputs, and would map all 1000 elements of the last one.
TEST(Prefetch, StopsItsThreadWhenDestroyed) {
  std::atomic<int> mapped{0};
  auto slow = [&mapped](const Element& e) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ++mapped;
    return e;
  };
  for (int round = 0; round < 20; ++round) {
    Dataset ds = Dataset::range(0, 1000).map(slow).repeat().prefetch(8).batch(2).prefetch(4);
    Iterator it = ds.make_iterator();
    if (round % 2) it.next();  // half of them started, half never started
  }  // each destructor must stop and join its threads
  { Dataset::range(0, 10).prefetch(2).make_iterator().next(); }
  // Assigning over an iterator stops its threads before its pipeline goes away.
  mapped = 0;
  Iterator it = Dataset::range(0, 1000).map(slow).prefetch(4).make_iterator();
  it.next();
  it = Dataset::range(0, 3).make_iterator();
  EXPECT_EQ(it.next()->x().item<int64_t>(), 0);
  // The element taken, a full buffer of 4 and the one being mapped when the thread was told to stop.
  EXPECT_LE(mapped.load(), 1 + 4 + 1);
}

TEST(Dataset, ErrorsNameTheArgumentAndTheFix) {
  Tensor x = testing::rows_tensor(4), y = testing::labels_tensor(3);
  std::string m = error_of<ValueError>([&] { Dataset::from_tensor_slices(x, y); });
  EXPECT_NE(m.find("different lengths along axis 0 (float32 (4, 3) and int64 (3,))"), std::string::npos) << m;
  m = error_of<ValueError>([&] { Dataset::from_tensor_slices(i64(3)); });
  EXPECT_NE(m.find("scalar"), std::string::npos) << m;
  m = error_of<InvalidArgumentError>([&] { Dataset::from_tensor_slices(Tensor()); });
  EXPECT_NE(m.find("undefined"), std::string::npos) << m;
  m = error_of<InvalidArgumentError>([] { Dataset::range(0, 5).batch(0); });
  EXPECT_NE(m.find("batch_size must be at least 1, got 0"), std::string::npos) << m;
  m = error_of<InvalidArgumentError>([] { Dataset::range(0, 5).shard(3, 3); });
  EXPECT_NE(m.find("index must be in [0, num_shards) = [0, 3), got 3"), std::string::npos) << m;
  m = error_of<InvalidArgumentError>([] { Dataset::range(0, 5).shard(0, 0); });
  EXPECT_NE(m.find("num_shards must be at least 1, got 0"), std::string::npos) << m;
  m = error_of<InvalidArgumentError>([] { Dataset::range(0, 5).shuffle(0); });
  EXPECT_NE(m.find("buffer_size must be at least 1, got 0"), std::string::npos) << m;
  m = error_of<InvalidArgumentError>([] { Dataset::range(0, 5).prefetch(-5); });
  EXPECT_NE(m.find("got -5"), std::string::npos) << m;
  m = error_of<InvalidArgumentError>([] { Dataset::range(0, 5, 0); });
  EXPECT_NE(m.find("step must not be 0"), std::string::npos) << m;
  // Elements of one batch that do not stack.
  Dataset ragged = Dataset::range(1, 4).map([](const Element& e) {
    return Element{Tensor::empty({e.x().item<int64_t>()}, DType::float32), {}, {}};
  });
  m = error_of<InvalidArgumentError>([&] { ragged.batch(3).make_iterator().next(); });
  EXPECT_NE(m.find("element 1 of a batch is (float32 (2,), None, None) but element 0 is (float32 (1,), None, None)"),
            std::string::npos)
      << m;
}

// The 60000 x 28 x 28 case: every row exactly once per epoch, in batches of 64; prints the time.
TEST(Dataset, ShuffleBatchOfAMnistSizedEpoch) {
  constexpr int64_t n = 60000;
  Tensor x = Tensor::empty({n, 28, 28}, DType::float32);
  Tensor y = Tensor::empty({n}, DType::uint8);
  for (int64_t i = 0; i < n; ++i) {
    x.data<float>()[i * 784] = static_cast<float>(i);
    y.data<uint8_t>()[i] = static_cast<uint8_t>(i % 10);
  }
  Dataset ds = Dataset::from_tensor_slices(x, y).shuffle(n, 1).batch(64);
  std::vector<char> seen(n, 0);
  int64_t batch_count = 0;
  auto start = std::chrono::steady_clock::now();
  for (const Batch& b : ds) {
    ++batch_count;
    const float* p = b.x().data<float>();
    for (int64_t r = 0; r < b.x().dim(0); ++r) seen[static_cast<size_t>(p[r * 784])]++;
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("one epoch of from_tensor_slices(60000x28x28 f32).shuffle(60000).batch(64): %.3f s\n", seconds);
  EXPECT_EQ(batch_count, 938);
  EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](char c) { return c == 1; }));
}

}  // namespace
}  // namespace lockstep::data
