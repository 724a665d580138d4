// Keras callbacks (tf.keras.callbacks): every header under include/lockstep/keras/callbacks/, one callback each,
// with the base Callback (hooks into fit/evaluate/predict, Logs, RunParams) and the registry.
#pragma once
#include "lockstep/keras/callbacks/backup_and_restore.h"
#include "lockstep/keras/callbacks/callback.h"
#include "lockstep/keras/callbacks/csv_logger.h"
#include "lockstep/keras/callbacks/early_stopping.h"
#include "lockstep/keras/callbacks/history.h"
#include "lockstep/keras/callbacks/learning_rate_scheduler.h"
#include "lockstep/keras/callbacks/model_checkpoint.h"
#include "lockstep/keras/callbacks/progbar_logger.h"
#include "lockstep/keras/callbacks/reduce_lr_on_plateau.h"
#include "lockstep/keras/callbacks/registry.h"
#include "lockstep/keras/callbacks/save_freq.h"
#include "lockstep/keras/callbacks/tensorboard.h"
#include "lockstep/keras/callbacks/terminate_on_nan.h"
