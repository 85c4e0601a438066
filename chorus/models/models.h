// One include for the model API: Model, Sequential, load_model, callbacks' base, History,
// and the BERT models.
#pragma once

#include "chorus/models/bert/bert_backbone.h"
#include "chorus/models/bert/bert_masked_lm.h"
#include "chorus/models/bert/bert_presets.h"
#include "chorus/models/callback.h"
#include "chorus/models/compare_weights.h"
#include "chorus/models/history.h"
#include "chorus/models/logs.h"
#include "chorus/models/model.h"
#include "chorus/models/progbar_logger.h"
#include "chorus/models/sequential.h"
#include "chorus/models/state_bytes.h"
#include "chorus/models/suggest_layout_map.h"
#include "chorus/models/whole_values.h"
