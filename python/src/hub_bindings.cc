// keras_hub's (keras_nlp's) BertMaskedLM on chorus's: from_preset with its preprocessor,
// so fit and evaluate take datasets of raw strings as KerasHub's tasks do.
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>

#include "chorus/models/bert/bert_masked_lm.h"
#include "python/src/bindings.h"

namespace chorus::python {

using namespace pybind11::literals;
using models::BertMaskedLM;

data::Dataset prepared_for(const models::Model& model, const data::Dataset& dataset) {
  // BertMaskedLM's fit and evaluate preprocess raw strings (and hide Model's): the
  // bindings call Model's, so they preprocess here.
  if (const auto* bert = dynamic_cast<const BertMaskedLM*>(&model)) return bert->preprocess(dataset);
  return dataset;
}

void bind_hub(py::module_& m) {
  py::class_<BertMaskedLM, models::Model, std::shared_ptr<BertMaskedLM>>(m, "BertMaskedLM")
      .def_static("from_preset", [](const std::string& preset, const std::optional<std::string>& vocabulary) {
        models::BertPresetOptions options;
        if (vocabulary) options.vocabulary = *vocabulary;
        std::unique_ptr<BertMaskedLM> model;
        {
          py::gil_scoped_release release;
          model = BertMaskedLM::from_preset(preset, options);
        }
        return std::shared_ptr<BertMaskedLM>(std::move(model));
      }, "preset"_a, "vocabulary"_a = py::none());
}

}  // namespace chorus::python
