// chorus.data.Dataset: tf.data's pipeline on chorus's (chorus/data/dataset.h). Elements
// cross into Python as tuples and dicts of NumPy arrays; a Python function given to map
// or filter runs per element with the GIL.
#include <pybind11/stl.h>

#include <optional>
#include <string>

#include "chorus/core/creation.h"
#include "chorus/data/dataset.h"
#include "chorus/data/download.h"
#include "chorus/data/mnist.h"
#include "chorus/data/movielens.h"
#include "chorus/data/text_line_dataset.h"
#include "python/src/bindings.h"
#include "python/src/conversions.h"
#include "python/src/shared_object.h"

namespace chorus::python {
namespace {

using namespace pybind11::literals;
using data::Dataset;

// tf.data calls a function with a tuple element's items as its arguments.
py::object apply(const py::object& fn, const Tree& element) {
  py::object value = from_tree(element, /*numpy=*/false, /*tuples=*/true);
  if (py::isinstance<py::tuple>(value)) return fn(*value);
  return fn(value);
}

// tf.data traces a map function once into a graph; chorus calls it per element, holding
// the GIL (about 3 µs a call besides the function's own ops). Said once per process.
void warn_once_about_python_functions(const char* method) {
  static bool warned = false;  // guarded by the GIL
  if (warned) return;
  warned = true;
  const std::string message = std::string("chorus: Dataset.") + method +
                              ": the Python function runs once per element, holding the GIL (chorus does not "
                              "trace it into chorus ops yet, as tf.data would); a pipeline of many small elements "
                              "is slower than tf.data's";
  if (PyErr_WarnEx(PyExc_UserWarning, message.c_str(), 2) != 0) throw py::error_already_set();
}

// as_numpy_iterator's leaves: NumPy arrays, and scalars as tf.data gives them (bytes for
// a string, a NumPy scalar for a number).
py::object numpy_element(const Tree& tree) {
  if (tree.is_tensor()) {
    const Tensor& t = tree.tensor();
    if (t.rank() == 0 && t.dtype() == kString) return py::bytes(t.string_at(0));
    py::array array = to_numpy(t);
    return t.rank() == 0 ? py::object(array[py::tuple()]) : py::object(array);
  }
  if (tree.is_dict()) {
    py::dict dict;
    for (const auto& [key, item] : tree.dict()) dict[py::str(key)] = numpy_element(item);
    return dict;
  }
  py::list list;
  for (const Tree& item : tree.list()) list.append(numpy_element(item));
  return py::tuple(list);
}

// Iterating a Dataset gives tensors (as iterating a tf.data.Dataset does);
// as_numpy_iterator gives NumPy values.
class PythonIterator {
 public:
  PythonIterator(const Dataset& dataset, bool numpy) : iterator_(dataset.iterator()), numpy_(numpy) {}
  py::object next() {
    std::optional<Tree> element;
    {
      py::gil_scoped_release release;
      element = iterator_.next();
    }
    if (!element) throw py::stop_iteration();
    return numpy_ ? numpy_element(*element) : from_tree(*element, /*numpy=*/false, /*tuples=*/true);
  }

