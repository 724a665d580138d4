// Dataset's methods (argument checks, then a new node), the top-level Iterator with its look-ahead and
// saved-state envelope, and the helpers the stages share.
#include "lockstep/data/dataset.h"

#include "lockstep/data/dataset_node.h"
#include "nodes-impl.h"

namespace lockstep::data {

using nlohmann::json;

namespace {
// Every stage's str(), output first: a saved state records it so that restore can name a mismatch.
void describe_pipeline(const DatasetNode& node, json& out) {
  out.push_back(node.str());
  for (const NodePtr& input : node.inputs()) describe_pipeline(*input, out);
}
constexpr const char* kStateFormat = "lockstep.data.Iterator/1";

// Whether every number in `state` is an integer, as in every state save_state() writes: a float such as 1e20
// would not convert to the stages' counts (undefined behaviour). Iterative, for any nesting depth.
bool integers_only(const json& state) {
  std::vector<const json*> todo{&state};
  while (!todo.empty()) {
    const json* j = todo.back();
    todo.pop_back();
    if (j->is_number_float()) return false;
    if (j->is_structured())
      for (const json& v : *j) todo.push_back(&v);
  }
  return true;
}
}  // namespace

DatasetNode::DatasetNode(std::string op, json params, std::vector<NodePtr> inputs)
    : op_(std::move(op)), params_(std::move(params)), inputs_(std::move(inputs)) {
  str_ = op_ + "(";
  bool first = true;
  for (const auto& [key, value] : params_.items()) {
    str_ += (first ? "" : ", ") + key + "=" + (value.is_string() ? value.get<std::string>() : value.dump());
    first = false;
  }
  str_ += ")";
}

namespace detail {
NodePtr single_input(const std::vector<NodePtr>& inputs, const std::string& op) {
  LS_CHECK(inputs.size() == 1 && inputs[0], ValueError, op, " takes exactly one input dataset, got ", inputs.size());
  return inputs[0];
}

uint64_t mix_salt(uint64_t salt, uint64_t k) {
  uint64_t z = salt + 0x9e3779b97f4a7c15ull * (k + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

void replay(ItemIterator& it, int64_t count, const std::string& stage, const std::function<void(Item&&)>& on_item) {
  for (int64_t i = 0; i < count; ++i) {
    std::optional<Item> item = it.next();
    LS_CHECK(item.has_value(), ValueError, "restore_state: replaying ", stage, " needs ", count,
             " input elements but the input ended after ", i,
             "; the pipeline differs from the saved one (map and filter functions must be deterministic)");
    on_item(std::move(*item));
  }
}
}  // namespace detail

// ---- Dataset ----

Dataset::Dataset(std::shared_ptr<const DatasetNode> node, Options options)
    : node_(std::move(node)), options_(options) {
  LS_CHECK(node_ != nullptr, ValueError, "Dataset: the node is null; build datasets with Dataset::from_tensor_slices or Dataset::range");
}

Dataset Dataset::from_tensor_slices(const Tensor& x, const Tensor& y, const Tensor& sample_weight) {
  LS_CHECK(x.defined(), InvalidArgumentError, "from_tensor_slices: x is an undefined Tensor; pass the features");
  if (sample_weight.defined()) return from_tensor_slices(Element{x, y, sample_weight});
  return from_tensor_slices(y.defined() ? Element{x, y} : Element(x));
}

Dataset Dataset::from_tensor_slices(const Element& structure) {
  return Dataset(detail::make_tensor_slices_node(structure));
}

Dataset Dataset::from_tensors(const Element& element) {
  // One row of the element with a new axis 0 of length 1: batch() of it gives it back, shared storage or not.
  return from_tensor_slices(element.map([](const Element& leaf) -> Element {
    if (leaf.is_tensor()) {
      std::vector<int64_t> dims = leaf.tensor().shape().dims();
      dims.insert(dims.begin(), 1);
      const Tensor c = leaf.tensor().contiguous();
      Shape shape(std::move(dims));
      return Tensor(c.storage(), shape, shape.strides(), c.offset(), c.dtype());
    }
    if (!leaf.is_string()) return leaf;
    std::vector<int64_t> dims = leaf.string().shape.dims();
    dims.insert(dims.begin(), 1);
    return StringTensor(Shape(std::move(dims)), leaf.string().values);
  }));
}

Dataset Dataset::range(int64_t start, int64_t stop, int64_t step) {
  LS_CHECK(step != 0, InvalidArgumentError, "range: step must not be 0 (got start=", start, ", stop=", stop,
           ", step=0); pass step=1 to count up or a negative step to count down");
  return Dataset(detail::make_range_node(start, stop, step));
}

Dataset Dataset::from_generator(std::function<Generator()> make) {
  LS_CHECK(make != nullptr, InvalidArgumentError,
           "from_generator: make is empty; pass a function that returns a new generator of the elements");
  return Dataset(detail::make_generator_node(std::move(make)));
}

namespace {
// The nodes of `datasets`, which `op` needs at least one of.
std::vector<NodePtr> nodes_of(const std::vector<Dataset>& datasets, const char* op) {
  LS_CHECK(!datasets.empty(), InvalidArgumentError, op, ": pass at least one dataset");
  std::vector<NodePtr> out;
  for (const Dataset& d : datasets) out.push_back(d.node_ptr());
  return out;
}
}  // namespace

Dataset Dataset::zip(std::vector<Dataset> datasets, ZipFn combine) {
  return Dataset(detail::make_zip_node(nodes_of(datasets, "zip"), std::move(combine)), datasets[0].options());
}

Dataset Dataset::sample_from_datasets(std::vector<Dataset> datasets, std::vector<double> weights,
                                      std::optional<uint64_t> seed, bool stop_on_empty_dataset) {
  return Dataset(detail::make_sample_node(nodes_of(datasets, "sample_from_datasets"), std::move(weights),
                                          seed.value_or(kDefaultShuffleSeed), stop_on_empty_dataset),
                 datasets[0].options());
}

Dataset Dataset::shuffle(int64_t buffer_size, std::optional<uint64_t> seed, bool reshuffle_each_iteration) const {
  LS_CHECK(buffer_size >= 1, InvalidArgumentError, "shuffle: buffer_size must be at least 1, got ", buffer_size,
           "; pass the number of elements (e.g. 60000) for a uniform shuffle");
  return then(detail::make_shuffle_node(node_, buffer_size, seed.value_or(kDefaultShuffleSeed), reshuffle_each_iteration));
}

Dataset Dataset::repeat(int64_t count) const { return then(detail::make_repeat_node(node_, count < 0 ? -1 : count)); }

Dataset Dataset::batch(int64_t batch_size, bool drop_remainder) const {
  LS_CHECK(batch_size >= 1, InvalidArgumentError, "batch: batch_size must be at least 1, got ", batch_size,
           "; pass the number of elements per batch, e.g. batch(64)");
  return then(detail::make_batch_node(node_, batch_size, drop_remainder));
}

Dataset Dataset::padded_batch(int64_t batch_size, std::vector<Padding> padding, bool drop_remainder) const {
  LS_CHECK(batch_size >= 1, InvalidArgumentError, "batch: batch_size must be at least 1, got ", batch_size,
           "; pass the number of elements per batch, e.g. batch(64)");
  return then(detail::make_padded_batch_node(node_, batch_size, drop_remainder, std::move(padding)));
}

Dataset Dataset::unbatch() const {
  return then(detail::make_unbatch_node(node_));
}

Dataset Dataset::window(int64_t size, std::optional<int64_t> shift, int64_t stride, bool drop_remainder) const {
  const int64_t by = shift.value_or(size);
  LS_CHECK(size >= 1 && by >= 1 && stride >= 1, InvalidArgumentError,
           "window: size, shift and stride must be at least 1, got ", size, ", ", by, " and ", stride,
           "; pass e.g. window(4) for windows of 4 consecutive elements");
  return then(detail::make_window_node(node_, size, by, stride, drop_remainder));
}

Dataset Dataset::concatenate(const Dataset& other) const {
  return then(detail::make_concatenate_node(node_, other.node_));
}

Dataset Dataset::interleave(std::function<Dataset(const Element&)> fn, int64_t cycle_length,
                            int64_t block_length) const {
  LS_CHECK(fn != nullptr, InvalidArgumentError, "interleave: fn is empty; pass a function Dataset(const Element&)");
  LS_CHECK(cycle_length >= 1 && block_length >= 1, InvalidArgumentError,
           "interleave: cycle_length and block_length must be at least 1, got ", cycle_length, " and ", block_length,
           "; pass e.g. cycle_length=4, block_length=1");
  return then(detail::make_interleave_node(node_, std::move(fn), cycle_length, block_length));
}

Dataset Dataset::flat_map(std::function<Dataset(const Element&)> fn) const {
  return interleave(std::move(fn), 1, 1);
}

Dataset Dataset::scan(Element initial_state, ScanFn fn) const {
  LS_CHECK(fn != nullptr, InvalidArgumentError,
           "scan: fn is empty; pass a function std::pair<Element, Element>(const Element& state, const Element&)");
  return then(detail::make_scan_node(node_, std::move(initial_state), std::move(fn)));
}

Dataset Dataset::shard(int64_t num_shards, int64_t index) const {
  LS_CHECK(num_shards >= 1, InvalidArgumentError, "shard: num_shards must be at least 1, got ", num_shards,
           "; pass the number of input pipelines (workers)");
  LS_CHECK(index >= 0 && index < num_shards, InvalidArgumentError, "shard: index must be in [0, num_shards) = [0, ",
           num_shards, "), got ", index, "; pass this worker's index, e.g. InputContext.input_pipeline_id");
  return then(detail::make_shard_node(node_, num_shards, index));
}

Dataset Dataset::map(std::function<Element(const Element&)> fn) const {
  LS_CHECK(fn != nullptr, InvalidArgumentError, "map: fn is empty; pass a function Element(const Element&)");
  return then(detail::make_map_node(node_, std::move(fn)));
}

Dataset Dataset::filter(std::function<bool(const Element&)> predicate) const {
  LS_CHECK(predicate != nullptr, InvalidArgumentError, "filter: predicate is empty; pass a function bool(const Element&)");
  return then(detail::make_filter_node(node_, std::move(predicate)));
}

Dataset Dataset::take(int64_t count) const { return then(detail::make_take_node(node_, count < 0 ? -1 : count)); }
Dataset Dataset::skip(int64_t count) const { return then(detail::make_skip_node(node_, count < 0 ? -1 : count)); }
Dataset Dataset::cache() const { return then(detail::make_cache_node(node_)); }

Dataset Dataset::prefetch(int64_t buffer_size) const {
  LS_CHECK(buffer_size >= 0 || buffer_size == kAutotune, InvalidArgumentError,
           "prefetch: buffer_size must be >= 0 or kAutotune (-1), got ", buffer_size, "; pass e.g. prefetch(2)");
  if (buffer_size == 0) return *this;
  return then(detail::make_prefetch_node(node_, buffer_size == kAutotune ? 2 : buffer_size));
}

Dataset Dataset::with_options(const Options& options) const { return Dataset(node_, options); }

int64_t Dataset::cardinality() const { return node_->cardinality(); }

Iterator Dataset::make_iterator() const { return make_iterator(node_->take_iteration_number()); }
Iterator Dataset::make_iterator(uint64_t iteration) const { return Iterator(node_, iteration); }
Iterator Dataset::begin() const { return make_iterator(); }

// ---- Iterator ----

Iterator::Iterator(std::shared_ptr<const DatasetNode> root, uint64_t iteration)
    : root_(std::move(root)), impl_(root_->make_iterator(iteration)), iteration_(iteration) {}
Iterator::Iterator(Iterator&&) noexcept = default;
// Not defaulted: the old stages (and their threads) must go before the nodes they refer to.
Iterator& Iterator::operator=(Iterator&& other) noexcept {
  if (this == &other) return *this;
  impl_.reset();
  root_ = std::move(other.root_);
  impl_ = std::move(other.impl_);
  iteration_ = other.iteration_;
  peeked_ = other.peeked_;
  ahead_ = std::move(other.ahead_);
  state_before_ahead_ = std::move(other.state_before_ahead_);
  return *this;
}
Iterator::~Iterator() = default;

std::optional<Element> Iterator::pull() const {
  std::optional<Item> item = impl_->next();
  if (!item) return std::nullopt;
  return detail::materialize(*item, root_->row_source());
}

void Iterator::peek() const {
  if (peeked_) return;
  state_before_ahead_ = impl_->save_state();
  ahead_ = pull();
  peeked_ = true;
}

std::optional<Element> Iterator::next() {
  if (!peeked_) return pull();
  peeked_ = false;
  state_before_ahead_ = nullptr;
  return std::exchange(ahead_, std::nullopt);
}

const Element& Iterator::operator*() const {
  peek();
  LS_CHECK(ahead_.has_value(), RuntimeError, "dereferencing a data::Iterator at the end of its dataset; compare it with end() first");
  return *ahead_;
}

Iterator& Iterator::operator++() {
  peek();
  peeked_ = false;
  ahead_.reset();
  state_before_ahead_ = nullptr;
  return *this;
}

Iterator::Stepped Iterator::operator++(int) {
  Stepped stepped{**this};
  ++*this;
  return stepped;
}

bool Iterator::operator==(std::default_sentinel_t) const {
  peek();
  return !ahead_.has_value();
}

json Iterator::save_state() const {
  json pipeline = json::array();
  describe_pipeline(*root_, pipeline);
  return {{"format", kStateFormat},
          {"pipeline", std::move(pipeline)},
          {"iteration", iteration_},
          {"state", peeked_ ? state_before_ahead_ : impl_->save_state()}};
}

void Iterator::restore_state(const json& state) {
  json pipeline = json::array();
  describe_pipeline(*root_, pipeline);
  try {
    LS_CHECK(state.is_object() && state.value("format", "") == kStateFormat, ValueError,
             "restore_state: not a saved data::Iterator state (expected \"format\": \"", kStateFormat,
             "\"); pass the JSON that Iterator::save_state() returned");
    LS_CHECK(integers_only(state), ValueError,
             "restore_state: the saved iterator state holds a number that is not an integer; pass the JSON that "
             "Iterator::save_state() returned, unmodified");
    const json& saved = state.at("pipeline");
    for (size_t i = 0; i < std::max(saved.size(), pipeline.size()); ++i) {
      std::string was = i < saved.size() ? saved[i].get<std::string>() : "(none)";
      std::string is = i < pipeline.size() ? pipeline[i].get<std::string>() : "(none)";
      LS_CHECK(was == is, ValueError, "restore_state: the pipeline differs from the saved one at stage ", i,
               " from the output: saved ", was, ", this iterator has ", is,
               "; restore into an iterator of the same pipeline");
    }
    peeked_ = false;
    ahead_.reset();
    state_before_ahead_ = nullptr;
    iteration_ = state.at("iteration").get<uint64_t>();
    impl_->restore_state(state.at("state"));
  } catch (const json::exception& e) {
    throw ValueError(make_message("restore_state: the saved iterator state is malformed (", e.what(),
                                  "); pass the JSON that Iterator::save_state() returned, unmodified"));
  }
}

}  // namespace lockstep::data
