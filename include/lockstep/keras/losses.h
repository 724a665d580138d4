// Keras losses (tf.keras.losses): every header under include/lockstep/keras/losses/ (the base Loss with
// tf.nn.compute_average_loss, the losses themselves, the registry).
#pragma once
#include "lockstep/keras/losses/loss.h"
#include "lockstep/keras/losses/losses.h"
#include "lockstep/keras/losses/registry.h"
