// window(): window k holds input elements k * shift + j * stride (j < size), stacked as batch() stacks them.
// Windows overlap when shift is below their span, so the input elements from the current window's start on are
// buffered; with each element that starts a window the input's state before it is kept, which is what a saved
// state points at (restoring pulls the window's elements again, never more).
#include <deque>

#include "nodes-impl.h"

namespace lockstep::data::detail {

using nlohmann::json;

namespace {

class WindowNode final : public UnaryNode {
 public:
  WindowNode(NodePtr input, int64_t size, int64_t shift, int64_t stride, bool drop_remainder)
      : UnaryNode("window", {{"size", size}, {"shift", shift}, {"stride", stride}, {"drop_remainder", drop_remainder}},
                  std::move(input)),
        size_(size),
        shift_(shift),
        stride_(stride),
        drop_remainder_(drop_remainder) {}
  int64_t cardinality() const override {  // TF's rule
    const int64_t n = input().cardinality();
    if (n < 0) return n;
    if (!drop_remainder_) return (n + shift_ - 1) / shift_;
    const int64_t span = (size_ - 1) * stride_ + 1;
    return n < span ? 0 : (n - span) / shift_ + 1;
  }
  const RowSource* row_source() const override { return nullptr; }
  NodePtr with_inputs(std::vector<NodePtr> inputs) const override {
    return std::make_shared<WindowNode>(single_input(inputs, op()), size_, shift_, stride_, drop_remainder_);
  }
  std::unique_ptr<ItemIterator> make_iterator(uint64_t salt) const override;

  int64_t size_, shift_, stride_;
  bool drop_remainder_;
};

class WindowIterator final : public ItemIterator {
 public:
  WindowIterator(const WindowNode& node, uint64_t salt) : node_(node), input_(node.input().make_iterator(salt)) {}

  std::optional<Item> next() override {
    const int64_t start = windows_ * node_.shift_, last = start + (node_.size_ - 1) * node_.stride_;
    while (!ended_ && next_index_ <= last) pull(start);
    std::vector<Element> elements;
    for (const Buffered& b : buffer_)
      if (b.index <= last && (b.index - start) % node_.stride_ == 0) elements.push_back(b.element);
    const bool full = static_cast<int64_t>(elements.size()) == node_.size_;
    if (elements.empty() || (node_.drop_remainder_ && !full)) return std::nullopt;
    ++windows_;
    while (!buffer_.empty() && buffer_.front().index < windows_ * node_.shift_) buffer_.pop_front();
    return Item{-1, stack_elements(elements, "window")};
  }

  // The buffer, when not empty, begins at the current window's start, whose input state was kept.
  json save_state() const override {
    if (!buffer_.empty())
      return {{"windows", windows_}, {"index", buffer_.front().index}, {"input", buffer_.front().before}};
    return {{"windows", windows_}, {"index", next_index_}, {"input", input_->save_state()}};
  }
  void restore_state(const json& state) override {
    windows_ = state.at("windows").get<int64_t>();
    next_index_ = state.at("index").get<int64_t>();
    LS_CHECK(windows_ >= 0 && next_index_ >= 0 && next_index_ <= windows_ * node_.shift_, ValueError,
             "restore_state: window's saved position (window ", windows_, ", input element ", next_index_,
             ") is not one it saves; pass the state save_state() returned");
    input_->restore_state(state.at("input"));
    buffer_.clear();
    ended_ = false;
  }

 private:
  struct Buffered {
    int64_t index;
    Element element;
    json before;  // the input's state before this element, kept for the elements that start a window
  };

  // Takes input element next_index_: buffered from the window at `start` on, skipped before it.
  void pull(int64_t start) {
    const int64_t index = next_index_;
    json before = index >= start && index % node_.shift_ == 0 ? input_->save_state() : json();
    std::optional<Item> item = input_->next();
    if (!item) {
      ended_ = true;
      return;
    }
    ++next_index_;
    if (index >= start) buffer_.push_back({index, materialize(*item, node_.input().row_source()), std::move(before)});
  }

  const WindowNode& node_;
  std::unique_ptr<ItemIterator> input_;
  std::deque<Buffered> buffer_;
  int64_t windows_ = 0, next_index_ = 0;
  bool ended_ = false;
};
std::unique_ptr<ItemIterator> WindowNode::make_iterator(uint64_t salt) const {
  return std::make_unique<WindowIterator>(*this, salt);
}

}  // namespace

NodePtr make_window_node(NodePtr input, int64_t size, int64_t shift, int64_t stride, bool drop_remainder) {
  return std::make_shared<WindowNode>(std::move(input), size, shift, stride, drop_remainder);
}

}  // namespace lockstep::data::detail
