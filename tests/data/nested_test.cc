// Nested elements (tf.data's tuples, lists and dicts with string leaves) through every kind of stage: zip and
// interleave, batch / unbatch / padded_batch, cache, shuffle, scan, bitwise resume, and the errors on mismatched
// structures.
#include <gtest/gtest.h>

#include "../error_of.h"
#include "data_test_util.h"
#include "lockstep/data/dataset.h"
#include "lockstep/tensor/ops.h"  // from_vector

namespace lockstep::data {
namespace {

using lockstep::testing::error_of;
using testing::drain;
using testing::expect_resumes;
using testing::i64;
using testing::same_element;

// Every element of ds.
std::vector<Element> all(const Dataset& ds) {
  Iterator it = ds.make_iterator();
  return drain(it, 1000);
}

// {"id": int64 [n], "name": string [n] ("a", "bb", "ccc", ...), "pos": float32 [n, 2]}: a dict of three leaves.
Element records(int64_t n) {
  std::vector<int64_t> ids;
  std::vector<std::string> names;
  std::vector<float> pos;
  for (int64_t i = 0; i < n; ++i) {
    ids.push_back(i);
    names.emplace_back(static_cast<size_t>(i % 4 + 1), static_cast<char>('a' + i % 26));
    pos.push_back(static_cast<float>(i));
    pos.push_back(0.5f * static_cast<float>(i));
  }
  return Element::dict({{"pos", from_vector<float>(pos, {n, 2})},
                        {"id", from_vector<int64_t>(ids, {n})},
                        {"name", StringTensor(Shape({n}), names)}});
}

TEST(Element, BuildsIndexesFlattensAndDescribes) {
  Element d = records(3);
  EXPECT_EQ(d.kind(), Element::Kind::kDict);
  EXPECT_EQ(d.keys(), (std::vector<std::string>{"id", "name", "pos"}));  // sorted, as tf.nest orders them
  EXPECT_EQ(d["name"].string().values[2], "ccc");
  EXPECT_EQ(d[size_t{0}].tensor().dtype(), DType::int64);
  Element t{i64(1), Element::list({i64(2), StringTensor::scalar("s")}), d};
  EXPECT_EQ(t.structure(), "(int64, [int64, string], {'id': int64, 'name': string, 'pos': float32})");
  EXPECT_EQ(t.flatten().size(), 6u);
  Element doubled = t.map([](const Element& leaf) -> Element {
    return leaf.is_tensor() && leaf.tensor().rank() == 0 ? Element(i64(leaf.tensor().item<int64_t>() * 2)) : leaf;
  });
  EXPECT_TRUE(doubled.same_structure(t));
  EXPECT_EQ(doubled[1][0].tensor().item<int64_t>(), 4);
  EXPECT_FALSE(t.same_structure(Element{i64(1), i64(2), d}));
  EXPECT_NE(error_of<InvalidArgumentError>([&] { (void)d["nope"]; }).find("no key 'nope'"), std::string::npos);
  EXPECT_NE(error_of<InvalidArgumentError>([] {
              Element::dict({{"a", i64(1)}, {"a", i64(2)}});
            }).find("twice"),
            std::string::npos);
  // Keras' view: (x, y) tuples unpack, a dict x is refused with the reason.
  EXPECT_EQ((Element{i64(1), i64(2)}).y().item<int64_t>(), 2);
  EXPECT_NE(error_of<ValueError>([&] { (void)Element{d, i64(0)}.x(); }).find("one numeric Tensor"), std::string::npos);
}

TEST(Nested, SlicesBatchesAndUnbatchesDictsWithStrings) {
  Dataset ds = Dataset::from_tensor_slices(records(5));
  std::vector<Element> rows = all(ds);
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_EQ(rows[3]["name"].string().item(), "dddd");
  EXPECT_EQ(rows[3]["pos"].tensor().shape(), Shape({2}));
  Iterator batches = ds.batch(2).make_iterator();
  Element b = *batches.next();
  EXPECT_EQ(b["name"].string().shape, Shape({2}));
  EXPECT_EQ(b["name"].string().values, (std::vector<std::string>{"a", "bb"}));
  EXPECT_EQ(b["pos"].tensor().shape(), Shape({2, 2}));
  // batch over values (after map) then unbatch gives the rows back, strings included.
  Dataset round = ds.map([](const Element& e) { return e; }).batch(2).unbatch();
  std::vector<Element> again;
  for (const Element& e : round) again.push_back(e);
  ASSERT_EQ(again.size(), 5u);
  for (size_t i = 0; i < 5; ++i) EXPECT_TRUE(same_element(again[i], rows[i])) << i;
  // from_tensors: the whole structure as one element.
  Element one = *Dataset::from_tensors(records(2)).make_iterator().next();
  EXPECT_TRUE(same_element(one, records(2)));
}

TEST(Nested, PaddedBatchPadsStringsWithEmptyOnes) {
  // Element i: ("w" * i repeated i times as a string vector, int64 [i] of i's).
  Dataset ragged = Dataset::range(1, 4).map([](const Element& e) {
    const int64_t n = e.x().item<int64_t>();
    return Element{StringTensor(Shape({n}), std::vector<std::string>(static_cast<size_t>(n), std::string(1, 'w'))),
                   from_vector<int64_t>(std::vector<int64_t>(static_cast<size_t>(n), n), {n})};
  });
  Element b = *ragged.padded_batch(3, {Padding{}, Padding{.padding_value = -1}}).make_iterator().next();
  EXPECT_EQ(b[0].string().shape, Shape({3, 3}));
  EXPECT_EQ(b[0].string().values, (std::vector<std::string>{"w", "", "", "w", "w", "", "w", "w", "w"}));
  EXPECT_EQ(b[1].tensor().to_vector<int64_t>(), (std::vector<int64_t>{1, -1, -1, 2, 2, -1, 3, 3, 3}));
  EXPECT_NE(error_of<InvalidArgumentError>([&] {
              ragged.padded_batch(3, {Padding{}, Padding{}, Padding{}}).make_iterator().next();
            }).find("3 paddings"),
            std::string::npos);
}

TEST(Nested, ZipAndInterleaveNestTheirInputs) {
  Dataset names = Dataset::from_tensor_slices(records(6)).map([](const Element& e) { return e["name"]; });
  Dataset zipped = Dataset::zip({Dataset::range(0, 6), names});
  Element z = *zipped.make_iterator().next();
  EXPECT_EQ(z.structure(), "(int64, string)");
  // interleave of dicts: two inner datasets per cycle, one element each in turn.
  Dataset inter = Dataset::range(0, 2).interleave(
      [](const Element& e) {
        const int64_t k = e.x().item<int64_t>();
        return Dataset::from_tensor_slices(records(3)).map([k](const Element& r) {
          return Element::dict({{"k", i64(k)}, {"r", r}});
        });
      },
      2);
  std::vector<int64_t> ks;
  std::vector<std::string> names_seen;
  for (const Element& e : inter) {
    ks.push_back(e["k"].tensor().item<int64_t>());
    names_seen.push_back(e["r"]["name"].string().item());
  }
  EXPECT_EQ(ks, (std::vector<int64_t>{0, 1, 0, 1, 0, 1}));
  EXPECT_EQ(names_seen, (std::vector<std::string>{"a", "a", "bb", "bb", "ccc", "ccc"}));
}

TEST(Nested, MismatchedStructuresAreClearErrors) {
  Dataset ints = Dataset::range(0, 2);
  Dataset strings = Dataset::from_tensor_slices(StringTensor(Shape({2}), {"x", "y"}));
  std::string m = error_of<InvalidArgumentError>([&] { all(ints.concatenate(strings)); });
  EXPECT_NE(m.find("concatenate"), std::string::npos) << m;
  EXPECT_NE(m.find("int64"), std::string::npos) << m;
  EXPECT_NE(m.find("string"), std::string::npos) << m;
  m = error_of<InvalidArgumentError>([&] {
    Dataset flat = ints.flat_map([&](const Element& e) { return e.x().item<int64_t>() == 0 ? ints : strings; });
    all(flat);
  });
  EXPECT_NE(m.find("interleave"), std::string::npos) << m;
  Dataset mixed = ints.map([](const Element& e) {
    return e.x().item<int64_t>() == 0 ? Element{e.x(), e.x()} : Element::dict({{"a", e.x()}});
  });
  m = error_of<InvalidArgumentError>([&] { mixed.batch(2).make_iterator().next(); });
  EXPECT_NE(m.find("(int64, int64)"), std::string::npos) << m;
  EXPECT_NE(m.find("{'a': int64}"), std::string::npos) << m;
}

// A pipeline whose shuffle buffer and cache hold dicts with string leaves, saved and restored mid-way.
Dataset nested_pipeline() {
  return Dataset::from_tensor_slices(records(40))
      .map([](const Element& e) {
        return Element{e, StringTensor::scalar(e["name"].string().item() + "!")};
      })
      .cache()
      .shuffle(16, 3)
      .repeat(2)
      .batch(3)
      .prefetch(2);
}

TEST(Nested, ResumesBitwiseThroughCacheShuffleAndBatch) {
  for (size_t k : {0, 1, 7, 13, 20}) expect_resumes(nested_pipeline, k);
  // scan with a nested state that holds a string: saved as its leaves' bytes.
  auto scanned = [] {
    return Dataset::from_tensor_slices(records(10))
        .scan(Element::dict({{"n", i64(0)}, {"s", StringTensor::scalar("")}}),
              [](const Element& state, const Element& e) {
                Element next = Element::dict(
                    {{"n", i64(state["n"].tensor().item<int64_t>() + e["id"].tensor().item<int64_t>())},
                     {"s", StringTensor::scalar(state["s"].string().item() + e["name"].string().item().substr(0, 1))}});
                return std::pair{next, next};
              });
  };
  for (size_t k : {0, 3, 9}) expect_resumes(scanned, k);
  Iterator it = scanned().make_iterator();
  drain(it, 9);
  EXPECT_EQ((*it.next())["s"].string().item(), "abcdefghij");
}

}  // namespace
}  // namespace lockstep::data
