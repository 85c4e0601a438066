// The registry's entries. Each digest was taken from a published source and, where the
// identical bytes were at hand, checked by hashing them here (see the comment per entry).
#include "chorus/data/dataset_registry.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "chorus/core/error.h"

namespace chorus::data {
namespace {

// The four IDX files of MNIST and Fashion-MNIST share their names.
constexpr const char* kTrainImages = "train-images-idx3-ubyte.gz";
constexpr const char* kTrainLabels = "train-labels-idx1-ubyte.gz";
constexpr const char* kTestImages = "t10k-images-idx3-ubyte.gz";
constexpr const char* kTestLabels = "t10k-labels-idx1-ubyte.gz";

std::vector<DatasetSpec> make_registry() {
  std::vector<DatasetSpec> specs;

  // MovieLens 100K. SHA-256 and size: tensorflow/datasets
  // tensorflow_datasets/url_checksums/movielens.txt; several independent projects pin the
  // same digest, one of them next to u.data's SHA-256, which equals that of the
  // unmodified u.data in ../shared/data/ml-100k. The zip itself is not at hand here.
  specs.push_back({
      .name = "movielens-100k",
      .description = "MovieLens 100K ratings (GroupLens): 100,000 ratings, 943 users, 1,682 movies",
      .base_urls = {"https://files.grouplens.org/datasets/movielens/"},
      .files = {{"ml-100k.zip", "50d2a982c66986937beb9ffb3aa76efe955bf3d5c6b761f4e3a7cd717c6a3229", 4924029}},
      .packaging = Packaging::kArchive,
      .data_subdir = "ml-100k",
  });

  // MNIST from the CVDF mirror that TFDS and Keras's tutorials use (yann.lecun.com no
  // longer serves it reliably); PyTorch's mirror serves the same bytes (same MD5s).
  // SHA-256: tensorflow/datasets tensorflow_datasets/url_checksums/mnist.txt, and equal to
  // `sha256sum` of the original gz files in ../shared/data/mnist.
  specs.push_back({
      .name = "mnist",
      .description = "MNIST handwritten digits: 60,000 + 10,000 28x28 images (gzipped IDX)",
      .base_urls = {"https://storage.googleapis.com/cvdf-datasets/mnist/",
                    "https://ossci-datasets.s3.amazonaws.com/mnist/"},
      .files = {{kTrainImages, "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609", 9912422},
                {kTrainLabels, "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c", 28881},
                {kTestImages, "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6", 1648877},
                {kTestLabels, "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6", 4542}},
      .packaging = Packaging::kPlainFiles,
      .data_subdir = "",
  });

  // Fashion-MNIST from Zalando's official S3 mirror (plain HTTP only; the digest is what
  // protects it), then the same files in the project's GitHub repository. SHA-256 and
  // sizes: tensorflow/datasets tensorflow_datasets/url_checksums/fashion_mnist.txt,
  // matching other projects that pin them. Debian's dataset-fashion-mnist package
  // re-compresses the files (different gz bytes), but its decompressed IDX files have the
  // MD5s Zalando publishes for the originals, so the content was cross-checked that way.
  specs.push_back({
      .name = "fashion-mnist",
      .description = "Fashion-MNIST (Zalando): 60,000 + 10,000 28x28 clothing images (gzipped IDX)",
      .base_urls = {"http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/",
                    "https://raw.githubusercontent.com/zalandoresearch/fashion-mnist/master/data/fashion/"},
      .files = {{kTrainImages, "3aede38d61863908ad78613f6a32ed271626dd12800ba2636569512369268a84", 26421880},
                {kTrainLabels, "a04f17134ac03560a47e3764e11b92fc97de4d1bfaf8ba1a3aa29af54cc90845", 29515},
                {kTestImages, "346e55b948d973a97e58d2351dde16a484bd415d4595297633bb08f03db6a073", 4422102},
                {kTestLabels, "67da17c76eaffca5446c3361aaab5c3cd6d1c2608764d35dfb1850b086bf8dd5", 5148}},
      .packaging = Packaging::kPlainFiles,
      .data_subdir = "",
  });

  // WikiText-2 (v1, tokenized) from Salesforce's original bucket, as Keras's BERT tutorial
  // fetches it. SHA-256: the DataDeps.jl registration of this URL. Not downloadable
  // here (no network), but its extracted files' SHA-1s equal both MXNet's pins
  // (gluonnlp's WikiText2) and those of ../shared/data/wikitext-2, so the release is
  // the same. The size is informational (progress totals).
  specs.push_back({
      .name = "wikitext-2",
      .description = "WikiText-2 (Salesforce): 2M words of Wikipedia articles, tokenized (train/valid/test)",
      .base_urls = {"https://s3.amazonaws.com/research.metamind.io/wikitext/"},
      .files = {{"wikitext-2-v1.zip", "92675f1d63015c1c8b51f1656a52d5bdbc33aafa60cc47a218a66e7ee817488c", 4475746}},
      .packaging = Packaging::kArchive,
      .data_subdir = "wikitext-2",
  });
  return specs;
}

}  // namespace

std::span<const DatasetSpec> known_datasets() {
  static const std::vector<DatasetSpec> registry = make_registry();
  return registry;
}

const DatasetSpec& find_dataset(std::string_view name) {
  std::vector<std::string_view> names;
  for (const DatasetSpec& spec : known_datasets()) {
    if (spec.name == name) return spec;
    names.push_back(spec.name);
  }
  throw_error<ValueError>("unknown dataset '{}': expected one of {}", name, fmt::join(names, ", "));
}

}  // namespace chorus::data
