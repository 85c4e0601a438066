// keras_rs's layers on chorus's recsys: BruteForceRetrieval, whose candidates may be an
// embedding table's variable (shared: later optimizer steps are seen) or a copy.
#include <pybind11/stl.h>

#include <memory>

#include "chorus/recsys/brute_force_retrieval.h"
#include "python/src/bindings.h"
#include "python/src/conversions.h"

namespace chorus::python {

using namespace pybind11::literals;
using recsys::BruteForceRetrieval;

void bind_recsys(py::module_& m) {
  py::class_<BruteForceRetrieval, layers::Layer, std::shared_ptr<BruteForceRetrieval>>(m, "BruteForceRetrieval")
      .def(py::init([](const py::object& candidate_embeddings, const py::object& candidate_ids, int64_t k,
                       bool return_scores, const std::string& name) {
             recsys::BruteForceRetrievalOptions options;
             if (!candidate_embeddings.is_none()) options.candidate_embeddings = to_tensor(candidate_embeddings);
             if (!candidate_ids.is_none()) options.candidate_ids = to_tensor(candidate_ids);
             options.name = name;
             return std::make_shared<BruteForceRetrieval>(k, return_scores, options);
           }),
           "candidate_embeddings"_a = py::none(), "candidate_ids"_a = py::none(), "k"_a = 10,
           "return_scores"_a = true, "name"_a = "")
      .def_property_readonly("k", &BruteForceRetrieval::k)
      .def_property_readonly("return_scores", &BruteForceRetrieval::return_scores)
      // keras-rs's tutorial assigns an embedding table's variable: retrieval then reads it
      // as it trains. A tensor or array is copied, as update_candidates does.
      .def_property("candidate_embeddings",
                    [](const BruteForceRetrieval& r) -> py::object {
                      if (!r.has_candidates()) return py::none();
                      return py::cast(r.candidate_embeddings());
                    },
                    [](BruteForceRetrieval& r, const py::object& value) {
                      if (py::isinstance<autograd::Variable>(value)) {
                        r.set_candidate_embeddings(value.cast<autograd::Variable>());
                      } else {
                        r.update_candidates(to_tensor(value));
                      }
                    })
      .def("update_candidates", [](BruteForceRetrieval& r, const py::object& candidate_embeddings,
                                   const py::object& candidate_ids) {
        r.update_candidates(to_tensor(candidate_embeddings),
                            candidate_ids.is_none() ? Tensor() : to_tensor(candidate_ids));
      }, "candidate_embeddings"_a, "candidate_ids"_a = py::none());
}

}  // namespace chorus::python
