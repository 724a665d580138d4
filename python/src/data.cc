// tf.data and tf.io for lockstep._lockstep: the C++ Dataset (lockstep::data) as _lockstep.data.Dataset, with
// Python functions for map/filter run by the C++ pipeline through callbacks; the stages TF has and lockstep::data
// lacks (zip, unbatch, concatenate, interleave, padded_batch, from_generator) as pipeline nodes of their own, built
// on dataset_node.h as the library's nodes are; TFRecord files, tf.train.Example parsing and tf.io.gfile as
// _lockstep.io.
//
// An element crosses into Python as a tuple of its defined components (x[, y[, sample_weight]]), which the Python
// package (lockstep/data) calls slots and maps onto TensorFlow's nested structures. Every pull releases the GIL: the
// pipeline may run on prefetch threads whose callbacks take it.
#include <Python.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstring>
#include <memory>
#include <mutex>
#include <set>
#include <variant>

#include "bindings.h"
#include "lockstep/core/gfile.h"
#include "lockstep/data/csv.h"
#include "lockstep/data/dataset.h"
#include "lockstep/data/dataset_node.h"
#include "lockstep/data/example.h"
#include "lockstep/data/tfrecord.h"

namespace lockstep::python {
namespace {

using data::Dataset;
using data::DatasetNode;
using data::Element;
using data::Item;
using data::ItemIterator;
using data::NodePtr;
using nlohmann::json;

nb::tuple slots_of(const Element& e) {
  nb::list out;
  for (const Tensor* t : {&e.x, &e.y, &e.sample_weight})
    if (t->defined()) out.append(nb::cast(*t));
  return nb::tuple(out);
}

Element element_of(const std::vector<Tensor>& slots) {
  LS_CHECK(!slots.empty() && slots.size() <= 3, ValueError, "a dataset element has 1 to 3 components here, got ",
           slots.size(), "; lockstep.data packs larger structures before they reach C++");
  return Element{slots[0], slots.size() > 1 ? slots[1] : Tensor(), slots.size() > 2 ? slots[2] : Tensor()};
}

Element element_from_python(nb::handle seq) {
  std::vector<Tensor> slots;
  for (nb::handle v : seq) slots.push_back(to_tensor(v));
  return element_of(slots);
}

Element materialize(const Item& item, const DatasetNode& node) {
  return item.index >= 0 ? node.row_source()->row(item.index) : item.value;
}

// ---- zip: one element from each input, combined ----
using Combine = std::function<Element(const std::vector<Element>&)>;

class ZipNode final : public DatasetNode {
 public:
  ZipNode(std::vector<NodePtr> inputs, Combine combine)
      : DatasetNode("zip", json::object(), std::move(inputs)), combine_(std::move(combine)) {}
  int64_t cardinality() const override {  // TF's rule: the shortest input; unknown if any is
    int64_t n = data::kInfiniteCardinality;
    for (const NodePtr& in : inputs()) {
      int64_t c = in->cardinality();
      if (c == data::kUnknownCardinality) return c;
      if (c != data::kInfiniteCardinality) n = n == data::kInfiniteCardinality ? c : std::min(n, c);
    }
    return n;
  }
  NodePtr with_inputs(std::vector<NodePtr> inputs) const override {
    LS_CHECK(inputs.size() == this->inputs().size(), ValueError, "zip has ", this->inputs().size(),
             " input datasets, got ", inputs.size());
    return std::make_shared<ZipNode>(std::move(inputs), combine_);
  }
  std::unique_ptr<ItemIterator> make_iterator(uint64_t salt) const override;
  Combine combine_;
};

class ZipIterator final : public ItemIterator {
 public:
  ZipIterator(const ZipNode& node, uint64_t salt) : node_(node) {
    for (const NodePtr& in : node.inputs()) inputs_.push_back(in->make_iterator(salt));
  }
  std::optional<Item> next() override {
    std::vector<Element> parts;
    for (size_t i = 0; i < inputs_.size(); ++i) {
      std::optional<Item> item = inputs_[i]->next();
      if (!item) return std::nullopt;
      parts.push_back(materialize(*item, *node_.inputs()[i]));
    }
    return Item{-1, node_.combine_(parts)};
  }
  json save_state() const override {
    json inputs = json::array();
    for (const auto& it : inputs_) inputs.push_back(it->save_state());
    return {{"inputs", std::move(inputs)}};
  }
  void restore_state(const json& state) override {
    const json& saved = state.at("inputs");
    LS_CHECK(saved.size() == inputs_.size(), ValueError, "restore_state: the saved zip has ", saved.size(),
             " inputs, this one ", inputs_.size(), "; restore into an iterator of the same pipeline");
    for (size_t i = 0; i < inputs_.size(); ++i) inputs_[i]->restore_state(saved[i]);
  }

