// keras.callbacks.History: every epoch's logs.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "lockstep/keras/callbacks/callback.h"

namespace lockstep::keras::callbacks {

// Records every epoch's logs; fit() returns it.
class History : public Callback {
 public:
  void on_train_begin(const Logs&) override;
  void on_epoch_end(int64_t epoch, const Logs& logs) override;
  std::vector<int64_t> epoch;
  std::map<std::string, std::vector<double>> history;
};

}  // namespace lockstep::keras::callbacks
