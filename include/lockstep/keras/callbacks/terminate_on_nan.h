// keras.callbacks.TerminateOnNaN: stops training at a NaN or infinite loss.
#pragma once
#include <memory>

#include "lockstep/keras/callbacks/callback.h"

namespace lockstep::keras::callbacks {

// Stops training when a batch's loss is NaN or infinite; with raise_error, fit() throws instead.
struct TerminateOnNaNOptions {
  bool raise_error = false;
};
std::shared_ptr<Callback> TerminateOnNaN(TerminateOnNaNOptions options = {});

}  // namespace lockstep::keras::callbacks
