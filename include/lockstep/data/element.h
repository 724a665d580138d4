// The element of a dataset, nested as tf.data's: tuples, lists and dicts (keys sorted, as tf.nest orders them) of
// any depth, whose leaves are numeric Tensors or StringTensors (TF's tf.string), plus Keras' (x, y, sample_weight)
// view of it.
#pragma once
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lockstep/tensor/tensor.h"

namespace lockstep::data {

// TF's tf.string tensor: a shape and its byte strings in row-major order. A leaf type of the data layer, not a core
// DType: every kernel, op and the autograd tape work on fixed-size numbers, and strings only travel through input
// pipelines (records, file names, CSV fields) until a parse step turns them into numbers.
struct StringTensor {
  Shape shape;
  std::vector<std::string> values;  // shape.numel() of them

  StringTensor() = default;
  // Throws InvalidArgumentError when values.size() != shape.numel().
  StringTensor(Shape shape, std::vector<std::string> values);
  static StringTensor scalar(std::string value) { return StringTensor(Shape(), {std::move(value)}); }
  int64_t rank() const { return static_cast<int64_t>(shape.dims().size()); }
  int64_t dim(int64_t axis) const { return shape.dims()[static_cast<size_t>(axis)]; }
  // The only string of a scalar (or one-string) tensor.
  const std::string& item() const;
  bool operator==(const StringTensor& other) const { return shape == other.shape && values == other.values; }
};

// A nested element: None, a Tensor leaf, a StringTensor leaf, or a tuple, list or dict of elements. Copies are cheap
// (tensors share their storage, strings their buffer). Element{a, b} is the tuple (a, b); Element(t) is the leaf t.
class Element {
 public:
  enum class Kind { kNone, kTensor, kString, kTuple, kList, kDict };

  Element() = default;
  Element(Tensor t);        // NOLINT(google-explicit-constructor): a leaf; an undefined Tensor is None
  Element(StringTensor s);  // NOLINT(google-explicit-constructor)
  Element(std::initializer_list<Element> items);  // a tuple
  static Element tuple(std::vector<Element> items);
  static Element list(std::vector<Element> items);
  // Sorted by key, as tf.nest orders a dict; throws InvalidArgumentError on a repeated key.
  static Element dict(std::vector<std::pair<std::string, Element>> items);

  Kind kind() const { return kind_; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_tensor() const { return kind_ == Kind::kTensor; }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_leaf() const { return kind_ == Kind::kNone || kind_ == Kind::kTensor || kind_ == Kind::kString; }
  // The leaf's value; throw InvalidArgumentError naming this element when it is something else.
  const Tensor& tensor() const;
  const StringTensor& string() const;

  // Children of a tuple, list or dict (dicts in key order); leaves have none.
  size_t size() const { return children_.size(); }
  const std::vector<Element>& children() const { return children_; }
  const std::vector<std::string>& keys() const { return keys_; }  // a dict's, sorted
  const Element& operator[](size_t i) const;              // throws InvalidArgumentError when out of range or a leaf
  const Element& operator[](std::string_view key) const;  // throws InvalidArgumentError when absent or not a dict
  bool contains(std::string_view key) const;

  // The leaves (None included) in tf.nest's order: depth first, dicts by sorted key.
  std::vector<Element> flatten() const;
  // This structure with `leaves` (flatten()'s order) in place of its own; throws InvalidArgumentError when the
  // count differs.
  Element pack_leaves(std::vector<Element> leaves) const;
  // This structure with fn(leaf) in place of each leaf.
  Element map(const std::function<Element(const Element& leaf)>& fn) const;
  // Same nesting, same dict keys and same leaf kinds (Tensor leaves: same dtype; shapes may differ).
  bool same_structure(const Element& other) const;
  // The nesting with leaf kinds and dtypes: "(int64, {'a': float32, 'b': string})", for errors.
  std::string structure() const;
  // With shapes too: "(int64 [], {'a': float32 [3], 'b': string [2]})".
  std::string str() const;

  // Keras' view (keras.utils.unpack_x_y_sample_weight): a tuple of 1 to 3 is (x, y, sample_weight), anything else is
  // x alone. Each must be a Tensor or None (undefined Tensor); a dict or deeper component is a ValueError, since
  // lockstep's Keras models take one Tensor x.
  Tensor x() const { return keras_component(0); }
  Tensor y() const { return keras_component(1); }
  Tensor sample_weight() const { return keras_component(2); }

 private:
  Tensor keras_component(size_t i) const;
  std::string describe(bool shapes) const;

  Kind kind_ = Kind::kNone;
  Tensor tensor_;
  std::shared_ptr<const StringTensor> string_;
  std::vector<Element> children_;
  std::vector<std::string> keys_;
};

// Throws InvalidArgumentError when a and b differ in structure: "<op>: <what> ... <a.structure()> ... <b.structure()>".
void check_same_structure(const Element& a, const Element& b, std::string_view op, std::string_view what);

}  // namespace lockstep::data
