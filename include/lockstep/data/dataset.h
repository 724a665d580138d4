// tf.data for lockstep: Dataset (an immutable pipeline of transformations over in-memory tensors) and
// Iterator (its input iterator, whose exact position and RNG state can be saved and restored, so a
// restarted job resumes reading where it stopped, bitwise).
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>
#include <vector>

#include "lockstep/data/element.h"
#include "lockstep/tensor/tensor.h"

namespace lockstep::data {

// TF's cardinality codes (tf.data.INFINITE_CARDINALITY, tf.data.UNKNOWN_CARDINALITY).
inline constexpr int64_t kInfiniteCardinality = -1;
inline constexpr int64_t kUnknownCardinality = -2;
// prefetch(kAutotune) picks the buffer size (TF: tf.data.AUTOTUNE).
inline constexpr int64_t kAutotune = -1;
// The seed of shuffle() when none is given. TF draws a random one; lockstep prefers runs that repeat.
inline constexpr uint64_t kDefaultShuffleSeed = 0x5eed5eed5eed5eedull;

// What batch() produces: each leaf gains a leading batch axis (an Element; the name reads as TF's tutorials).
using Batch = Element;

// What zip() makes of one element of each input.
using ZipFn = std::function<Element(const std::vector<Element>&)>;
// A source for from_generator: each call gives the next element, std::nullopt at the end.
using Generator = std::function<std::optional<Element>()>;
// What scan() makes of (state, element): {the new state, the output element}.
using ScanFn = std::function<std::pair<Element, Element>(const Element& state, const Element& element)>;

// How padded_batch() pads one component. kAll pads axis a to padded_shape[a] (-1, or an axis past its end: the
// batch's largest) with padding_value, as TF's padded_batch; kNone pads nothing (shapes must match, as in batch());
// kLast pads only the last axis to the batch's largest (the others must match).
struct Padding {
  enum class Axes { kAll, kNone, kLast } axes = Axes::kAll;
  std::vector<int64_t> padded_shape = {};
  double padding_value = 0;
};

struct Options {
  // How the distribution layer splits the data among workers (tf.data.experimental.AutoShardPolicy).
  enum class AutoShardPolicy { AUTO, FILE, DATA, OFF } auto_shard_policy = AutoShardPolicy::AUTO;
};

class DatasetNode;
class ItemIterator;
class Iterator;

class Dataset {
 public:
  // Wraps a node of the pipeline graph (see dataset_node.h); users build datasets with the factories.
  explicit Dataset(std::shared_ptr<const DatasetNode> node, Options options = {});

  // Slices every defined component along axis 0; their lengths must match. Elements are views: x alone, or the
  // tuple (x, y) or (x, y, sample_weight) (an undefined y between is None).
  static Dataset from_tensor_slices(const Tensor& x, const Tensor& y = {}, const Tensor& sample_weight = {});
  // Slices every leaf of a nested structure along axis 0 (tensors as views, strings copied); their lengths must
  // match. None leaves stay None.
  static Dataset from_tensor_slices(const Element& structure);
  // The single element `element`.
  static Dataset from_tensors(const Element& element);
  // start, start + step, ... up to stop (exclusive); x is an int64 scalar.
  static Dataset range(int64_t start, int64_t stop, int64_t step = 1);
  // The elements of a generator that `make` returns, a new one per iterator. Restoring makes a new generator and
  // skips the elements the saved iterator had taken, so each must yield the same elements.
  static Dataset from_generator(std::function<Generator()> make);
  // One element of each dataset, combined by `combine` (by default the tuple of the inputs' elements, TF's zip);
  // ends with the shortest input. Keeps the first dataset's options.
  static Dataset zip(std::vector<Dataset> datasets, ZipFn combine = {});
  // Each element from a dataset drawn at random, dataset i with probability weights[i] / sum(weights) (uniform when
  // weights is empty), from Philox(seed): the same draws for every iterator. When the drawn dataset is exhausted,
  // the result ends if stop_on_empty_dataset, else the rest are drawn from. Keeps the first dataset's options.
  static Dataset sample_from_datasets(std::vector<Dataset> datasets, std::vector<double> weights = {},
                                      std::optional<uint64_t> seed = {}, bool stop_on_empty_dataset = false);