 private:
  const ZipNode& node_;
  std::vector<std::unique_ptr<ItemIterator>> inputs_;
};
std::unique_ptr<ItemIterator> ZipNode::make_iterator(uint64_t salt) const {
  return std::make_unique<ZipIterator>(*this, salt);
}

// The components of the parts, in order, as one element (at most three).
Element concatenate_slots(const std::vector<Element>& parts) {
  std::vector<Tensor> slots;
  for (const Element& e : parts)
    for (const Tensor* t : {&e.x, &e.y, &e.sample_weight})
      if (t->defined()) slots.push_back(*t);
  return element_of(slots);
}

// ---- unbatch: the rows of each element, along axis 0 ----
class UnbatchNode final : public DatasetNode {
 public:
  explicit UnbatchNode(NodePtr input) : DatasetNode("unbatch", json::object(), {std::move(input)}) {}
  int64_t cardinality() const override {
    int64_t n = inputs()[0]->cardinality();
    return n == data::kInfiniteCardinality ? n : data::kUnknownCardinality;
  }
  NodePtr with_inputs(std::vector<NodePtr> inputs) const override {
    LS_CHECK(inputs.size() == 1, ValueError, "unbatch takes one input dataset, got ", inputs.size());
    return std::make_shared<UnbatchNode>(std::move(inputs[0]));
  }
  std::unique_ptr<ItemIterator> make_iterator(uint64_t salt) const override;
};

Tensor row_view(const Tensor& t, int64_t i) {
  std::vector<int64_t> dims(t.shape().dims().begin() + 1, t.shape().dims().end());
  std::vector<int64_t> strides(t.strides().begin() + 1, t.strides().end());
  return Tensor(t.storage(), Shape(std::move(dims)), std::move(strides), t.offset() + i * t.strides()[0], t.dtype());
}

// State: the input's state before the batch being split, and the next row of it; restoring pulls that batch again.
class UnbatchIterator final : public ItemIterator {
 public:
  UnbatchIterator(const UnbatchNode& node, uint64_t salt)
      : node_(node), input_(node.inputs()[0]->make_iterator(salt)), before_(input_->save_state()) {}
  std::optional<Item> next() override {
    while (!batch_ || row_ >= rows_) {
      before_ = input_->save_state();
      if (!pull()) return std::nullopt;
    }
    const Element& b = *batch_;
    const int64_t i = row_++;
    auto row = [&](const Tensor& t) { return t.defined() ? row_view(t, i) : Tensor(); };
    return Item{-1, Element{row(b.x), row(b.y), row(b.sample_weight)}};
  }
  json save_state() const override { return {{"input", before_}, {"row", row_}}; }
  void restore_state(const json& state) override {
    before_ = state.at("input");
    input_->restore_state(before_);
    batch_.reset();
    const int64_t row = state.at("row").get<int64_t>();
    if (row > 0) {
      LS_CHECK(pull() && row <= rows_, ValueError, "restore_state: unbatch was at row ", row,
               " of a batch its input no longer yields; restore into an iterator of the same pipeline");
      row_ = row;
    }
  }

 private:
  bool pull() {
    std::optional<Item> item = input_->next();
    if (!item) return false;
    batch_ = materialize(*item, *node_.inputs()[0]);
    const Element& b = *batch_;
    LS_CHECK(b.x.rank() >= 1, InvalidArgumentError,
             "unbatch: an element is a scalar, but unbatch splits along axis 0; batch the dataset first");
    rows_ = b.x.dim(0);
    for (const Tensor* t : {&b.y, &b.sample_weight})
      LS_CHECK(!t->defined() || (t->rank() >= 1 && t->dim(0) == rows_), InvalidArgumentError,
               "unbatch: the components of an element have different lengths along axis 0 (", b.x.shape().str(),
               " and ", t->shape().str(), "); give them the same batch size");
    row_ = 0;
    return true;
  }
  const UnbatchNode& node_;
  std::unique_ptr<ItemIterator> input_;
  json before_;
  std::optional<Element> batch_;
  int64_t row_ = 0, rows_ = 0;
};
std::unique_ptr<ItemIterator> UnbatchNode::make_iterator(uint64_t salt) const {
  return std::make_unique<UnbatchIterator>(*this, salt);
}

// ---- strings ----
// lockstep has no string dtype; the Python package carries a tf.string as uint8 [..., 8 + width]: each string's
// length (8 bytes, little-endian), then its bytes, zero-padded to the widest string of the tensor. This turns a
// record of TFRecordDataset (its bytes, [length]) into that form.
Tensor with_length_header(const Tensor& bytes) {
  const int64_t n = bytes.numel();
  Tensor out = Tensor::empty(Shape({n + 8}), DType::uint8);
  auto* p = out.data<uint8_t>();
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(static_cast<uint64_t>(n) >> (8 * i));
  if (n > 0) std::memcpy(p + 8, bytes.contiguous().raw_data(), static_cast<size_t>(n));
  return out;
}

// How padded_batch treats one slot: kStack needs equal shapes (batch()); kLastAxis pads the last axis to the
// batch's widest, the others must match (strings, whose length headers make the zeros harmless); kEveryAxis pads
// each axis to `shape` (-1: the batch's largest) with `value` (TF's padded_batch).
struct SlotPadding {
  enum Mode { kStack, kLastAxis, kEveryAxis } mode = kStack;
  std::vector<int64_t> shape;
  double value = 0;
};

class PaddedBatchNode final : public DatasetNode {
 public:
  PaddedBatchNode(NodePtr input, int64_t batch_size, bool drop_remainder, std::vector<SlotPadding> slots)
      : DatasetNode("padded_batch", {{"batch_size", batch_size}, {"drop_remainder", drop_remainder}},
                    {std::move(input)}),
        batch_size_(batch_size),
        drop_remainder_(drop_remainder),
        slots_(std::move(slots)) {
    LS_CHECK(batch_size >= 1, InvalidArgumentError, "batch: batch_size must be at least 1, got ", batch_size,
             "; pass the number of elements per batch, e.g. batch(64)");
    slots_.resize(3);
  }
  int64_t cardinality() const override {  // TF's rule
    int64_t n = inputs()[0]->cardinality();
    if (n < 0) return n;
    return n / batch_size_ + (n % batch_size_ == 0 || drop_remainder_ ? 0 : 1);
  }
  NodePtr with_inputs(std::vector<NodePtr> inputs) const override {
    LS_CHECK(inputs.size() == 1, ValueError, "padded_batch takes one input dataset, got ", inputs.size());
    return std::make_shared<PaddedBatchNode>(std::move(inputs[0]), batch_size_, drop_remainder_, slots_);
  }
  std::unique_ptr<ItemIterator> make_iterator(uint64_t salt) const override;

