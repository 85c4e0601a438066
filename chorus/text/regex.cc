// RE2 behind chorus's error conventions: bad patterns and rewrites are ValueErrors that
// quote them, never RE2's log lines.
#include "chorus/text/regex.h"

#include <re2/re2.h>

#include "chorus/core/error.h"

namespace chorus::text {

Regex::Regex(std::string_view pattern) : pattern_(pattern) {
  RE2::Options options;
  options.set_log_errors(false);
  re_ = std::make_unique<re2::RE2>(re2::StringPiece(pattern_.data(), pattern_.size()), options);
  if (!re_->ok()) throw_error<ValueError>("regex: invalid pattern \"{}\": {}", pattern_, re_->error());
}

Regex::~Regex() = default;
Regex::Regex(Regex&&) noexcept = default;
Regex& Regex::operator=(Regex&&) noexcept = default;

bool Regex::full_match(std::string_view text) const {
  return RE2::FullMatch(re2::StringPiece(text.data(), text.size()), *re_);
}

bool Regex::partial_match(std::string_view text) const {
  return RE2::PartialMatch(re2::StringPiece(text.data(), text.size()), *re_);
}

std::string Regex::replace(std::string_view text, std::string_view rewrite, bool replace_global) const {
  const re2::StringPiece rw(rewrite.data(), rewrite.size());
  std::string why;
  if (!re_->CheckRewriteString(rw, &why)) {
    throw_error<ValueError>("regex_replace: rewrite \"{}\" does not fit pattern \"{}\": {}", rewrite, pattern_, why);
  }
  std::string out(text);
  if (replace_global) {
    RE2::GlobalReplace(&out, *re_, rw);
  } else {
    RE2::Replace(&out, *re_, rw);
  }
  return out;
}

bool regex_full_match(std::string_view text, std::string_view pattern) { return Regex(pattern).full_match(text); }

std::string regex_replace(std::string_view text, std::string_view pattern, std::string_view rewrite,
                          bool replace_global) {
  return Regex(pattern).replace(text, rewrite, replace_global);
}

}  // namespace chorus::text
