// repeat(): re-creates its input's iterator at every epoch, salted with the epoch number so that
// reshuffling shuffles below it draw a new order each time.
#include "nodes-impl.h"

namespace lockstep::data::detail {

using nlohmann::json;

namespace {

class RepeatNode final : public UnaryNode {
 public:
  RepeatNode(NodePtr input, int64_t count) : UnaryNode("repeat", {{"count", count}}, std::move(input)), count_(count) {}

  int64_t cardinality() const override {  // TF's rules
    int64_t n = input().cardinality();
    if (count_ < 0) return n == 0 ? 0 : kInfiniteCardinality;
    if (count_ == 0) return 0;
    if (n < 0) return n;
    return n * count_;
  }
  NodePtr with_inputs(std::vector<NodePtr> inputs) const override {
    return std::make_shared<RepeatNode>(single_input(inputs, op()), count_);
  }
  std::unique_ptr<ItemIterator> make_iterator(uint64_t salt) const override;

  int64_t count_;  // -1: forever
};

class RepeatIterator final : public ItemIterator {
 public:
  RepeatIterator(const RepeatNode& node, uint64_t salt) : node_(node), salt_(salt) { start_epoch(0); }

  std::optional<Item> next() override {
    while (input_) {
      if (std::optional<Item> item = input_->next()) {
        ++produced_in_epoch_;
        return item;
      }
      if (produced_in_epoch_ == 0) {  // an empty epoch: stop rather than loop forever, as TF does
        input_.reset();
        break;
      }
      start_epoch(epoch_ + 1);
    }
    return std::nullopt;
  }

  json save_state() const override {
    return {{"salt", salt_}, {"epoch", epoch_}, {"produced_in_epoch", produced_in_epoch_},
            {"input", input_ ? input_->save_state() : json()}};
  }

  void restore_state(const json& state) override {
    salt_ = state.at("salt").get<uint64_t>();
    const int64_t epoch = state.at("epoch").get<int64_t>(), produced = state.at("produced_in_epoch").get<int64_t>();
    LS_CHECK(epoch >= 0 && produced >= 0, ValueError, "restore_state: the saved ", node_.str(), " is in epoch ", epoch,
             " having produced ", produced, " elements; these are counts: pass the state save_state() returned");
    start_epoch(epoch);
    produced_in_epoch_ = produced;
    if (state.at("input").is_null()) {
      input_.reset();
    } else {
      LS_CHECK(input_ != nullptr, ValueError, "restore_state: the saved ", node_.str(), " is in epoch ", epoch_,
               ", past its count; restore into an iterator of the same pipeline");
      input_->restore_state(state.at("input"));
    }
  }

 private:
  void start_epoch(int64_t epoch) {
    epoch_ = epoch;
    produced_in_epoch_ = 0;
    input_.reset();  // the old epoch's iterator goes first (it may own a prefetch thread)
    if (node_.count_ < 0 || epoch < node_.count_) input_ = node_.input().make_iterator(mix_salt(salt_, uint64_t(epoch)));
  }

  const RepeatNode& node_;
  uint64_t salt_;
  int64_t epoch_ = 0;
  int64_t produced_in_epoch_ = 0;
  std::unique_ptr<ItemIterator> input_;  // null when done
};

std::unique_ptr<ItemIterator> RepeatNode::make_iterator(uint64_t salt) const {
  return std::make_unique<RepeatIterator>(*this, salt);
}

}  // namespace

NodePtr make_repeat_node(NodePtr input, int64_t count) { return std::make_shared<RepeatNode>(std::move(input), count); }

}  // namespace lockstep::data::detail
