// gloo's rendezvous store on the coordination service's KeyValueStore.
#include <algorithm>
#include <cctype>

#include "gloo-impl.h"

namespace lockstep::distribute::detail {

using std::chrono::milliseconds;

std::string strip_location(const std::string& message) {
  if (message.size() > 1 && message[0] == '[') {
    const size_t close = message.find("] ");
    if (close != std::string::npos && message.find(".cc:") < close) return message.substr(close + 2);
  }
  return message;
}

namespace {

// The rank whose value a key holds: "rank_<r>" (hostnames, for gloo's local ranks) and "<r>" (the addresses of
// r's pairs); -1 for any other key.
int key_rank(const std::string& key) {
  const std::string digits = key.rfind("rank_", 0) == 0 ? key.substr(5) : key;
  if (digits.empty() || digits.size() > 9 ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
    return -1;
  return std::stoi(digits);
}

}  // namespace

StoreAdapter::StoreAdapter(KeyValueStore& store, const GlooOptions& options, const Peers& peers)
    : store_(store), options_(options), peers_(peers), deadline_(Clock::now() + options.connect_timeout) {}

void StoreAdapter::set(const std::string& key, const std::vector<char>& data) {
  store_.set(options_.prefix + "/" + key, std::string(data.begin(), data.end()));
}

std::vector<char> StoreAdapter::get(const std::string& key) {
  return fetch(key, options_.connect_timeout);
}

void StoreAdapter::wait(const std::vector<std::string>& keys) {
  wait(keys, options_.connect_timeout);
}

void StoreAdapter::wait(const std::vector<std::string>& keys, const milliseconds& timeout) {
  for (const std::string& key : keys) fetch(key, timeout);
}

std::vector<char> StoreAdapter::fetch(const std::string& key, milliseconds timeout) {
  if (auto it = values_.find(key); it != values_.end()) return it->second;
  const auto left = std::chrono::duration_cast<milliseconds>(deadline_ - Clock::now());
  const std::string full_key = options_.prefix + "/" + key;
  std::string value;
  try {
    value = store_.get(full_key, std::max(milliseconds(0), std::min(timeout, left)));
  } catch (const DeadlineExceededError&) {
    const int owner = key_rank(key);
    throw DeadlineExceededError(
        make_message(
            "gloo rendezvous: ", peers_.self(), " waited ", options_.connect_timeout.count(), " ms for ",
            owner >= 0 ? peers_.name(owner) : "a peer", " to publish its gloo address (store key '", full_key,
            "'); that worker did not start, crashed, or uses another prefix; check its log and restart the job"),
        Culprit{peers_.task(owner)});
  }
  return values_.emplace(key, std::vector<char>(value.begin(), value.end())).first->second;
}

}  // namespace lockstep::distribute::detail
