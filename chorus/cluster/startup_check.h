// check_same_signature: the start-up check of a multi-worker job (DESIGN.md §3). Every
// rank publishes a signature — one line per variable (path, shape, dtype) and per
// training setting (global batch size, optimizer) — and compares every rank's with rank
// 0's, so a worker built with a different model or configuration fails on every rank,
// before the first step, with a message showing the first difference.
#pragma once

#include <string>
#include <vector>

#include <gloo/rendezvous/store.h>

#include "chorus/cluster/cluster.h"

namespace chorus::cluster {

// Throws ValueError on every rank when any rank's signature differs from rank 0's:
// "the workers disagree on the model: rank 1 has 'dense_1/kernel (784, 128) float32'
// where rank 0 has 'dense_1/kernel (784, 256) float32' (line 3)". `name` keys the
// check in the store, so several checks (model, data) can run in one job, and the same
// check can run again (every rank makes its checks in the same order).
void check_same_signature(gloo::rendezvous::Store& store, const ClusterSpec& cluster,
                          const std::vector<std::string>& signature, const std::string& name = "model");

}  // namespace chorus::cluster