 private:
  data::Iterator iterator_;
  bool numpy_;
};

// tf.data's reduce: reduce_func(state, element) over one pass, in Python.
py::object reduce(const Dataset& dataset, py::object state, const py::object& reduce_func) {
  PythonIterator it(dataset, /*numpy=*/false);
  try {
    for (;;) {
      py::object element = it.next();
      state = py::isinstance<py::tuple>(element) ? reduce_func(state, *element) : reduce_func(state, element);
    }
  } catch (const py::stop_iteration&) {
  }
  return py::cast(to_tensor(state));
}

// The readers behind keras.datasets and the tfds shim: MNIST's arrays and MovieLens 100K's
// columns, from a directory that data::fetch verified (or $CHORUS_SHARED_DATA's copy).
void bind_datasets(py::module_ m) {
  namespace ml = datasets::movielens_100k;
  m.def("fetch", [](const std::string& name) {
    py::gil_scoped_release release;
    return data::fetch(name);
  }, "name"_a);
  m.def("movielens_100k_ratings", [](const std::string& dir) { return from_tree(ml::load_ratings(dir), true); },
        "dir"_a);
  m.def("mnist_load_data", [](const std::string& dir, bool train) {
    Tree images_and_labels;
    {
      py::gil_scoped_release release;
      images_and_labels = datasets::mnist::load_data(dir, train ? datasets::Split::kTrain : datasets::Split::kTest);
    }
    return py::make_tuple(to_numpy(images_and_labels[0].tensor()), to_numpy(images_and_labels[1].tensor()));
  }, "dir"_a, "train"_a);
  m.def("movielens_100k_movies", [](const std::string& dir) {
    ml::Movies movies = ml::load_movies(dir);
    py::dict out;
    out["movie_id"] = to_numpy(movies.movie_id);
    out["movie_title"] = movies.titles;
    out["movie_genres"] = to_numpy(movies.genres);
    return out;
  }, "dir"_a);
}

}  // namespace

data::Dataset generator_dataset(const py::object& make_iterator) {
  return Dataset::from_generator([make = SharedObject(make_iterator)](int64_t) -> Dataset::Generator {
    py::gil_scoped_acquire gil;
    auto iterator = std::make_shared<SharedObject>(py::iter(make.get()()));
    return [iterator]() -> std::optional<Tree> {
      py::gil_scoped_acquire gil;
      PyObject* next = PyIter_Next(iterator->get().ptr());
      if (next == nullptr) {
        if (PyErr_Occurred() != nullptr) throw py::error_already_set();
        return std::nullopt;
      }
      return to_tree(py::reinterpret_steal<py::object>(next));
    };
  });
}

void bind_data(py::module_& m) {
  py::class_<PythonIterator>(m, "DatasetIterator")
      .def("__iter__", [](PythonIterator& it) -> PythonIterator& { return it; })
      .def("__next__", &PythonIterator::next);
  py::class_<Dataset>(m, "Dataset", "tf.data.Dataset's pipeline: elements are tuples and dicts of arrays.")
      .def_static("from_tensor_slices", [](const py::object& tensors) {
        return Dataset::from_tensor_slices(to_tree(tensors));  // tuples become (x, y) lists
      }, "tensors"_a)
      .def_static("text_line", [](const py::object& filenames) {
        // tf.data.TextLineDataset(filenames): one file name or a list of them.
        if (py::isinstance<py::str>(filenames)) return data::text_line_dataset({filenames.cast<std::string>()});
        return data::text_line_dataset(filenames.cast<std::vector<std::string>>());
      }, "filenames"_a)
      // tf.data.Dataset.from_generator: `generator` is called at the start of each pass.
      .def_static("from_generator", [](const py::function& generator, const py::object&, const py::object& args) {
        if (!args.is_none()) throw_not_implemented("Dataset.from_generator(args=...) is not supported yet");
        return generator_dataset(generator);
      }, "generator"_a, "output_signature"_a = py::none(), "args"_a = py::none())
      .def_static("range", [](int64_t a, const std::optional<int64_t>& b, int64_t step) {
        return b ? Dataset::range(a, *b, step) : Dataset::range(a);
      }, "start"_a, "stop"_a = py::none(), "step"_a = 1)
      .def("batch", &Dataset::batch, "batch_size"_a, "drop_remainder"_a = false)
      .def("shuffle", &Dataset::shuffle, "buffer_size"_a, "seed"_a = py::none(), "reshuffle_each_iteration"_a = true)
      .def("cardinality", [](const Dataset& d) { return scalar(static_cast<double>(d.cardinality()), kInt64); })
      .def("reduce", &reduce, "initial_state"_a, "reduce_func"_a)
      .def("repeat", [](const Dataset& d, const std::optional<int64_t>& count) { return d.repeat(count.value_or(-1)); },
           "count"_a = py::none())
      .def("take", &Dataset::take, "count"_a)
      .def("skip", &Dataset::skip, "count"_a)
      .def("cache", &Dataset::cache, "filename"_a = "")
      .def("prefetch", &Dataset::prefetch, "buffer_size"_a)
      .def("unbatch", &Dataset::unbatch)
      .def("map", [](const Dataset& d, const py::function& map_func, const py::object&) {
        warn_once_about_python_functions("map");
        return d.map([fn = SharedObject(map_func)](const Tree& element) {
          py::gil_scoped_acquire gil;
          return to_tree(apply(fn.get(), element));
        });
      }, "map_func"_a, "num_parallel_calls"_a = py::none())
      .def("filter", [](const Dataset& d, const py::function& predicate) {
        warn_once_about_python_functions("filter");
        return d.filter([fn = SharedObject(predicate)](const Tree& element) {
          py::gil_scoped_acquire gil;
          return py::bool_(apply(fn.get(), element)).cast<bool>();
        });
      }, "predicate"_a)
      .def("__iter__", [](const Dataset& d) { return PythonIterator(d, false); })
      .def("as_numpy_iterator", [](const Dataset& d) { return PythonIterator(d, true); });
  m.attr("INFINITE_CARDINALITY") = data::kInfiniteCardinality;
  m.attr("UNKNOWN_CARDINALITY") = data::kUnknownCardinality;
  bind_datasets(m.def_submodule("datasets", "chorus's readers of published data sets"));
}

}  // namespace chorus::python
