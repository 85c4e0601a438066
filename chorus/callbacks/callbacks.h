// Every Keras callback chorus has, in namespace chorus::callbacks, with the Callback
// base, Logs, History and ProgbarLogger from chorus::models. Pass them to fit in
// FitOptions::callbacks (by value, or as a shared_ptr to keep reading their state).
#pragma once

#include "chorus/callbacks/backup_and_restore.h"
#include "chorus/callbacks/csv_logger.h"
#include "chorus/callbacks/early_stopping.h"
#include "chorus/callbacks/lambda_callback.h"
#include "chorus/callbacks/learning_rate_scheduler.h"
#include "chorus/callbacks/model_checkpoint.h"
#include "chorus/callbacks/monitor_callback.h"
#include "chorus/callbacks/profile_batches.h"
#include "chorus/callbacks/reduce_lr_on_plateau.h"
#include "chorus/callbacks/tensorboard.h"
#include "chorus/callbacks/terminate_on_nan.h"
#include "chorus/models/callback.h"
#include "chorus/models/history.h"
#include "chorus/models/logs.h"
#include "chorus/models/progbar_logger.h"

namespace chorus::callbacks {

using Callback = models::Callback;
using models::History;
using models::Logs;
using models::ProgbarLogger;

}  // namespace chorus::callbacks
