// The callback registry: the callbacks made from Keras arguments alone, by Keras class name.
#pragma once
#include "lockstep/keras/callbacks/callback.h"
#include "lockstep/keras/registry.h"

namespace lockstep::keras::callbacks {

// The callbacks made from Keras arguments alone (not those that take a function), by Keras class name: the Python
// classes of these are generated from this registry.
const Registry<CallbackPtr>& registry();

}  // namespace lockstep::keras::callbacks
