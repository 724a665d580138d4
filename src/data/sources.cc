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

}  // namespace

// Row i of t: a view of shape t.shape[1:].
Tensor row_view(const Tensor& t, int64_t i) {
  std::vector<int64_t> dims(t.shape().dims().begin() + 1, t.shape().dims().end());
  std::vector<int64_t> strides(t.strides().begin() + 1, t.strides().end());
  return Tensor(t.storage(), Shape(std::move(dims)), std::move(strides), t.offset() + i * t.strides()[0], t.dtype());
}

namespace {

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

// Row i of a string tensor, and the given rows stacked: the strings are copied.
StringTensor string_rows(const StringTensor& s, std::span<const int64_t> rows, bool keep_axis) {
  std::vector<int64_t> dims = s.shape.dims();
  const size_t per_row = static_cast<size_t>(dims[0] ? s.shape.numel() / dims[0] : 0);
  std::vector<std::string> values;
  values.reserve(per_row * rows.size());
  for (int64_t row : rows)
    values.insert(values.end(), s.values.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(row) * per_row),
                  s.values.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(row + 1) * per_row));
  if (keep_axis)
    dims[0] = static_cast<int64_t>(rows.size());
  else
    dims.erase(dims.begin());
  return StringTensor(Shape(std::move(dims)), std::move(values));
}

// The (x, y, sample_weight) tuples of the three-slot API keep the parameters they always had, so that iterator
// states saved before nested elements still name this stage the same way.
json slices_params(const Element& e) {
  const bool legacy = e.is_tensor() || (e.kind() == Element::Kind::kTuple && e.size() >= 2 && e.size() <= 3 &&
                                        e[0].is_tensor() && e[1].is_leaf() && !e[1].is_string() &&
                                        (e.size() < 3 || (e[2].is_tensor() || e[2].is_none())));
  if (!legacy) return {{"element", e.str()}};
  return {{"x", describe_tensor(e.x())},
          {"y", describe_tensor(e.y())},
          {"sample_weight", describe_tensor(e.sample_weight())}};
}

class TensorSlicesNode final : public SourceNode {
 public:
  // Leaves are made contiguous once here, so that every row is one memcpy.
  explicit TensorSlicesNode(const Element& structure)
      : SourceNode("from_tensor_slices", slices_params(structure), {}),
        structure_(structure.map([](const Element& leaf) {
          return leaf.is_tensor() ? Element(leaf.tensor().contiguous()) : leaf;
        })) {
    for (const Element& leaf : structure_.flatten()) {
      if (leaf.is_none()) continue;
      num_rows_ = leaf.is_tensor() ? leaf.tensor().dim(0) : leaf.string().dim(0);
      break;
    }
  }

  int64_t num_rows() const override { return num_rows_; }
  Element row(int64_t i) const override {
    const int64_t rows[] = {i};
    return structure_.map([&](const Element& leaf) -> Element {
      if (leaf.is_tensor()) return row_view(leaf.tensor(), i);
      if (leaf.is_string()) return string_rows(leaf.string(), rows, false);
      return leaf;
    });
  }
  Element gather(std::span<const int64_t> rows) const override {
    return structure_.map([&](const Element& leaf) -> Element {
      if (leaf.is_tensor()) return gather_rows(leaf.tensor(), rows);
      if (leaf.is_string()) return string_rows(leaf.string(), rows, true);
      return leaf;
    });
  }
  NodePtr with_inputs(std::vector<NodePtr> inputs) const override {
    LS_CHECK(inputs.empty(), ValueError, "from_tensor_slices takes no input dataset, got ", inputs.size());
    return std::make_shared<TensorSlicesNode>(structure_);
  }

 private:
  Element structure_;
  int64_t num_rows_ = 0;
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
    return x;
  }
  Element gather(std::span<const int64_t> rows) const override {
    Tensor x = Tensor::empty({static_cast<int64_t>(rows.size())}, DType::int64);
    int64_t* out = x.data<int64_t>();
    for (size_t k = 0; k < rows.size(); ++k) out[k] = value(rows[k]);
    return x;
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

NodePtr make_tensor_slices_node(const Element& structure) {
  const std::vector<Element> leaves = structure.flatten();
  const Element* first = nullptr;
  auto rank = [](const Element& l) { return l.is_tensor() ? l.tensor().rank() : l.string().rank(); };
  auto length = [](const Element& l) { return l.is_tensor() ? l.tensor().dim(0) : l.string().dim(0); };
  for (const Element& leaf : leaves) {
    if (leaf.is_none()) continue;
    LS_CHECK(rank(leaf) >= 1, ValueError, "from_tensor_slices: the component ", leaf.str(), " of ", structure.str(),
             " is a scalar, but slicing needs rank >= 1 (elements are taken along axis 0); reshape it to [N, ...]");
    if (first == nullptr) first = &leaf;
    LS_CHECK(length(leaf) == length(*first), ValueError, "from_tensor_slices: the components of ", structure.str(),
             " have different lengths along axis 0 (", first->str(), " and ", leaf.str(),
             "); pass components of the same length");
  }
  LS_CHECK(first != nullptr, InvalidArgumentError, "from_tensor_slices: ", structure.str(),
           " holds no tensor; pass the features");
  return std::make_shared<TensorSlicesNode>(structure);
}

NodePtr make_range_node(int64_t start, int64_t stop, int64_t step) {
  return std::make_shared<RangeNode>(start, stop, step);
}

}  // namespace lockstep::data::detail
