// Regular expressions on UTF-8 strings by RE2 (linear time; TensorFlow's string ops use it):
// tf.strings.regex_replace and regex_full_match. A Regex is compiled once and immutable,
// so one may be shared by threads; the free functions compile their pattern per call.
#pragma once

#include <memory>
#include <string>
#include <string_view>

namespace re2 {
class RE2;
}

namespace chorus::text {

class Regex {
 public:
  // Compiles `pattern` (RE2 syntax, UTF-8). Throws ValueError naming the pattern and
  // RE2's complaint.
  explicit Regex(std::string_view pattern);
  ~Regex();
  Regex(Regex&&) noexcept;
  Regex& operator=(Regex&&) noexcept;

  // Whether the whole of `text` matches.
  bool full_match(std::string_view text) const;
  // Whether some part of `text` matches.
  bool partial_match(std::string_view text) const;
  // `text` with matches replaced by `rewrite`, in which \0 is the whole match and \1..\9
  // the groups; every non-overlapping match if `replace_global`, else the first. Throws
  // ValueError if `rewrite` names a group the pattern lacks.
  std::string replace(std::string_view text, std::string_view rewrite, bool replace_global = true) const;
  const std::string& pattern() const { return pattern_; }

 private:
  std::string pattern_;
  std::unique_ptr<re2::RE2> re_;
};

// tf.strings.regex_full_match.
bool regex_full_match(std::string_view text, std::string_view pattern);
// tf.strings.regex_replace.
std::string regex_replace(std::string_view text, std::string_view pattern, std::string_view rewrite,
                          bool replace_global = true);

}  // namespace chorus::text