  int64_t batch_size_;
  bool drop_remainder_;
  std::vector<SlotPadding> slots_;
};

// The shape each element of the batch is padded to, checking what must match.
std::vector<int64_t> padded_dims(const std::vector<Element>& elements, Tensor Element::*slot, const SlotPadding& p) {
  const Tensor& first = elements[0].*slot;
  for (size_t i = 0; i < elements.size(); ++i) {
    const Tensor& t = elements[i].*slot;
    LS_CHECK(t.defined() && t.dtype() == first.dtype() && t.rank() == first.rank(), InvalidArgumentError,
             "batch: element ", i, " of a batch has a component of ",
             t.defined() ? make_message(dtype_name(t.dtype()), " ", t.shape().str()) : std::string("None"),
             " but element 0 has ", dtype_name(first.dtype()), " ", first.shape().str(),
             "; elements of one batch must have one dtype and rank: map them to one first");
  }
  std::vector<int64_t> dims(static_cast<size_t>(first.rank()));
  for (int64_t a = 0; a < first.rank(); ++a) {
    int64_t widest = 0;
    bool equal = true;
    for (const Element& e : elements) {
      widest = std::max(widest, (e.*slot).dim(a));
      equal = equal && (e.*slot).dim(a) == first.dim(a);
    }
    const bool padded =
        p.mode == SlotPadding::kEveryAxis || (p.mode == SlotPadding::kLastAxis && a + 1 == first.rank());
    LS_CHECK(padded || equal, InvalidArgumentError, "batch: the elements of a batch have components of shapes ",
             first.shape().str(), " and others differing along axis ", a,
             "; elements of one batch must match: map them to one shape first, or use padded_batch");
    const int64_t fixed =
        p.mode == SlotPadding::kEveryAxis && static_cast<size_t>(a) < p.shape.size() ? p.shape[a] : -1;
    LS_CHECK(fixed < 0 || widest <= fixed, InvalidArgumentError, "padded_batch: a component has ", widest,
             " entries along axis ", a, " but padded_shapes gives ", fixed, "; pass a larger padded shape (or None)");
    dims[static_cast<size_t>(a)] = fixed >= 0 ? fixed : widest;
  }
  return dims;
}

// One slot of a batch: the elements, each padded to padded_dims, stacked along a new axis 0.
Tensor pad_stack(const std::vector<Element>& elements, Tensor Element::*slot, const SlotPadding& p) {
  const Tensor& first = elements[0].*slot;
  if (!first.defined()) return {};
  std::vector<int64_t> dims = padded_dims(elements, slot, p);
  std::vector<int64_t> out_dims = dims;
  out_dims.insert(out_dims.begin(), static_cast<int64_t>(elements.size()));
  Tensor out = Tensor::empty(Shape(out_dims), first.dtype());
  visit_dtype(first.dtype(), [&](auto zero) {
    using T = decltype(zero);
    auto* data = static_cast<T*>(out.raw_data());
    T fill;
    if constexpr (std::is_same_v<T, bfloat16>)
      fill = T(static_cast<float>(p.value));
    else
      fill = static_cast<T>(p.value);
    std::fill(data, data + out.numel(), fill);
  });
  const size_t item = dtype_size(first.dtype());
  const int64_t rank = first.rank(), per_element = Shape(dims).numel();
  auto* base = static_cast<char*>(out.raw_data());
  for (size_t i = 0; i < elements.size(); ++i) {
    Tensor t = (elements[i].*slot).contiguous();
    const auto* src = static_cast<const char*>(t.raw_data());
    char* dst = base + static_cast<size_t>(static_cast<int64_t>(i) * per_element) * item;
    if (rank == 0) {
      std::memcpy(dst, src, item);
      continue;
    }
    // Row by row along the last axis; idx counts over the other axes of t.
    const int64_t row = t.dim(rank - 1), rows = row == 0 ? 0 : t.numel() / row;
    std::vector<int64_t> idx(static_cast<size_t>(rank - 1), 0);
    for (int64_t r = 0; r < rows; ++r) {
      int64_t at = 0;
      for (int64_t a = 0; a + 1 < rank; ++a) at = at * dims[static_cast<size_t>(a)] + idx[static_cast<size_t>(a)];
      std::memcpy(dst + static_cast<size_t>(at * dims.back()) * item, src + static_cast<size_t>(r * row) * item,
                  static_cast<size_t>(row) * item);
      for (int64_t a = rank - 2; a >= 0; --a) {
        if (++idx[static_cast<size_t>(a)] < t.dim(a)) break;
        idx[static_cast<size_t>(a)] = 0;
      }
    }
  }
  return out;
}

class PaddedBatchIterator final : public ItemIterator {
 public:
  PaddedBatchIterator(const PaddedBatchNode& node, uint64_t salt)
      : node_(node), input_(node.inputs()[0]->make_iterator(salt)) {}
  std::optional<Item> next() override {
    std::vector<Element> elements;
    while (static_cast<int64_t>(elements.size()) < node_.batch_size_) {
      std::optional<Item> item = input_->next();
      if (!item) break;
      elements.push_back(materialize(*item, *node_.inputs()[0]));
    }
    if (elements.empty() || (node_.drop_remainder_ && static_cast<int64_t>(elements.size()) < node_.batch_size_))
      return std::nullopt;
    ++count_;
    const auto& p = node_.slots_;
    return Item{-1, Element{pad_stack(elements, &Element::x, p[0]), pad_stack(elements, &Element::y, p[1]),
                            pad_stack(elements, &Element::sample_weight, p[2])}};
  }
  json save_state() const override { return {{"count", count_}, {"input", input_->save_state()}}; }
  void restore_state(const json& state) override {
    count_ = state.at("count").get<int64_t>();
    input_->restore_state(state.at("input"));
  }

