// GatheredVariables: one mesh device's whole values, for one step, of the variables its
// mesh splits over the batch axis (fully sharded data parallelism, DESIGN.md §3): all
// their gathers start as the step begins, in one order on every device (one without rows
// too), so that they overlap the first layers; a read waits for its own. A whole value is
// freed as soon as the variable's gradient is final, and gathered again if read after.
// Owned and used by one device thread.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <unordered_map>

#include "chorus/autograd/variable.h"
#include "chorus/comm/communicator.h"
#include "chorus/core/sharding.h"

namespace chorus::replicas {

class GatheredVariables {
 public:
  // `communicator(axis)`: the device's communicator along a mesh axis.
  GatheredVariables(int device, std::function<comm::Communicator&(int axis)> communicator)
      : device_(device), communicator_(std::move(communicator)) {}

  // Starts gathering the trainable variables of `placed` (the model's: optimizer slots
  // update their own blocks only) whose block on this device is laid out so that
  // `gathers(its sharding)`.
  void start(std::span<const autograd::Variable> placed, const std::function<bool(const Sharding&)>& gathers);
  // The whole value of the variable of Variable::id() `variable`. Throws Error for one
  // start() did not gather.
  const Tensor& value(const void* variable);
  // Frees a variable's whole value in place (whoever still holds the tensor holds no
  // memory); nothing for a variable start() did not gather.
  void free(const void* variable);
  // Waits for the gathers still in flight and drops every whole value; after a failed
  // step, whatever their outcome.
  void finish(bool failed);

 private:
  struct Gathered {
    autograd::Variable variable;
    int axis = 0;  // the mesh axis its blocks are split over
    Tensor whole;
    std::unique_ptr<comm::Work> work;  // null once complete
  };
  void wait(Gathered& gathered);

  int device_;
  std::function<comm::Communicator&(int axis)> communicator_;
  std::unordered_map<const void*, Gathered> gathered_;  // by Variable::id()
};

}  // namespace chorus::replicas
