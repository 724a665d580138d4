// The stages over several datasets: zip (one element of each, combined), concatenate (one input after the other)
// and sample_from_datasets (each element from an input drawn at random by weight).
#include <cmath>

#include "lockstep/core/philox.h"
#include "nodes-impl.h"

namespace lockstep::data::detail {

using nlohmann::json;

namespace {

// The inputs' iterators, all salted alike, saved as one list.
std::vector<std::unique_ptr<ItemIterator>> iterators_of(const DatasetNode& node, uint64_t salt) {
  std::vector<std::unique_ptr<ItemIterator>> out;
  for (const NodePtr& in : node.inputs()) out.push_back(in->make_iterator(salt));
  return out;
}
json states_of(const std::vector<std::unique_ptr<ItemIterator>>& inputs) {
  json out = json::array();
  for (const auto& it : inputs) out.push_back(it->save_state());
  return out;
}
void restore_all(std::vector<std::unique_ptr<ItemIterator>>& inputs, const json& saved, const char* op) {
  LS_CHECK(saved.size() == inputs.size(), ValueError, "restore_state: the saved ", op, " has ", saved.size(),
           " inputs, this one ", inputs.size(), "; restore into an iterator of the same pipeline");
  for (size_t i = 0; i < inputs.size(); ++i) inputs[i]->restore_state(saved[i]);
}

// TF's zip: the tuple of the inputs' elements.
Element tuple_of(const std::vector<Element>& parts) { return Element::tuple(parts); }

// ---- zip ----
class ZipNode final : public DatasetNode {
 public:
  ZipNode(std::vector<NodePtr> inputs, ZipFn combine)
      : DatasetNode("zip", json::object(), std::move(inputs)), combine_(std::move(combine)) {}
  int64_t cardinality() const override {  // TF's rule: the shortest input; unknown if any is
    int64_t n = kInfiniteCardinality;
    for (const NodePtr& in : inputs()) {
      int64_t c = in->cardinality();
      if (c == kUnknownCardinality) return c;
      if (c != kInfiniteCardinality) n = n == kInfiniteCardinality ? c : std::min(n, c);
    }
    return n;
  }
  NodePtr with_inputs(std::vector<NodePtr> inputs) const override {
    LS_CHECK(inputs.size() == this->inputs().size(), ValueError, "zip has ", this->inputs().size(),
             " input datasets, got ", inputs.size());
    return std::make_shared<ZipNode>(std::move(inputs), combine_);
  }
  std::unique_ptr<ItemIterator> make_iterator(uint64_t salt) const override;
  ZipFn combine_;
};

class ZipIterator final : public ItemIterator {
 public:
  ZipIterator(const ZipNode& node, uint64_t salt) : node_(node), inputs_(iterators_of(node, salt)) {}
  std::optional<Item> next() override {
    std::vector<Element> parts;
    for (size_t i = 0; i < inputs_.size(); ++i) {
      std::optional<Item> item = inputs_[i]->next();
      if (!item) return std::nullopt;
      parts.push_back(materialize(*item, node_.inputs()[i]->row_source()));
    }
    return Item{-1, node_.combine_(parts)};
  }
  json save_state() const override { return {{"inputs", states_of(inputs_)}}; }
  void restore_state(const json& state) override { restore_all(inputs_, state.at("inputs"), "zip"); }

