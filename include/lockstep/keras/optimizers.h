// Keras optimizers (tf.keras.optimizers: SGD, RMSprop, Adam, AdamW, Adagrad) and learning-rate schedules: every
// header under include/lockstep/keras/optimizers/, one optimizer each, with the base Optimizer and the registry.
#pragma once
#include "lockstep/keras/optimizers/adagrad.h"
#include "lockstep/keras/optimizers/adam.h"
#include "lockstep/keras/optimizers/optimizer.h"
#include "lockstep/keras/optimizers/registry.h"
#include "lockstep/keras/optimizers/rmsprop.h"
#include "lockstep/keras/optimizers/schedules.h"
#include "lockstep/keras/optimizers/sgd.h"
