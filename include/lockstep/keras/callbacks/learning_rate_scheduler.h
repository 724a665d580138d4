// keras.callbacks.LearningRateScheduler: the learning rate set by a function of the epoch at each epoch's start.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>

#include "lockstep/keras/callbacks/callback.h"

namespace lockstep::keras::callbacks {

// Sets the optimizer's learning rate at each epoch's start to schedule(epoch, current_lr).
std::shared_ptr<Callback> LearningRateScheduler(std::function<double(int64_t epoch, double lr)> schedule, int verbose = 0);

}  // namespace lockstep::keras::callbacks