 private:
  const ZipNode& node_;
  std::vector<std::unique_ptr<ItemIterator>> inputs_;
};
std::unique_ptr<ItemIterator> ZipNode::make_iterator(uint64_t salt) const {
  return std::make_unique<ZipIterator>(*this, salt);
}

// ---- concatenate ----
class ConcatenateNode final : public DatasetNode {
 public:
  ConcatenateNode(NodePtr first, NodePtr second)
      : DatasetNode("concatenate", json::object(), {std::move(first), std::move(second)}) {}
  int64_t cardinality() const override {  // TF's rule
    const int64_t a = inputs()[0]->cardinality(), b = inputs()[1]->cardinality();
    if (a == kInfiniteCardinality || b == kInfiniteCardinality) return kInfiniteCardinality;
    if (a == kUnknownCardinality || b == kUnknownCardinality) return kUnknownCardinality;
    return a + b;
  }
  NodePtr with_inputs(std::vector<NodePtr> inputs) const override {
    LS_CHECK(inputs.size() == 2, ValueError, "concatenate has 2 input datasets, got ", inputs.size());
    return std::make_shared<ConcatenateNode>(std::move(inputs[0]), std::move(inputs[1]));
  }
  std::unique_ptr<ItemIterator> make_iterator(uint64_t salt) const override;
};

// State: which input is being read and its state; the second input's iterator is made when the first ends, with
// the salt, which the state therefore holds too (a state without it, saved before it was added, keeps this
// iterator's).
class ConcatenateIterator final : public ItemIterator {
 public:
  ConcatenateIterator(const ConcatenateNode& node, uint64_t salt)
      : node_(node), salt_(salt), input_(node.inputs()[0]->make_iterator(salt)) {}
  std::optional<Item> next() override {
    while (true) {
      std::optional<Item> item = input_->next();
      if (item) {
        Element e = materialize(*item, node_.inputs()[static_cast<size_t>(which_)]->row_source());
        check_(e, "concatenate");
        return Item{-1, std::move(e)};
      }
      if (which_ == 1) return std::nullopt;
      which_ = 1;
      input_ = node_.inputs()[1]->make_iterator(salt_);
    }
  }
  json save_state() const override { return {{"which", which_}, {"input", input_->save_state()}, {"salt", salt_}}; }
  void restore_state(const json& state) override {
    salt_ = state.value("salt", salt_);
    const int64_t which = state.at("which").get<int64_t>();
    LS_CHECK(which == 0 || which == 1, ValueError, "restore_state: concatenate's saved input is ", which,
             ", not 0 or 1; pass the state save_state() returned");
    which_ = which;
    input_ = node_.inputs()[static_cast<size_t>(which_)]->make_iterator(salt_);
    input_->restore_state(state.at("input"));
    check_.reset();
  }

 private:
  const ConcatenateNode& node_;
  StructureCheck check_;
  uint64_t salt_;
  int64_t which_ = 0;
  std::unique_ptr<ItemIterator> input_;
};
std::unique_ptr<ItemIterator> ConcatenateNode::make_iterator(uint64_t salt) const {
  return std::make_unique<ConcatenateIterator>(*this, salt);
}

// ---- sample_from_datasets ----
class SampleNode final : public DatasetNode {
 public:
  SampleNode(std::vector<NodePtr> inputs, std::vector<double> weights, uint64_t seed, bool stop_on_empty)
      : DatasetNode("sample_from_datasets",
                    {{"weights", weights}, {"seed", seed}, {"stop_on_empty_dataset", stop_on_empty}},
                    std::move(inputs)),
        weights_(std::move(weights)),
        seed_(seed),
        stop_on_empty_(stop_on_empty) {}
  // Infinite when every input is; otherwise it depends on the draws.
  int64_t cardinality() const override {
    for (const NodePtr& in : inputs())
      if (in->cardinality() != kInfiniteCardinality) return kUnknownCardinality;
    return kInfiniteCardinality;
  }
  NodePtr with_inputs(std::vector<NodePtr> inputs) const override {
    LS_CHECK(inputs.size() == this->inputs().size(), ValueError, "sample_from_datasets has ", this->inputs().size(),
             " input datasets, got ", inputs.size());
    return std::make_shared<SampleNode>(std::move(inputs), weights_, seed_, stop_on_empty_);
  }
  std::unique_ptr<ItemIterator> make_iterator(uint64_t salt) const override;

