// keras.callbacks.History: every epoch's logs, which fit() returns.
#include "lockstep/keras/callbacks/history.h"

namespace lockstep::keras::callbacks {

void History::on_train_begin(const Logs&) {}

void History::on_epoch_end(int64_t e, const Logs& logs) {
  epoch.push_back(e);
  for (const auto& [k, v] : logs.items()) history[k].push_back(v);
}

}  // namespace lockstep::keras::callbacks
