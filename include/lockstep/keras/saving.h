// Keras saving (keras.saving / keras.models.load_model, save_model): every header under
// include/lockstep/keras/saving/.
#pragma once
#include "lockstep/keras/saving/saving_api.h"
