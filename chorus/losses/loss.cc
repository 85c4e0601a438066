// Loss: the reduction every loss shares. The registry of the built-in losses is registry.cc.
#include "chorus/losses/loss.h"

#include "chorus/losses/loss_util.h"

namespace chorus::losses {

Loss::Loss(std::string name, std::string reduction) : name_(std::move(name)), reduction_(std::move(reduction)) {
  internal::check_reduction(name_, reduction_);
}

Tensor Loss::operator()(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) const {
  internal::check_defined(name_, y_true, y_pred);
  return internal::reduce_weighted(name_, call(y_true, y_pred), sample_weight, reduction_);
}

}  // namespace chorus::losses
