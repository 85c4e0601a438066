// chorus::text: tokenizers, Unicode and regex helpers, tf.strings functions and masked-LM
// preprocessing for text models (KerasNLP's names and semantics). Include this one header.
#pragma once

#include "chorus/text/bert_masked_lm_preprocessor.h"
#include "chorus/text/bert_tokenizer.h"
#include "chorus/text/hash.h"
#include "chorus/text/masked_lm_mask_generator.h"
#include "chorus/text/multi_segment_packer.h"
#include "chorus/text/pretokenizer.h"
#include "chorus/text/regex.h"
#include "chorus/text/start_end_packer.h"
#include "chorus/text/string_ops.h"
#include "chorus/text/strings.h"
#include "chorus/text/unicode.h"
#include "chorus/text/vocabulary.h"
#include "chorus/text/word_piece_tokenizer.h"
#include "chorus/text/word_piece_vocabulary.h"
#include "chorus/text/word_tokenizer.h"
