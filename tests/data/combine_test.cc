// The stages that combine or regroup elements: zip, concatenate, sample_from_datasets, interleave, flat_map,
// unbatch, padded_batch, window, scan and from_generator. Each is checked for its values (TF's order) and for
// resuming bitwise from a saved iterator state.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <memory>

#include "data_test_util.h"
#include "lockstep/data/dataset.h"

namespace lockstep::data {
namespace {

using testing::batches;
using testing::expect_resumes;
using testing::i64;
using testing::values;

// A dataset whose element i is the int64 vector 0, 1, ..., lengths[i] - 1.
Dataset ragged(std::vector<int64_t> lengths) {
  Tensor n = Tensor::empty({static_cast<int64_t>(lengths.size())}, DType::int64);
  std::copy(lengths.begin(), lengths.end(), n.data<int64_t>());
  return Dataset::from_tensor_slices(n).map([](const Element& e) {
    const int64_t len = e.x().item<int64_t>();
    Tensor x = Tensor::empty({len}, DType::int64);
    for (int64_t i = 0; i < len; ++i) x.data<int64_t>()[i] = i;
    return Element{x};
  });
}

// 0, 1, ..., n - 1 from a generator, a new one per iterator.
Dataset counting_generator(int64_t n) {
  return Dataset::from_generator([n] {
    auto next = std::make_shared<int64_t>(0);
    return Generator([n, next]() -> std::optional<Element> {
      if (*next >= n) return std::nullopt;
      return Element{i64((*next)++)};
    });
  });
}

TEST(Zip, PairsElementsUntilTheShortestEnds) {
  Dataset ds = Dataset::zip({Dataset::range(0, 5), Dataset::range(10, 13)});
  EXPECT_EQ(ds.cardinality(), 3);
  std::vector<std::pair<int64_t, int64_t>> got;
  for (const Element& e : ds) got.emplace_back(e.x().item<int64_t>(), e.y().item<int64_t>());
  EXPECT_EQ(got, (std::vector<std::pair<int64_t, int64_t>>{{0, 10}, {1, 11}, {2, 12}}));

  Dataset summed = Dataset::zip({Dataset::range(0, 3), Dataset::range(5, 8)}, [](const std::vector<Element>& parts) {
    return Element{i64(parts[0].x().item<int64_t>() + parts[1].x().item<int64_t>())};
  });
  EXPECT_EQ(values(summed), (std::vector<int64_t>{5, 7, 9}));
  EXPECT_EQ(Dataset::zip({Dataset::range(0, 3), Dataset::range(0, 1).repeat()}).cardinality(), 3);
}

TEST(Zip, NestsTheInputsElementsAsATuple) {
  Dataset pairs = Dataset::zip({Dataset::range(0, 3), Dataset::range(10, 13)});
  Iterator it = Dataset::zip({pairs, pairs}).make_iterator();
  Element e = *it.next();
  EXPECT_EQ(e.structure(), "((int64, int64), (int64, int64))");
  EXPECT_EQ(e[1][1].tensor().item<int64_t>(), 10);
  EXPECT_THROW(Dataset::zip({}), InvalidArgumentError);
}

TEST(Concatenate, OneInputAfterTheOther) {
  Dataset ds = Dataset::range(0, 3).concatenate(Dataset::range(10, 12));
  EXPECT_EQ(ds.cardinality(), 5);
  EXPECT_EQ(values(ds), (std::vector<int64_t>{0, 1, 2, 10, 11}));
  EXPECT_EQ(Dataset::range(0, 3).concatenate(Dataset::range(0, 1).repeat()).cardinality(), kInfiniteCardinality);
}

TEST(SampleFromDatasets, DrawsByWeightAndKeepsEachInputsOrder) {
  auto make = [](bool stop) {
    return Dataset::sample_from_datasets({Dataset::range(0, 100), Dataset::range(1000, 1100)}, {0.25, 0.75}, 3, stop);
  };
  std::vector<int64_t> all = values(make(false));
  ASSERT_EQ(all.size(), 200u);
  std::vector<int64_t> low, high;
  for (int64_t v : all) (v < 1000 ? low : high).push_back(v);
  EXPECT_EQ(low, values(Dataset::range(0, 100)));
  EXPECT_EQ(high, values(Dataset::range(1000, 1100)));
  const auto from_low = std::count_if(all.begin(), all.begin() + 100, [](int64_t v) { return v < 1000; });
  EXPECT_GT(from_low, 10);
  EXPECT_LT(from_low, 40);
  EXPECT_EQ(values(make(false)), all);  // the same draws for every iterator

  // Stopping at the first empty input: the 1000s run out first, and the result ends when they are next drawn.
  std::vector<int64_t> stopped = values(make(true));
  EXPECT_LT(stopped.size(), 200u);
  EXPECT_NE(std::find(stopped.begin(), stopped.end(), 1099), stopped.end());
  EXPECT_EQ(std::vector<int64_t>(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(stopped.size())), stopped);

  std::vector<int64_t> never =
      values(Dataset::sample_from_datasets({Dataset::range(0, 5), Dataset::range(100, 105)}, {1, 0}).take(5));
  EXPECT_EQ(never, (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_THROW(Dataset::sample_from_datasets({Dataset::range(0, 5)}, {1, 2}), InvalidArgumentError);
  EXPECT_THROW(Dataset::sample_from_datasets({Dataset::range(0, 5)}, {0}), InvalidArgumentError);
}

TEST(Interleave, TakesBlocksFromACycleOfDatasetsInTFsOrder) {
  auto tens = [](const Element& e) {
    const int64_t x = e.x().item<int64_t>();
    return Dataset::range(x * 10, x * 10 + 3);
  };
  EXPECT_EQ(values(Dataset::range(0, 3).interleave(tens, 2)), (std::vector<int64_t>{0, 10, 1, 11, 2, 12, 20, 21, 22}));
  EXPECT_EQ(values(Dataset::range(0, 3).interleave(tens, 2, 2)),
            (std::vector<int64_t>{0, 1, 10, 11, 2, 12, 20, 21, 22}));
  Dataset counted =
      Dataset::range(0, 4).flat_map([](const Element& e) { return Dataset::range(0, e.x().item<int64_t>()); });
  EXPECT_EQ(values(counted), (std::vector<int64_t>{0, 0, 1, 0, 1, 2}));
  EXPECT_THROW(Dataset::range(0, 3).interleave(tens, 0), InvalidArgumentError);
}

TEST(Unbatch, SplitsBatchesIntoRows) {
  EXPECT_EQ(values(Dataset::range(0, 7).batch(3).unbatch()), values(Dataset::range(0, 7)));
  Dataset pairs = Dataset::from_tensor_slices(testing::rows_tensor(6), testing::labels_tensor(6)).batch(4).unbatch();
  int64_t i = 0;
  for (const Element& e : pairs) {
    EXPECT_EQ(e.x().shape(), Shape({3}));
    EXPECT_EQ(e.x().to_vector<float>()[0], static_cast<float>(i));
    EXPECT_EQ(e.y().item<int64_t>(), i++);
  }
  EXPECT_EQ(i, 6);
  Iterator scalars = Dataset::range(0, 3).unbatch().make_iterator();
  EXPECT_THROW(scalars.next(), InvalidArgumentError);
}

TEST(PaddedBatch, PadsToTheLargestOrAFixedShape) {
  EXPECT_EQ(batches(ragged({1, 3, 2, 2}).padded_batch(3)),
            (std::vector<std::vector<int64_t>>{{0, 0, 0, 0, 1, 2, 0, 1, 0}, {0, 1}}));
  Dataset fixed = ragged({1, 3, 2}).padded_batch(2, {Padding{Padding::Axes::kAll, {4}, -1}}, true);
  EXPECT_EQ(fixed.cardinality(), 1);
  std::vector<Element> got;
  for (const Element& e : fixed) got.push_back(e);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].x().shape(), Shape({2, 4}));
  EXPECT_EQ(got[0].x().to_vector<int64_t>(), (std::vector<int64_t>{0, -1, -1, -1, 0, 1, 2, -1}));
  Iterator too_small = ragged({5}).padded_batch(1, {Padding{Padding::Axes::kAll, {4}}}).make_iterator();
  EXPECT_THROW(too_small.next(), InvalidArgumentError);
  Iterator unpadded = ragged({1, 2}).padded_batch(2, {Padding{Padding::Axes::kNone}}).make_iterator();
  EXPECT_THROW(unpadded.next(), InvalidArgumentError);
}

TEST(Window, StacksOverlappingAndStridedWindows) {
  using Windows = std::vector<std::vector<int64_t>>;
  EXPECT_EQ(batches(Dataset::range(0, 7).window(3, 2)), (Windows{{0, 1, 2}, {2, 3, 4}, {4, 5, 6}, {6}}));
  EXPECT_EQ(Dataset::range(0, 7).window(3, 2).cardinality(), 4);
  EXPECT_EQ(batches(Dataset::range(0, 7).window(3, 2, 1, true)), (Windows{{0, 1, 2}, {2, 3, 4}, {4, 5, 6}}));
  EXPECT_EQ(Dataset::range(0, 7).window(3, 2, 1, true).cardinality(), 3);
  EXPECT_EQ(batches(Dataset::range(0, 7).window(3, 1, 2)),
            (Windows{{0, 2, 4}, {1, 3, 5}, {2, 4, 6}, {3, 5}, {4, 6}, {5}, {6}}));
  EXPECT_EQ(batches(Dataset::range(0, 10).window(2, 4)), (Windows{{0, 1}, {4, 5}, {8, 9}}));
  EXPECT_EQ(batches(Dataset::range(0, 6).window(3)), (Windows{{0, 1, 2}, {3, 4, 5}}));
  Dataset rows = Dataset::from_tensor_slices(testing::rows_tensor(5)).window(2, 1, 1, true);
  for (const Element& e : rows) EXPECT_EQ(e.x().shape(), Shape({2, 3}));
  EXPECT_THROW(Dataset::range(0, 3).window(0), InvalidArgumentError);
}

TEST(Scan, ThreadsAStateThroughTheElements) {
  Dataset sums = Dataset::range(0, 5).scan(Element{i64(0)}, [](const Element& state, const Element& e) {
    Tensor sum = i64(state.x().item<int64_t>() + e.x().item<int64_t>());
    return std::pair{Element{sum}, Element{sum, e.x()}};
  });
  EXPECT_EQ(sums.cardinality(), 5);
  EXPECT_EQ(values(sums), (std::vector<int64_t>{0, 1, 3, 6, 10}));
  EXPECT_EQ(values(sums), (std::vector<int64_t>{0, 1, 3, 6, 10}));  // every iterator starts from initial_state
}

TEST(FromGenerator, AFreshGeneratorPerIterator) {
  Dataset ds = counting_generator(4);
  EXPECT_EQ(ds.cardinality(), kUnknownCardinality);
  EXPECT_EQ(values(ds), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(values(ds.repeat(2)), (std::vector<int64_t>{0, 1, 2, 3, 0, 1, 2, 3}));
}

// Every stage under a shuffle and a repeat, so that a restored state must carry their positions too.
TEST(CombineState, ResumesBitwise) {
  auto shuffled = [](int64_t a, int64_t b, uint64_t seed) { return Dataset::range(a, b).shuffle(7, seed).repeat(2); };
  const std::vector<std::pair<const char*, std::function<Dataset()>>> pipelines = {
      {"zip",
       [&] {
         return Dataset::zip({shuffled(0, 20, 1), shuffled(100, 130, 2)});
       }},
      {"concatenate", [&] { return shuffled(0, 15, 1).concatenate(shuffled(50, 60, 2)); }},
      {"sample_from_datasets",
       [&] {
         return Dataset::sample_from_datasets({shuffled(0, 20, 1), shuffled(100, 120, 2)}, {0.3, 0.7}, 9);
       }},
      {"interleave",
       [&] {
         return shuffled(0, 6, 1).interleave(
             [](const Element& e) { return Dataset::range(0, e.x().item<int64_t>()).shuffle(3, 4); }, 3, 2);
       }},
      {"unbatch", [&] { return shuffled(0, 20, 1).batch(3).unbatch(); }},
      {"padded_batch",
       [&] {
         return ragged({3, 1, 4, 1, 5, 9, 2, 6}).shuffle(5, 3).repeat(8).padded_batch(3);
       }},
      {"window overlapping", [&] { return shuffled(0, 30, 1).window(5, 2, 2); }},
      {"window apart", [&] { return shuffled(0, 60, 1).window(2, 5); }},
      {"scan",
       [&] {
         return shuffled(0, 20, 1).scan(Element{i64(7)}, [](const Element& s, const Element& e) {
           Tensor next = i64((s.x().item<int64_t>() * 3 + e.x().item<int64_t>()) % 1000003);
           return std::pair{Element{next}, Element{next}};
         });
       }},
      {"from_generator", [] { return counting_generator(12).shuffle(4, 5).repeat(2); }},
  };
  for (const auto& [name, make] : pipelines) {
    SCOPED_TRACE(name);
    for (size_t k : {0, 1, 5, 13, 21}) expect_resumes(make, k, 30);
  }
}

}  // namespace
}  // namespace lockstep::data