  // Fills a buffer of buffer_size elements and yields a uniformly chosen one, refilling its slot. The
  // stream comes from (seed, iteration): with reshuffle_each_iteration every new iterator and every
  // repeat() epoch draws a different but reproducible order.
  Dataset shuffle(int64_t buffer_size, std::optional<uint64_t> seed = {}, bool reshuffle_each_iteration = true) const;
  // count < 0: forever. An input that yields nothing ends the repetition (TF's rule, never a hang).
  Dataset repeat(int64_t count = -1) const;
  // Stacks batch_size consecutive elements along a new axis 0 (contiguous tensors); the last, smaller
  // batch is kept unless drop_remainder.
  Dataset batch(int64_t batch_size, bool drop_remainder = false) const;
  // Elements index, index + num_shards, index + 2 * num_shards, ...
  Dataset shard(int64_t num_shards, int64_t index) const;
  // Pads each leaf to the batch's largest shape (or the fixed sizes of `padding`, one entry per leaf in
  // Element::flatten() order; missing entries are Padding{}; string leaves pad with ""), then stacks batch_size of
  // them as batch() does.
  Dataset padded_batch(int64_t batch_size, std::vector<Padding> padding = {}, bool drop_remainder = false) const;
  // The rows of each element along axis 0; every component must have the same length there.
  Dataset unbatch() const;
  // Window k holds input elements k * shift + j * stride for j < size (shift: size when not given), stacked like
  // a batch: each component gains a leading axis of the window's length. TF yields each window as a dataset; this
  // is TF's window(...).flat_map(lambda w: w.batch(size)). The last windows are shorter unless
  // drop_remainder.
  Dataset window(int64_t size, std::optional<int64_t> shift = {}, int64_t stride = 1,
                 bool drop_remainder = false) const;
  // Every element of this dataset, then every element of `other` (InvalidArgumentError when their structures differ).
  Dataset concatenate(const Dataset& other) const;
  // block_length elements in turn from each of cycle_length datasets made by fn from this dataset's elements
  // (TF's sequential order: an exhausted one is replaced at its place by the next element's). fn must be
  // deterministic: restore_state replays it.
  Dataset interleave(std::function<Dataset(const Element&)> fn, int64_t cycle_length, int64_t block_length = 1) const;
  // interleave(fn, 1, 1): the datasets' elements one dataset after the other.
  Dataset flat_map(std::function<Dataset(const Element&)> fn) const;
  // Threads a state through the elements: (state, element) -> (new state, output), starting from initial_state.
  // The state is saved with the iterator (its tensors' bytes), so restoring does not replay.
  Dataset scan(Element initial_state, ScanFn fn) const;
  // fn must be a pure function of its argument: restore_state replays it.
  Dataset map(std::function<Element(const Element&)> fn) const;
  Dataset filter(std::function<bool(const Element&)> predicate) const;
  // count < 0: all elements.
  Dataset take(int64_t count) const;
  Dataset skip(int64_t count) const;
  // In memory: the first complete pass fills the cache, later iterators (and repeat epochs) replay it.
  Dataset cache() const;
  // Produces up to buffer_size elements ahead on a background thread; kAutotune means 2; 0 is a no-op.
  Dataset prefetch(int64_t buffer_size) const;
  Dataset with_options(const Options& options) const;
  const Options& options() const { return options_; }

  // Number of elements, or kInfiniteCardinality / kUnknownCardinality.
  int64_t cardinality() const;

  // A new iterator. Iterators made by begin() / make_iterator() are numbered 0, 1, 2... per Dataset
  // (shared by its copies), and the number salts reshuffling shuffles, as TF reshuffles per iterator.
  // make_iterator(iteration) chooses the number, so that a restarted program draws epoch e's order
  // again: Model::fit over a dataset without repeat() should use make_iterator(epoch).
  Iterator make_iterator() const;
  Iterator make_iterator(uint64_t iteration) const;
  Iterator begin() const;
  std::default_sentinel_t end() const { return std::default_sentinel; }

  // The pipeline graph, for the distribution layer's auto-sharding and rebatching.
  const DatasetNode& node() const { return *node_; }
  const std::shared_ptr<const DatasetNode>& node_ptr() const { return node_; }

 private:
  Dataset then(std::shared_ptr<const DatasetNode> node) const { return Dataset(std::move(node), options_); }

  std::shared_ptr<const DatasetNode> node_;
  Options options_;
};

// An input iterator over a Dataset (std::input_iterator, with std::default_sentinel_t as its end).
// Move-only; keeps its pipeline alive.
class Iterator {
 public:
  using iterator_concept = std::input_iterator_tag;
  using value_type = Element;
  using difference_type = std::ptrdiff_t;
  Iterator(Iterator&&) noexcept;
  Iterator& operator=(Iterator&&) noexcept;
  ~Iterator();

  // The next element, or std::nullopt at the end (and on every call after it).
  std::optional<Element> next();

  // Range-for support: the iterator looks one element ahead to compare with end(). *it throws
  // RuntimeError at the end.
  const Element& operator*() const;
  Iterator& operator++();
  // it++ hands back the element it steps over, so that *it++ reads like TF's next(it).
  struct Stepped {
    Element element;
    const Element& operator*() const { return element; }
  };
  Stepped operator++(int);
  bool operator==(std::default_sentinel_t) const;

  // The exact position and RNG state of every stage. Small: shuffle buffers and caches are saved as
  // (starting point, count) and rebuilt by replay, which costs at most the stage's lifetime of input.
  // Inside a range-for body the current element is still pending, so a restored iterator yields it again.
  nlohmann::json save_state() const;
  // Puts this iterator (made from the same pipeline) where the saved one was: next() then yields
  // bitwise what the saved iterator would have. Throws ValueError naming the stage when the pipeline
  // differs.
  void restore_state(const nlohmann::json& state);

 private:
  friend class Dataset;
  Iterator(std::shared_ptr<const DatasetNode> root, uint64_t iteration);
  std::optional<Element> pull() const;
  void peek() const;

  std::shared_ptr<const DatasetNode> root_;  // declared first: destroyed after the stages that refer to it
  std::unique_ptr<ItemIterator> impl_;
  uint64_t iteration_;
  // Look-ahead for range-for: the element seen by operator== and the state from before it was pulled,
  // which is what save_state() must report while it is pending.
  mutable bool peeked_ = false;
  mutable std::optional<Element> ahead_;
  mutable nlohmann::json state_before_ahead_;
};

}  // namespace lockstep::data
