// Keras utilities (keras.utils): every header under include/lockstep/keras/utils/, as Keras 3 arranges
// keras/src/utils/.
#pragma once
#include "lockstep/keras/utils/image_dataset_utils.h"