 private:
  const PaddedBatchNode& node_;
  std::unique_ptr<ItemIterator> input_;
  int64_t count_ = 0;
};
std::unique_ptr<ItemIterator> PaddedBatchNode::make_iterator(uint64_t salt) const {
  return std::make_unique<PaddedBatchIterator>(*this, salt);
}

// ---- interleave (and flat_map): the elements of a dataset made from each input element, taken in turns ----
using DatasetFn = std::function<Dataset(const Element&)>;

class InterleaveNode final : public DatasetNode {
 public:
  InterleaveNode(NodePtr input, DatasetFn fn, int64_t cycle_length, int64_t block_length)
      : DatasetNode("interleave", {{"cycle_length", cycle_length}, {"block_length", block_length}}, {std::move(input)}),
        fn_(std::move(fn)),
        cycle_length_(cycle_length),
        block_length_(block_length) {
    LS_CHECK(cycle_length >= 1 && block_length >= 1, InvalidArgumentError,
             "interleave: cycle_length and block_length must be at least 1, got ", cycle_length, " and ", block_length,
             "; pass e.g. cycle_length=4, block_length=1");
  }
  int64_t cardinality() const override { return data::kUnknownCardinality; }
  NodePtr with_inputs(std::vector<NodePtr> inputs) const override {
    LS_CHECK(inputs.size() == 1, ValueError, "interleave takes one input dataset, got ", inputs.size());
    return std::make_shared<InterleaveNode>(std::move(inputs[0]), fn_, cycle_length_, block_length_);
  }
  std::unique_ptr<ItemIterator> make_iterator(uint64_t salt) const override;

  DatasetFn fn_;
  int64_t cycle_length_, block_length_;
};

// TF's order (the sequential InterleaveDataset): a cycle of open datasets, block_length elements from each in turn; an
// ended one is replaced, at its place in the cycle, by the dataset of the next input element. The state is the
// number of elements given, replayed on restore (the datasets that are open are not saved).
class InterleaveIterator final : public ItemIterator {
 public:
  InterleaveIterator(const InterleaveNode& node, uint64_t salt)
      : node_(node),
        salt_(salt),
        input_(node.inputs()[0]->make_iterator(salt)),
        cycle_(static_cast<size_t>(node.cycle_length_)) {}
  std::optional<Item> next() override {
    while (!end_of_input_ || open_ > 0) {
      std::optional<data::Iterator>& current = cycle_[index_];
      if (current) {
        if (std::optional<Element> e = current->next()) {
          if (++block_ == node_.block_length_) advance();
          ++count_;
          return Item{-1, std::move(*e)};
        }
        current.reset();
        --open_;
        advance();
      } else if (!end_of_input_) {
        std::optional<Item> item = input_->next();
        if (!item) {
          end_of_input_ = true;
          continue;
        }
        current = node_.fn_(materialize(*item, *node_.inputs()[0])).make_iterator(salt_);
        ++open_;
      } else {
        advance();
      }
    }
    return std::nullopt;
  }
  json save_state() const override { return {{"count", count_}}; }
  void restore_state(const json& state) override {
    const int64_t count = state.at("count").get<int64_t>();
    input_ = node_.inputs()[0]->make_iterator(salt_);
    for (auto& it : cycle_) it.reset();
    index_ = 0, block_ = 0, open_ = 0, count_ = 0, end_of_input_ = false;
    for (int64_t i = 0; i < count; ++i)
      LS_CHECK(next().has_value(), ValueError, "restore_state: interleave ended after ", i, " of the ", count,
               " elements it had given; its function and input must be deterministic");
  }

 private:
  void advance() {
    block_ = 0;
    index_ = (index_ + 1) % cycle_.size();
  }
  const InterleaveNode& node_;
  uint64_t salt_;
  std::unique_ptr<ItemIterator> input_;
  std::vector<std::optional<data::Iterator>> cycle_;
  size_t index_ = 0;
  int64_t block_ = 0, open_ = 0, count_ = 0;
  bool end_of_input_ = false;
};
std::unique_ptr<ItemIterator> InterleaveNode::make_iterator(uint64_t salt) const {
  return std::make_unique<InterleaveIterator>(*this, salt);
}

// ---- concatenate: every element of the first input, then of the second ----
class ConcatenateNode final : public DatasetNode {
 public:
  ConcatenateNode(NodePtr first, NodePtr second)
      : DatasetNode("concatenate", json::object(), {std::move(first), std::move(second)}) {}
  int64_t cardinality() const override {  // TF's rule
    const int64_t a = inputs()[0]->cardinality(), b = inputs()[1]->cardinality();
    if (a == data::kInfiniteCardinality || b == data::kInfiniteCardinality) return data::kInfiniteCardinality;
    if (a == data::kUnknownCardinality || b == data::kUnknownCardinality) return data::kUnknownCardinality;
    return a + b;
  }
  NodePtr with_inputs(std::vector<NodePtr> inputs) const override {
    LS_CHECK(inputs.size() == 2, ValueError, "concatenate has 2 input datasets, got ", inputs.size());
    return std::make_shared<ConcatenateNode>(std::move(inputs[0]), std::move(inputs[1]));
  }
  std::unique_ptr<ItemIterator> make_iterator(uint64_t salt) const override;
};

// State: which input is being read and its state; the second input's iterator is made when the first ends.
class ConcatenateIterator final : public ItemIterator {
 public:
  ConcatenateIterator(const ConcatenateNode& node, uint64_t salt)
      : node_(node), salt_(salt), input_(node.inputs()[0]->make_iterator(salt)) {}
  std::optional<Item> next() override {
    while (true) {
      std::optional<Item> item = input_->next();
      if (item) return Item{-1, materialize(*item, *node_.inputs()[which_])};
      if (which_ == 1) return std::nullopt;
      which_ = 1;
      input_ = node_.inputs()[1]->make_iterator(salt_);
    }
  }
  json save_state() const override { return {{"which", which_}, {"input", input_->save_state()}}; }
  void restore_state(const json& state) override {
    const int64_t which = state.at("which").get<int64_t>();
    LS_CHECK(which == 0 || which == 1, ValueError, "restore_state: concatenate's saved input is ", which,
             ", not 0 or 1; pass the state save_state() returned");
    which_ = which;
    input_ = node_.inputs()[static_cast<size_t>(which_)]->make_iterator(salt_);
    input_->restore_state(state.at("input"));
  }

