// LocalCommunicator: the Communicator for replica threads in one process. The group's
// participants share memory, so every collective reads the other participants' tensors
// in place and each participant computes its own contiguous chunk (no staging copies).
// Each handle is used from one thread at a time; the group's shared state is thread-safe.
#pragma once

#include <chrono>
#include <memory>
#include <vector>

#include "chorus/comm/communicator.h"

namespace chorus::comm {

using Seconds = std::chrono::duration<double>;

// The deadline of one collective: $CHORUS_COLLECTIVE_TIMEOUT (seconds, > 0) or 300 s.
// Throws ValueError if the variable is set but not a positive number.
Seconds collective_timeout_from_env();

// One communicator per rank 0 .. size-1 of a new in-process group (backend() is "local").
// Hand handle r to replica thread r. The handles share the group; it lives until the last
// handle and the last outstanding Work are gone.
//
// Semantics (beyond communicator.h):
// - Matching: the k-th collective issued on every handle is one collective. Ranks that
//   disagree on its kind, element type or count, root or ReduceOp all get a CollectiveError from
//   wait() naming the op, k and both ranks' arguments; later collectives still run.
// - Bad local arguments (a string or undefined tensor, not on the CPU, wrong block sizes or
//   types, a sum of bytes, root out of range) throw DTypeError/ShapeError/ValueError from the call itself, consume no
//   sequence number, and leave the group waiting: the caller should abort().
// - wait() on the k-th Work first completes this rank's earlier outstanding collectives,
//   in issue order, then does this rank's share of the k-th and returns when every
//   share is done. A Work dropped without wait() is completed by the next wait() on this
//   handle (the group stalls until then).
// - A wait that lasts longer than `timeout` throws CollectiveError ("all_reduce #12: timed
//   out after 300 s waiting for ranks 1, 3") and aborts the group with that reason.
// - After a CollectiveError the tensors of that collective hold unspecified values.
// REQUIRES: size >= 1, timeout > 0 (ValueError otherwise).
std::vector<std::unique_ptr<Communicator>> make_local_communicators(int size,
                                                                    Seconds timeout = collective_timeout_from_env());

}  // namespace chorus::comm
