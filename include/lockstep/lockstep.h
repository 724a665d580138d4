// lockstep's user-facing API in one include: tensors and ops, GradientTape, data pipelines and data sets,
// Keras layers/models/optimizers/losses/metrics/callbacks, checkpoints and preemption handling.
#pragma once

#include "lockstep/autograd/ops.h"
#include "lockstep/autograd/tape.h"
#include "lockstep/autograd/variable.h"
#include "lockstep/core/error.h"
#include "lockstep/core/logging.h"
#include "lockstep/core/philox.h"
#include "lockstep/core/threads.h"
#include "lockstep/data/dataset.h"
#include "lockstep/data/datasets.h"
#include "lockstep/distribute/strategy/strategy.h"
#include "lockstep/keras/callbacks.h"
#include "lockstep/keras/layers.h"
#include "lockstep/keras/losses.h"
#include "lockstep/keras/metrics.h"
#include "lockstep/keras/mixed_precision.h"
#include "lockstep/keras/model.h"
#include "lockstep/keras/optimizers.h"
#include "lockstep/tensor/ops.h"
#include "lockstep/train/checkpoint.h"
#include "lockstep/train/preemption.h"
