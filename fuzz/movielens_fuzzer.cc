// Fuzzes the MovieLens 100K readers through a scratch directory. The first byte picks the
// file (u.data, u.item or u.user) and the rest is its content.
#include "chorus/data/movielens.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace chorus;
  namespace ml = datasets::movielens_100k;
  if (size == 0) return 0;
  const std::string dir = fuzz::scratch_dir().string();
  const std::string_view content = fuzz::as_text(data + 1, size - 1);
  switch (data[0] % 3) {
    case 0:
      fuzz::write_file(fuzz::scratch_dir() / "u.data", content);
      fuzz::expect_only_chorus_errors("load_ratings", [&] { ml::load_ratings(dir); });
      break;
    case 1:
      fuzz::write_file(fuzz::scratch_dir() / "u.item", content);
      fuzz::expect_only_chorus_errors("load_movies", [&] { ml::load_movies(dir); });
      break;
    default:
      fuzz::write_file(fuzz::scratch_dir() / "u.user", content);
      fuzz::expect_only_chorus_errors("load_users", [&] { ml::load_users(dir); });
  }
  return 0;
}
