// shuffle(): TF's buffered shuffle. Fill a buffer of buffer_size elements, then yield a uniformly chosen
// slot and refill it from the input (or, once the input ends, move the last element into it). With a
// buffer as large as the data this is a Fisher-Yates shuffle. Randomness is Philox(seed, stream), the
// stream being the iteration salt when reshuffling (else 0).
#include "lockstep/core/philox.h"
#include "nodes-impl.h"

namespace lockstep::data::detail {

using nlohmann::json;

namespace {

class ShuffleNode final : public UnaryNode {
 public:
  ShuffleNode(NodePtr input, int64_t buffer_size, uint64_t seed, bool reshuffle)
      : UnaryNode("shuffle", {{"buffer_size", buffer_size}, {"seed", seed}, {"reshuffle_each_iteration", reshuffle}},
                  std::move(input)),
        buffer_size_(buffer_size),
        seed_(seed),
        reshuffle_(reshuffle) {}
  NodePtr with_inputs(std::vector<NodePtr> inputs) const override {
    return std::make_shared<ShuffleNode>(single_input(inputs, op()), buffer_size_, seed_, reshuffle_);
  }
  std::unique_ptr<ItemIterator> make_iterator(uint64_t salt) const override;

  int64_t buffer_size_;
  uint64_t seed_;
  bool reshuffle_;
};

// The buffer's contents are not saved: the state is the input's state when this iterator began plus
// the number of elements produced, and restore replays that many steps. Over lazy rows (the usual case)
// replay moves only indices, so states stay a few numbers instead of a copy of the buffer.
class ShuffleIterator final : public ItemIterator {
 public:
  ShuffleIterator(const ShuffleNode& node, uint64_t salt) : node_(node) { reset(salt); }

  std::optional<Item> next() override {
    if (!filled_) fill();
    if (buffer_.empty()) return std::nullopt;
    const size_t k = random_slot();
    Item out = std::move(buffer_[k]);
    if (std::optional<Item> refill = pull()) {
      buffer_[k] = std::move(*refill);
    } else {
      buffer_[k] = std::move(buffer_.back());
      buffer_.pop_back();
    }
    ++produced_;
    return out;
  }

  json save_state() const override {
    return {{"salt", salt_}, {"input_at_start", input_at_start_}, {"produced", produced_},
            {"rng_position", rng_.state().position}};
  }

  void restore_state(const json& state) override {
    reset(state.at("salt").get<uint64_t>());
    input_at_start_ = state.at("input_at_start");
    input_->restore_state(input_at_start_);
    replay(*this, state.at("produced").get<int64_t>(), node_.str(), [](Item&&) {});
    LS_CHECK(rng_.state().position == state.at("rng_position").get<uint64_t>(), ValueError, "restore_state: replaying ",
             node_.str(), " drew ", rng_.state().position, " random numbers where the saved iterator had drawn ",
             state.at("rng_position").dump(), "; the pipeline differs from the saved one");
  }

 private:
  void reset(uint64_t salt) {
    salt_ = salt;
    rng_ = Philox(node_.seed_, node_.reshuffle_ ? salt : 0);
    input_ = node_.input().make_iterator(salt);
    input_at_start_ = input_->save_state();
    buffer_.clear();
    filled_ = exhausted_ = false;
    produced_ = 0;
  }

  std::optional<Item> pull() {
    if (exhausted_) return std::nullopt;
    std::optional<Item> item = input_->next();
    exhausted_ = !item.has_value();
    return item;
  }

  void fill() {
    int64_t known = node_.input().cardinality();
    buffer_.reserve(static_cast<size_t>(known >= 0 ? std::min(known, node_.buffer_size_) : std::min<int64_t>(node_.buffer_size_, 1024)));
    while (static_cast<int64_t>(buffer_.size()) < node_.buffer_size_) {
      std::optional<Item> item = pull();
      if (!item) break;
      buffer_.push_back(std::move(*item));
    }
    filled_ = true;
  }

  // Uniform in [0, buffer size): the high half of a 64x64-bit product (Lemire), bias below size / 2^64.
  size_t random_slot() {
    uint64_t r = (uint64_t{rng_.next_u32()} << 32) | rng_.next_u32();
    return static_cast<size_t>((static_cast<unsigned __int128>(r) * buffer_.size()) >> 64);
  }

  const ShuffleNode& node_;
  uint64_t salt_ = 0;
  Philox rng_;
  std::unique_ptr<ItemIterator> input_;
  json input_at_start_;
  std::vector<Item> buffer_;
  bool filled_ = false, exhausted_ = false;
  int64_t produced_ = 0;
};

std::unique_ptr<ItemIterator> ShuffleNode::make_iterator(uint64_t salt) const {
  return std::make_unique<ShuffleIterator>(*this, salt);
}

}  // namespace

NodePtr make_shuffle_node(NodePtr input, int64_t buffer_size, uint64_t seed, bool reshuffle_each_iteration) {
  return std::make_shared<ShuffleNode>(std::move(input), buffer_size, seed, reshuffle_each_iteration);
}

}  // namespace lockstep::data::detail
