// free_port(): a loopback TCP port nobody listens on right now, for tests that start a
// rendezvous store or Gloo ranks on 127.0.0.1: the one `chorus launch` picks, below the
// kernel's ephemeral range, so that no other test's Gloo socket (ctest runs tests in
// parallel) can be handed it before the test binds it.
#pragma once

#include "chorus/cluster/launcher.h"

namespace chorus::testing {

inline int free_port() { return cluster::free_loopback_port(); }

}  // namespace chorus::testing