  std::vector<double> weights_;
  uint64_t seed_;
  bool stop_on_empty_;
};

// Each draw takes two 32-bit outputs of Philox(seed, 0), whatever the iteration, as TF's sampling draws the same
// sequence every epoch. State: the inputs' states, which have ended, and the random stream's position.
class SampleIterator final : public ItemIterator {
 public:
  SampleIterator(const SampleNode& node, uint64_t salt)
      : node_(node), rng_(node.seed_, 0), inputs_(iterators_of(node, salt)), ended_(inputs_.size(), false) {}
  std::optional<Item> next() override {
    while (!done_) {
      const size_t i = draw();
      if (i == inputs_.size()) break;  // every input has ended
      if (std::optional<Item> item = inputs_[i]->next()) {
        Element e = materialize(*item, node_.inputs()[i]->row_source());
        check_(e, "sample_from_datasets");
        return Item{-1, std::move(e)};
      }
      ended_[i] = true;
      done_ = node_.stop_on_empty_;
    }
    done_ = true;
    return std::nullopt;
  }
  json save_state() const override {
    return {
        {"inputs", states_of(inputs_)}, {"ended", ended_}, {"done", done_}, {"rng_position", rng_.state().position}};
  }
  void restore_state(const json& state) override {
    restore_all(inputs_, state.at("inputs"), "sample_from_datasets");
    auto ended = state.at("ended").get<std::vector<bool>>();
    LS_CHECK(ended.size() == inputs_.size(), ValueError, "restore_state: the saved sample_from_datasets has ",
             ended.size(), " inputs, this one ", inputs_.size(), "; restore into an iterator of the same pipeline");
    ended_ = std::move(ended);
    done_ = state.at("done").get<bool>();
    rng_ = Philox(node_.seed_, 0);
    rng_.skip(state.at("rng_position").get<uint64_t>());
    check_.reset();
  }

 private:
  // The input a uniform draw lands on among those not ended, by weight; inputs_.size() when none is left.
  size_t draw() {
    double total = 0;
    for (size_t i = 0; i < inputs_.size(); ++i)
      if (!ended_[i]) total += node_.weights_[i];
    if (total <= 0) return inputs_.size();
    const double u = rng_.uniform_double() * total;
    double below = 0;
    size_t last = inputs_.size();
    for (size_t i = 0; i < inputs_.size(); ++i) {
      if (ended_[i] || node_.weights_[i] <= 0) continue;
      below += node_.weights_[i];
      last = i;
      if (u < below) return i;
    }
    return last;  // u rounded up to the total
  }

  const SampleNode& node_;
  Philox rng_;
  std::vector<std::unique_ptr<ItemIterator>> inputs_;
  std::vector<bool> ended_;
  bool done_ = false;
  StructureCheck check_;
};
std::unique_ptr<ItemIterator> SampleNode::make_iterator(uint64_t salt) const {
  return std::make_unique<SampleIterator>(*this, salt);
}

}  // namespace

NodePtr make_zip_node(std::vector<NodePtr> inputs, ZipFn combine) {
  return std::make_shared<ZipNode>(std::move(inputs), combine ? std::move(combine) : ZipFn(tuple_of));
}

NodePtr make_concatenate_node(NodePtr first, NodePtr second) {
  return std::make_shared<ConcatenateNode>(std::move(first), std::move(second));
}

NodePtr make_sample_node(std::vector<NodePtr> inputs, std::vector<double> weights, uint64_t seed,
                         bool stop_on_empty_dataset) {
  if (weights.empty()) weights.assign(inputs.size(), 1.0 / static_cast<double>(inputs.size()));
  LS_CHECK(weights.size() == inputs.size(), InvalidArgumentError, "sample_from_datasets: got ", weights.size(),
           " weights for ", inputs.size(), " datasets; pass one weight per dataset (or none for uniform)");
  double total = 0;
  for (double w : weights) {
    LS_CHECK(std::isfinite(w) && w >= 0, InvalidArgumentError, "sample_from_datasets: a weight is ", w,
             "; weights must be finite and non-negative");
    total += w;
  }
  LS_CHECK(total > 0, InvalidArgumentError,
           "sample_from_datasets: the weights sum to 0; give at least one dataset a positive weight");
  return std::make_shared<SampleNode>(std::move(inputs), std::move(weights), seed, stop_on_empty_dataset);
}

}  // namespace lockstep::data::detail
