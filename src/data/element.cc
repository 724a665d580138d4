// data::Element, the nested element of a dataset, and StringTensor, its string leaf.
#include "lockstep/data/element.h"

#include <algorithm>

namespace lockstep::data {

StringTensor::StringTensor(Shape shape_, std::vector<std::string> values_)
    : shape(std::move(shape_)), values(std::move(values_)) {
  LS_CHECK(static_cast<int64_t>(values.size()) == shape.numel(), InvalidArgumentError, "StringTensor: shape ",
           shape.str(), " holds ", shape.numel(), " strings but ", values.size(), " were given; pass one per entry");
}

const std::string& StringTensor::item() const {
  LS_CHECK(values.size() == 1, InvalidArgumentError, "StringTensor::item: the tensor of shape ", shape.str(), " holds ",
           values.size(), " strings, not one; index it first");
  return values[0];
}

Element::Element(Tensor t) {
  if (!t.defined()) return;
  kind_ = Kind::kTensor;
  tensor_ = std::move(t);
}

Element::Element(StringTensor s) : kind_(Kind::kString), string_(std::make_shared<const StringTensor>(std::move(s))) {}

Element::Element(std::initializer_list<Element> items) : kind_(Kind::kTuple), children_(items) {}

Element Element::tuple(std::vector<Element> items) {
  Element e;
  e.kind_ = Kind::kTuple;
  e.children_ = std::move(items);
  return e;
}

Element Element::list(std::vector<Element> items) {
  Element e = tuple(std::move(items));
  e.kind_ = Kind::kList;
  return e;
}

Element Element::dict(std::vector<std::pair<std::string, Element>> items) {
  std::sort(items.begin(), items.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  Element e;
  e.kind_ = Kind::kDict;
  for (auto& [key, value] : items) {
    LS_CHECK(e.keys_.empty() || e.keys_.back() != key, InvalidArgumentError, "Element::dict: the key '", key,
             "' appears twice; give each component its own key");
    e.keys_.push_back(std::move(key));
    e.children_.push_back(std::move(value));
  }
  return e;
}

const Tensor& Element::tensor() const {
  LS_CHECK(kind_ == Kind::kTensor, InvalidArgumentError, "Element::tensor: the element is ", str(),
           ", not a Tensor leaf; index it down to a Tensor first");
  return tensor_;
}

const StringTensor& Element::string() const {
  LS_CHECK(kind_ == Kind::kString, InvalidArgumentError, "Element::string: the element is ", str(),
           ", not a string leaf; index it down to a string first");
  return *string_;
}

const Element& Element::operator[](size_t i) const {
  LS_CHECK(!is_leaf() && i < children_.size(), InvalidArgumentError, "Element: index ", i, " is out of range for ",
           str(), "; it has ", children_.size(), " components");
  return children_[i];
}

const Element& Element::operator[](std::string_view key) const {
  auto it = std::lower_bound(keys_.begin(), keys_.end(), key);
  LS_CHECK(kind_ == Kind::kDict && it != keys_.end() && *it == key, InvalidArgumentError, "Element: no key '", key,
           "' in ", str(), "; index a dict element by one of its keys");
  return children_[static_cast<size_t>(it - keys_.begin())];
}

bool Element::contains(std::string_view key) const {
  return std::binary_search(keys_.begin(), keys_.end(), key);
}

namespace {
void flatten_into(const Element& e, std::vector<Element>& out) {
  if (e.is_leaf()) {
    out.push_back(e);
    return;
  }
  for (const Element& c : e.children()) flatten_into(c, out);
}

Element pack_from(const Element& e, std::vector<Element>& leaves, size_t& next) {
  if (e.is_leaf()) return std::move(leaves[next++]);
  std::vector<Element> children;
  for (const Element& c : e.children()) children.push_back(pack_from(c, leaves, next));
  if (e.kind() == Element::Kind::kDict) {
    std::vector<std::pair<std::string, Element>> items;
    for (size_t i = 0; i < children.size(); ++i) items.emplace_back(e.keys()[i], std::move(children[i]));
    return Element::dict(std::move(items));
  }
  return e.kind() == Element::Kind::kList ? Element::list(std::move(children)) : Element::tuple(std::move(children));
}
}  // namespace

std::vector<Element> Element::flatten() const {
  std::vector<Element> out;
  flatten_into(*this, out);
  return out;
}

Element Element::pack_leaves(std::vector<Element> leaves) const {
  const size_t want = flatten().size();
  LS_CHECK(leaves.size() == want, InvalidArgumentError, "Element::pack_leaves: ", str(), " has ", want, " leaves but ",
           leaves.size(), " were given");
  size_t next = 0;
  return pack_from(*this, leaves, next);
}

Element Element::map(const std::function<Element(const Element&)>& fn) const {
  if (is_leaf()) return fn(*this);
  Element out = *this;
  for (Element& c : out.children_) c = c.map(fn);
  return out;
}

bool Element::same_structure(const Element& other) const {
  if (kind_ != other.kind_ || children_.size() != other.children_.size() || keys_ != other.keys_) return false;
  if (kind_ == Kind::kTensor) return tensor_.dtype() == other.tensor_.dtype();
  for (size_t i = 0; i < children_.size(); ++i)
    if (!children_[i].same_structure(other.children_[i])) return false;
  return true;
}

std::string Element::describe(bool shapes) const {
  switch (kind_) {
    case Kind::kNone:
      return "None";
    case Kind::kTensor:
      return shapes ? make_message(dtype_name(tensor_.dtype()), " ", tensor_.shape().str())
                    : std::string(dtype_name(tensor_.dtype()));
    case Kind::kString:
      return shapes ? "string " + string_->shape.str() : "string";
    default:
      break;
  }
  const char* open = kind_ == Kind::kTuple ? "(" : kind_ == Kind::kList ? "[" : "{";
  const char* close = kind_ == Kind::kTuple ? ")" : kind_ == Kind::kList ? "]" : "}";
  std::string out = open;
  for (size_t i = 0; i < children_.size(); ++i) {
    if (i > 0) out += ", ";
    if (kind_ == Kind::kDict) out += "'" + keys_[i] + "': ";
    out += children_[i].describe(shapes);
  }
  if (kind_ == Kind::kTuple && children_.size() == 1) out += ",";
  return out + close;
}

std::string Element::structure() const {
  return describe(false);
}
std::string Element::str() const {
  return describe(true);
}

Tensor Element::keras_component(size_t i) const {
  const bool unpacked = kind_ == Kind::kTuple && !children_.empty() && children_.size() <= 3;
  const Element* c = unpacked ? (i < children_.size() ? &children_[i] : nullptr) : (i == 0 ? this : nullptr);
  if (c == nullptr || c->is_none()) return {};
  static constexpr const char* kNames[] = {"x", "y", "sample_weight"};
  LS_CHECK(c->is_tensor(), ValueError, "Keras reads the element ", str(), " as (x, y, sample_weight), and its ",
           kNames[i], " is ", c->str(),
           ", but lockstep's Keras models take one numeric Tensor per component "
           "(multi-input dict models are not supported yet); map the dataset to (x, y) Tensors first");
  return c->tensor_;
}

void check_same_structure(const Element& a, const Element& b, std::string_view op, std::string_view what) {
  LS_CHECK(a.same_structure(b), InvalidArgumentError, op, ": ", what, " must have the same structure, but one is ",
           a.structure(), " and another is ", b.structure(), "; map them to one structure first");
}

}  // namespace lockstep::data