 private:
  const ConcatenateNode& node_;
  uint64_t salt_;
  int64_t which_ = 0;
  std::unique_ptr<ItemIterator> input_;
};
std::unique_ptr<ItemIterator> ConcatenateNode::make_iterator(uint64_t salt) const {
  return std::make_unique<ConcatenateIterator>(*this, salt);
}

// ---- from_generator: a Python iterator as a source ----
// `make` returns a new Python iterator whose __next__ gives an element's slots. The state is the number of elements
// taken: restoring makes a new iterator and replays that many, so the generator must be deterministic.
class GeneratorNode final : public DatasetNode {
 public:
  explicit GeneratorNode(PyRef make) : DatasetNode("from_generator", json::object(), {}), make_(std::move(make)) {}
  int64_t cardinality() const override { return data::kUnknownCardinality; }
  NodePtr with_inputs(std::vector<NodePtr> inputs) const override {
    LS_CHECK(inputs.empty(), ValueError, "from_generator takes no input dataset, got ", inputs.size());
    return std::make_shared<GeneratorNode>(make_);
  }
  std::unique_ptr<ItemIterator> make_iterator(uint64_t salt) const override;
  PyRef make_;
};

class GeneratorIterator final : public ItemIterator {
 public:
  explicit GeneratorIterator(const GeneratorNode& node) : node_(node) {}
  std::optional<Item> next() override {
    nb::gil_scoped_acquire gil;
    if (!it_) it_ = PyRef(node_.make_.get()());
    PyObject* slots = PyIter_Next(it_.get().ptr());
    if (!slots) {
      if (PyErr_Occurred()) throw nb::python_error();
      return std::nullopt;
    }
    nb::object owned = nb::steal(slots);
    ++count_;
    return Item{-1, element_from_python(owned)};
  }
  json save_state() const override { return {{"count", count_}}; }
  void restore_state(const json& state) override {
    const int64_t count = state.at("count").get<int64_t>();
    {
      nb::gil_scoped_acquire gil;
      it_ = PyRef(node_.make_.get()());
    }
    count_ = 0;
    for (int64_t i = 0; i < count; ++i)
      LS_CHECK(next().has_value(), ValueError, "restore_state: from_generator ended after ", i, " of the ", count,
               " elements it had given; the generator must yield the same elements on every call");
  }

 private:
  const GeneratorNode& node_;
  PyRef it_;
  int64_t count_ = 0;
};
std::unique_ptr<ItemIterator> GeneratorNode::make_iterator(uint64_t) const {
  return std::make_unique<GeneratorIterator>(*this);
}

// The pipeline without its shuffle and prefetch stages: what learning an element's structure pulls one element
// through, so that it does not fill a shuffle buffer.
NodePtr without_shuffles(const NodePtr& node) {
  if ((node->op() == "shuffle" || node->op() == "prefetch") && node->inputs().size() == 1)
    return without_shuffles(node->inputs()[0]);
  if (node->inputs().empty()) return node;
  std::vector<NodePtr> inputs;
  for (const NodePtr& in : node->inputs()) inputs.push_back(without_shuffles(in));
  return node->with_inputs(std::move(inputs));
}

// ---- the Python face ----

// An iterator that Python owns. Destroying it may join a prefetch thread that waits for the GIL in a callback, so
// the GIL is released first. Live ones are listed so that close_all() can stop their threads while the interpreter
// still lets threads take the GIL: at finalization a thread asking for it is ended with a forced unwind, which the
// pipeline's threads (they catch everything to pass errors on) turn into std::terminate.
class PyIterator {
 public:
  explicit PyIterator(data::Iterator it) : it_(std::make_unique<data::Iterator>(std::move(it))) { enlist(); }
  PyIterator(PyIterator&& other) noexcept : it_(std::move(other.it_)), mutex_(std::move(other.mutex_)) { enlist(); }
  PyIterator& operator=(PyIterator&&) = delete;
  ~PyIterator() {
    {
      std::lock_guard lock(live_mutex());
      live().erase(this);
    }
    close();
  }

  nb::tuple next() {
    LS_CHECK(it_ != nullptr, RuntimeError, "the dataset iterator was closed (the interpreter is exiting)");
    std::optional<Element> e;
    {
      nb::gil_scoped_release unlocked;
      std::lock_guard lock(*mutex_);  // Python threads may share an iterator, as TF's allow
      if (it_) e = it_->next();
    }
    if (!e) throw nb::stop_iteration();
    return slots_of(*e);
  }
  data::Iterator& get() {
    LS_CHECK(it_ != nullptr, RuntimeError, "the dataset iterator was closed (the interpreter is exiting)");
    return *it_;
  }
  void close() {
    if (!it_) return;
    nb::gil_scoped_release unlocked;
    std::lock_guard lock(*mutex_);
    it_.reset();
  }
  static void close_all() {
    std::vector<PyIterator*> open;
    {
      std::lock_guard lock(live_mutex());
      open.assign(live().begin(), live().end());
    }
    for (PyIterator* it : open) it->close();
  }

