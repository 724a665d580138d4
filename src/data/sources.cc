// The two sources, from_tensor_slices and range. Both are RowSources: their iterator yields lazy row
// indices, and elements are made only where a stage needs values (views of one row, or a batch gathered
// with one memcpy per row).
#include <cstring>

#include "nodes-impl.h"

namespace lockstep::data::detail {

using nlohmann::json;

namespace {

// Yields rows 0, 1, ..., num_rows - 1 of a source as lazy items; its state is the position.
class RowIterator final : public ItemIterator {
 public:
  explicit RowIterator(int64_t num_rows) : num_rows_(num_rows) {}
  std::optional<Item> next() override {
    if (position_ >= num_rows_) return std::nullopt;
    return Item{position_++, {}};
  }
  json save_state() const override { return {{"position", position_}}; }
  void restore_state(const json& state) override {
    int64_t position = state.at("position").get<int64_t>();
    LS_CHECK(position >= 0 && position <= num_rows_, ValueError, "restore_state: the saved source position ", position,
             " is outside [0, ", num_rows_, "]; restore into an iterator of the same pipeline");
    position_ = position;
  }

 private:
  int64_t num_rows_;
  int64_t position_ = 0;
};

class SourceNode : public DatasetNode, public RowSource {
 public:
  using DatasetNode::DatasetNode;
  int64_t cardinality() const override { return num_rows(); }
  const RowSource* row_source() const override { return this; }
  std::unique_ptr<ItemIterator> make_iterator(uint64_t) const override {
    return std::make_unique<RowIterator>(num_rows());
  }
};

// Row i of t: a view of shape t.shape[1:].
Tensor row_view(const Tensor& t, int64_t i) {
  std::vector<int64_t> dims(t.shape().dims().begin() + 1, t.shape().dims().end());
  std::vector<int64_t> strides(t.strides().begin() + 1, t.strides().end());
  return Tensor(t.storage(), Shape(std::move(dims)), std::move(strides), t.offset() + i * t.strides()[0], t.dtype());
}

// The given rows of a contiguous tensor, stacked into a new contiguous tensor.
Tensor gather_rows(const Tensor& t, std::span<const int64_t> rows) {
  std::vector<int64_t> dims = t.shape().dims();
  dims[0] = static_cast<int64_t>(rows.size());
  Tensor out = Tensor::empty(Shape(dims), t.dtype());
  const size_t row_bytes = static_cast<size_t>(t.dim(0) ? t.numel() / t.dim(0) : 0) * dtype_size(t.dtype());
  const auto* src = static_cast<const char*>(t.raw_data());
  auto* dst = static_cast<char*>(out.raw_data());
  for (int64_t row : rows) {
    std::memcpy(dst, src + static_cast<size_t>(row) * row_bytes, row_bytes);
    dst += row_bytes;
  }
  return out;
}

std::string describe_tensor(const Tensor& t) {
  return t.defined() ? make_message(dtype_name(t.dtype()), " ", t.shape().str()) : "None";
}

class TensorSlicesNode final : public SourceNode {
 public:
  // Components are made contiguous once here, so that every row is one memcpy.
  TensorSlicesNode(const Tensor& x, const Tensor& y, const Tensor& sample_weight)
      : SourceNode("from_tensor_slices",
                   {{"x", describe_tensor(x)}, {"y", describe_tensor(y)}, {"sample_weight", describe_tensor(sample_weight)}},
                   {}),
        x_(x.contiguous()),
        y_(y.defined() ? y.contiguous() : Tensor()),
        sample_weight_(sample_weight.defined() ? sample_weight.contiguous() : Tensor()) {}

  int64_t num_rows() const override { return x_.dim(0); }
  Element row(int64_t i) const override { return apply([&](const Tensor& t) { return row_view(t, i); }); }
  Element gather(std::span<const int64_t> rows) const override {
    return apply([&](const Tensor& t) { return gather_rows(t, rows); });
  }
  NodePtr with_inputs(std::vector<NodePtr> inputs) const override {
    LS_CHECK(inputs.empty(), ValueError, "from_tensor_slices takes no input dataset, got ", inputs.size());
    return std::make_shared<TensorSlicesNode>(x_, y_, sample_weight_);
  }

 private:
  template <typename F> Element apply(F&& f) const {
    return {f(x_), y_.defined() ? f(y_) : Tensor(), sample_weight_.defined() ? f(sample_weight_) : Tensor()};
  }
  Tensor x_, y_, sample_weight_;
};

class RangeNode final : public SourceNode {
 public:
  RangeNode(int64_t start, int64_t stop, int64_t step)
      : SourceNode("range", {{"start", start}, {"stop", stop}, {"step", step}}, {}),
        start_(start),
        stop_(stop),
        step_(step) {}

  int64_t num_rows() const override {
    // Unsigned differences: stop - start may not fit in int64.
    if (step_ > 0 && stop_ > start_) return static_cast<int64_t>((uint64_t(stop_) - uint64_t(start_) - 1) / uint64_t(step_) + 1);
    if (step_ < 0 && stop_ < start_) return static_cast<int64_t>((uint64_t(start_) - uint64_t(stop_) - 1) / (0 - uint64_t(step_)) + 1);
    return 0;
  }
  Element row(int64_t i) const override {
    Tensor x = Tensor::empty({}, DType::int64);
    *x.data<int64_t>() = value(i);
    return {x, {}, {}};
  }
  Element gather(std::span<const int64_t> rows) const override {
    Tensor x = Tensor::empty({static_cast<int64_t>(rows.size())}, DType::int64);
    int64_t* out = x.data<int64_t>();
    for (size_t k = 0; k < rows.size(); ++k) out[k] = value(rows[k]);
    return {x, {}, {}};
  }
  NodePtr with_inputs(std::vector<NodePtr> inputs) const override {
    LS_CHECK(inputs.empty(), ValueError, "range takes no input dataset, got ", inputs.size());
    return std::make_shared<RangeNode>(start_, stop_, step_);
  }

 private:
  int64_t value(int64_t i) const { return static_cast<int64_t>(uint64_t(start_) + uint64_t(i) * uint64_t(step_)); }
  int64_t start_, stop_, step_;
};

}  // namespace

NodePtr make_tensor_slices_node(const Tensor& x, const Tensor& y, const Tensor& sample_weight) {
  LS_CHECK(x.defined(), InvalidArgumentError, "from_tensor_slices: x is an undefined Tensor; pass the features");
  const std::pair<const char*, const Tensor*> components[] = {{"x", &x}, {"y", &y}, {"sample_weight", &sample_weight}};
  for (const auto& [name, t] : components) {
    if (!t->defined()) continue;
    LS_CHECK(t->rank() >= 1, ValueError, "from_tensor_slices: ", name,
             " is a scalar, but slicing needs rank >= 1 (elements are taken along axis 0); reshape it to [N, ...]");
    LS_CHECK(t->dim(0) == x.dim(0), ValueError, "from_tensor_slices: x has ", x.dim(0), " elements along axis 0 but ",
             name, " has ", t->dim(0), " (shapes ", x.shape().str(), " and ", t->shape().str(),
             "); pass components of the same length");
  }
  return std::make_shared<TensorSlicesNode>(x, y, sample_weight);
}

NodePtr make_range_node(int64_t start, int64_t stop, int64_t step) {
  return std::make_shared<RangeNode>(start, stop, step);
}

}  // namespace lockstep::data::detail
