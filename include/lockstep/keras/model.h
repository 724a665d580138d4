// Keras models (keras.Model, keras.Sequential, keras.models): every header under include/lockstep/keras/models/, one
// class each, with the arguments of compile/fit/evaluate/predict (models/training.h).
#pragma once
#include "lockstep/keras/models/model.h"
#include "lockstep/keras/models/sequential.h"
#include "lockstep/keras/models/training.h"