 private:
  void enlist() {
    std::lock_guard lock(live_mutex());
    live().insert(this);
  }
  static std::set<PyIterator*>& live() {
    static auto* set = new std::set<PyIterator*>;  // never destroyed: iterators may outlive static destruction
    return *set;
  }
  static std::mutex& live_mutex() {
    static auto* mutex = new std::mutex;
    return *mutex;
  }
  std::unique_ptr<data::Iterator> it_;
  std::unique_ptr<std::mutex> mutex_ = std::make_unique<std::mutex>();
};

const char* policy_name(data::Options::AutoShardPolicy p) {
  switch (p) {
    case data::Options::AutoShardPolicy::OFF:
      return "OFF";
    case data::Options::AutoShardPolicy::FILE:
      return "FILE";
    case data::Options::AutoShardPolicy::DATA:
      return "DATA";
    default:
      return "AUTO";
  }
}

data::Options::AutoShardPolicy policy_from_name(const std::string& name) {
  for (auto p : {data::Options::AutoShardPolicy::AUTO, data::Options::AutoShardPolicy::FILE,
                 data::Options::AutoShardPolicy::DATA, data::Options::AutoShardPolicy::OFF})
    if (name == policy_name(p)) return p;
  throw InvalidArgumentError(make_message("unknown auto_shard_policy ", name,
                                          "; use tf.data.experimental.AutoShardPolicy.AUTO, FILE, DATA or OFF"));
}

// Runs a Dataset method with the GIL released (sources copy their tensors; nothing here calls Python).
template <typename F>
Dataset unlocked(F&& f) {
  nb::gil_scoped_release unlocked;
  return f();
}

void bind_dataset(nb::module_& m) {
  using data::experimental::CsvOptions;
  nb::class_<CsvOptions>(m, "CsvOptions")
      .def(nb::init<>())
      .def_rw("column_names", &CsvOptions::column_names)
      .def_rw("column_defaults", &CsvOptions::column_defaults)
      .def_rw("label_name", &CsvOptions::label_name)
      .def_rw("select_columns", &CsvOptions::select_columns)
      .def_rw("field_delim", &CsvOptions::field_delim)
      .def_rw("use_quote_delim", &CsvOptions::use_quote_delim)
      .def_rw("na_value", &CsvOptions::na_value)
      .def_rw("header", &CsvOptions::header)
      .def_rw("num_epochs", &CsvOptions::num_epochs)
      .def_rw("shuffle", &CsvOptions::shuffle)
      .def_rw("shuffle_buffer_size", &CsvOptions::shuffle_buffer_size)
      .def_rw("shuffle_seed", &CsvOptions::shuffle_seed)
      .def_rw("num_rows_for_inference", &CsvOptions::num_rows_for_inference)
      .def_rw("compression_type", &CsvOptions::compression_type);
  nb::class_<PyIterator>(m, "Iterator")
      .def("__iter__", [](nb::handle self) { return self; })
      .def("__next__", &PyIterator::next)
      .def("save_state", [](PyIterator& self) { return self.get().save_state().dump(); })
      .def("restore_state", [](PyIterator& self, const std::string& state) {
        json parsed;
        try {
          parsed = json::parse(state);
        } catch (const json::exception&) {
          throw ValueError("restore_state: the state is not JSON; pass the string save_state() returned");
        }
        nb::gil_scoped_release unlocked;
        self.get().restore_state(parsed);
      });

  nb::class_<Dataset>(m, "Dataset")
      .def_static("from_tensor_slices",
                  [](const std::vector<nb::handle>& slots) {
                    std::vector<Tensor> t;
                    for (nb::handle s : slots) t.push_back(to_tensor(s));
                    Element e = element_of(t);
                    return unlocked([&] { return Dataset::from_tensor_slices(e.x, e.y, e.sample_weight); });
                  })
      .def_static(
          "make_csv_dataset",
          [](const std::string& file_pattern, int64_t batch_size, data::experimental::CsvOptions options) {
            nb::gil_scoped_release unlocked;  // reads the first rows to infer the label's dtype
            return data::experimental::make_csv_dataset(file_pattern, batch_size, options);
          },
          nb::arg("file_pattern"), nb::arg("batch_size"), nb::arg("options"))
      .def_static("from_generator",
                  [](nb::handle make) { return Dataset(std::make_shared<GeneratorNode>(PyRef(make))); })
      .def_static("range", &Dataset::range, nb::arg("start"), nb::arg("stop"), nb::arg("step") = 1)
      .def_static(
          "TFRecordDataset",
          [](std::vector<std::string> filenames, std::string compression_type) {
            return data::TFRecordDataset(std::move(filenames), {std::move(compression_type)}).map([](const Element& e) {
              return Element{with_length_header(e.x)};
            });
          },
          nb::arg("filenames"), nb::arg("compression_type") = "")
      // combine(parts) -> slots; None concatenates the parts' components (at most three in all).
      .def_static(
          "zip",
          [](const std::vector<Dataset>& datasets, nb::handle combine) {
            LS_CHECK(!datasets.empty(), InvalidArgumentError, "zip: pass at least one dataset");
            std::vector<NodePtr> inputs;
            for (const Dataset& d : datasets) inputs.push_back(d.node_ptr());
            Combine fn = concatenate_slots;
            if (!combine.is_none())
              fn = [f = PyRef(combine)](const std::vector<Element>& parts) {
                nb::gil_scoped_acquire gil;
                nb::list py;
                for (const Element& e : parts) py.append(slots_of(e));
                return element_from_python(f.get()(py));
              };
            return Dataset(std::make_shared<ZipNode>(std::move(inputs), std::move(fn)), datasets[0].options());
          },
          nb::arg("datasets"), nb::arg("combine").none())
      .def("shuffle", &Dataset::shuffle, nb::arg("buffer_size"), nb::arg("seed").none(),
           nb::arg("reshuffle_each_iteration"))
      .def("repeat", &Dataset::repeat, nb::arg("count") = -1)
      .def("batch", &Dataset::batch, nb::arg("batch_size"), nb::arg("drop_remainder") = false)
      // slots: per component, None (equal shapes), "last" (pad the last axis: strings) or (shape, value) to pad
      // every axis to shape (-1: the batch's largest) with value.
      .def(
          "padded_batch",
          [](const Dataset& d, int64_t batch_size, bool drop_remainder, const std::vector<nb::handle>& slots) {
            std::vector<SlotPadding> padding;
            for (nb::handle s : slots) {
              if (s.is_none())
                padding.push_back({});
              else if (nb::isinstance<nb::str>(s))
                padding.push_back({SlotPadding::kLastAxis, {}, 0});
              else
                padding.push_back(
                    {SlotPadding::kEveryAxis, nb::cast<std::vector<int64_t>>(s[0]), nb::cast<double>(s[1])});
            }
            return Dataset(
                std::make_shared<PaddedBatchNode>(d.node_ptr(), batch_size, drop_remainder, std::move(padding)),
                d.options());
          },
          nb::arg("batch_size"), nb::arg("drop_remainder"), nb::arg("slots"))
      .def("shard", &Dataset::shard, nb::arg("num_shards"), nb::arg("index"))
      .def("take", &Dataset::take, nb::arg("count"))
      .def("skip", &Dataset::skip, nb::arg("count"))
      .def("cache", &Dataset::cache)
      .def("prefetch", &Dataset::prefetch, nb::arg("buffer_size"))
      .def("unbatch",
           [](const Dataset& d) { return Dataset(std::make_shared<UnbatchNode>(d.node_ptr()), d.options()); })
      // fn(slots) -> slots, called by whichever thread runs the pipeline.
      .def("map",
           [](const Dataset& d, nb::handle fn) {
             return d.map([f = PyRef(fn)](const Element& e) {
               nb::gil_scoped_acquire gil;
               return element_from_python(f.get()(slots_of(e)));
             });
           })
      .def("filter",
           [](const Dataset& d, nb::handle predicate) {
             return d.filter([f = PyRef(predicate)](const Element& e) {
               nb::gil_scoped_acquire gil;
               return nb::cast<bool>(f.get()(slots_of(e)));
             });
           })
      .def("concatenate",
           [](const Dataset& d, const Dataset& other) {
             return Dataset(std::make_shared<ConcatenateNode>(d.node_ptr(), other.node_ptr()), d.options());
           })
      // fn(slots) -> the C++ Dataset to take elements from.
      .def("interleave",
           [](const Dataset& d, nb::handle fn, int64_t cycle_length, int64_t block_length) {
             DatasetFn made = [f = PyRef(fn)](const Element& e) {
               nb::gil_scoped_acquire gil;
               return nb::cast<Dataset>(f.get()(slots_of(e)));
             };
             return Dataset(std::make_shared<InterleaveNode>(d.node_ptr(), std::move(made), cycle_length, block_length),
                            d.options());
           })
      .def("with_options",
           [](const Dataset& d, const std::string& auto_shard_policy) {
             data::Options options = d.options();
             options.auto_shard_policy = policy_from_name(auto_shard_policy);
             return d.with_options(options);
           })
      .def_prop_ro("auto_shard_policy", [](const Dataset& d) { return policy_name(d.options().auto_shard_policy); })
      .def("cardinality", &Dataset::cardinality)
      .def("without_shuffles", [](const Dataset& d) { return Dataset(without_shuffles(d.node_ptr()), d.options()); })
      .def("make_iterator", [](const Dataset& d) { return PyIterator(d.make_iterator()); })
      .def("make_iterator", [](const Dataset& d, uint64_t iteration) { return PyIterator(d.make_iterator(iteration)); })
      .def("__iter__", [](const Dataset& d) { return PyIterator(d.make_iterator()); })
      // The stages from the output back to the source, as the C++ pipeline names them ("batch(batch_size=2, ...)").
      .def_prop_ro("stages", [](const Dataset& d) {
        std::vector<std::string> out;
        for (const DatasetNode* n = &d.node(); n; n = n->inputs().empty() ? nullptr : n->inputs()[0].get())
          out.push_back(n->str());
        return out;
      });
}

// ---- tf.io: TFRecord files, tf.train.Example, gfile ----

std::variant<data::FixedLenFeature, data::VarLenFeature> feature_of(nb::handle spec) {
  const std::string kind = nb::cast<std::string>(spec[0]);
  if (kind == "var") return data::VarLenFeature{to_dtype(spec[1])};
  nb::handle fallback = spec[3];
  data::FixedLenFeature f{nb::cast<std::vector<int64_t>>(spec[1]), to_dtype(spec[2]), {}};
  if (!fallback.is_none()) f.default_value = to_tensor(fallback, f.dtype == data::kString ? DType::uint8 : f.dtype);
  return f;
}

// {key: ("fixed", shape, dtype, default or None) | ("var", dtype)} as the C++ FeatureSpec.
data::FeatureSpec spec_of(const nb::dict& features) {
  data::FeatureSpec spec;
  for (auto [key, value] : features) spec.emplace(nb::cast<std::string>(key), feature_of(value));
  return spec;
}

// {key: Tensor} for dense features, {key: (indices, values or [bytes], dense_shape)} for sparse ones.
nb::tuple parsed_to_python(const data::ParsedFeatures& parsed) {
  nb::dict dense, sparse;
  for (const auto& [key, t] : parsed.dense) dense[key.c_str()] = nb::cast(t);
  for (const auto& [key, s] : parsed.sparse) {
    nb::object values = s.values.defined() ? nb::cast(s.values) : nb::object();
    if (!s.values.defined()) {
      nb::list strings;
      for (const std::string& v : s.string_values) strings.append(nb::bytes(v.data(), v.size()));
      values = strings;
    }
    sparse[key.c_str()] = nb::make_tuple(s.indices, values, s.dense_shape);
  }
  return nb::make_tuple(dense, sparse);
}

std::string bytes_of(nb::handle v) {
  if (nb::isinstance<nb::bytes>(v)) {
    auto b = nb::borrow<nb::bytes>(v);
    return std::string(b.c_str(), b.size());
  }
  return nb::cast<std::string>(v);
}

void bind_io(nb::module_& m) {
  m.def("parse_single_example", [](nb::handle serialized, const nb::dict& features) {
    std::string bytes = bytes_of(serialized);
    data::FeatureSpec spec = spec_of(features);
    data::ParsedFeatures parsed;
    {
      nb::gil_scoped_release unlocked;
      parsed = data::parse_single_example(std::string_view(bytes), spec);
    }
    return parsed_to_python(parsed);
  });
  m.def("parse_example", [](const std::vector<nb::handle>& serialized, const nb::dict& features) {
    std::vector<std::string> records;
    for (nb::handle s : serialized) records.push_back(bytes_of(s));
    data::FeatureSpec spec = spec_of(features);
    data::ParsedFeatures parsed;
    {
      nb::gil_scoped_release unlocked;
      parsed = data::parse_example(records, spec);
    }
    return parsed_to_python(parsed);
  });

  nb::class_<data::TFRecordWriter>(m, "TFRecordWriter")
      .def(
          "__init__",
          [](data::TFRecordWriter* w, std::string path, std::string compression_type) {
            new (w) data::TFRecordWriter(std::move(path), {std::move(compression_type)});
          },
          nb::arg("path"), nb::arg("compression_type") = "")
      .def("write", [](data::TFRecordWriter& w, nb::handle record) { w.write(bytes_of(record)); })
      .def("flush", &data::TFRecordWriter::flush)
      .def("close", &data::TFRecordWriter::close);

  namespace gfile = io::gfile;
  nb::module_ g = m.def_submodule("gfile", "tf.io.gfile over lockstep::io::gfile");
  g.def("exists", &gfile::exists);
  g.def("isdir", &gfile::isdir);
  g.def("makedirs", &gfile::makedirs);
  g.def("mkdir", &gfile::mkdir);
  g.def("rmtree", &gfile::rmtree);
  g.def("remove", &gfile::remove);
  g.def("rename", &gfile::rename, nb::arg("src"), nb::arg("dst"), nb::arg("overwrite") = false);
  g.def("copy", &gfile::copy, nb::arg("src"), nb::arg("dst"), nb::arg("overwrite") = false);
  g.def("glob", &gfile::glob);
  g.def("listdir", &gfile::listdir);
  g.def("walk", [](const std::string& top, bool topdown) {
    nb::list out;
    for (const gfile::WalkEntry& e : gfile::walk(top, topdown))
      out.append(nb::make_tuple(e.dirpath, nb::cast(e.dirnames), nb::cast(e.filenames)));
    return out;
  });
  g.def("stat", [](const std::string& path) {
    gfile::FileStatistics s = gfile::stat(path);
    return nb::make_tuple(s.length, s.mtime_nsec, s.is_directory);
  });
  g.def("join", [](const std::vector<std::string>& parts) {
    std::string out = parts.empty() ? "" : parts[0];
    for (size_t i = 1; i < parts.size(); ++i) out = gfile::join(out, parts[i]);
    return out;
  });
  auto as_bytes = [](const std::string& s) { return nb::bytes(s.data(), s.size()); };
  nb::class_<gfile::GFile>(g, "GFile")
      .def(nb::init<std::string, std::string>(), nb::arg("name"), nb::arg("mode") = "r")
      .def(
          "read", [as_bytes](gfile::GFile& f, int64_t n) { return as_bytes(f.read(n)); }, nb::arg("n") = -1)
      .def("readline", [as_bytes](gfile::GFile& f) { return as_bytes(f.readline()); })
      .def("readlines",
           [as_bytes](gfile::GFile& f) {
             nb::list out;
             for (const std::string& line : f.readlines()) out.append(as_bytes(line));
             return out;
           })
      .def("write", [](gfile::GFile& f, nb::handle data) { f.write(bytes_of(data)); })
      .def("flush", &gfile::GFile::flush)
      .def("close", &gfile::GFile::close)
      .def("seek", &gfile::GFile::seek, nb::arg("offset"), nb::arg("whence") = 0)
      .def("tell", &gfile::GFile::tell)
      .def("size", &gfile::GFile::size)
      .def_prop_ro("name", &gfile::GFile::name)
      .def_prop_ro("mode", &gfile::GFile::mode);
}

}  // namespace

void bind_data(nb::module_& m) {
  nb::module_ d = m.def_submodule("data", "tf.data over lockstep::data");
  d.attr("AUTOTUNE") = data::kAutotune;
  d.attr("INFINITE_CARDINALITY") = data::kInfiniteCardinality;
  d.attr("UNKNOWN_CARDINALITY") = data::kUnknownCardinality;
  bind_dataset(d);
  d.def("close_iterators", &PyIterator::close_all,
        "Stops every open dataset iterator and its threads (at exit, before the interpreter finalizes).");
  nb::module_ io =
      m.def_submodule("io", "tf.io over lockstep::data's TFRecord and Example code and lockstep::io::gfile");
  bind_io(io);
}

}  // namespace lockstep::python
