// `chorus profile summarize FILE [--top N]`: the kernels of a profile (a Chrome trace that
// `chorus train --profile` or TensorBoard's profile_batch wrote) by self time — each
// event's time less the events nested in it — with their totals and counts.
#include <memory>
#include <string>

#include <fmt/format.h>

#include "chorus/profiler/chrome_trace.h"
#include "tools/chorus/commands.h"

namespace chorus::cli {

void add_profile_command(CLI::App& app) {
  CLI::App* profile = app.add_subcommand("profile", "Read a step profile (a Chrome trace)");
  profile->require_subcommand(1);
  struct Options {
    std::string file;
    size_t top = 20;
  };
  auto options = std::make_shared<Options>();
  CLI::App* summarize = profile->add_subcommand("summarize", "Print the top kernels of a profile by self time");
  summarize->add_option("file", options->file, "The trace file")->required();
  summarize->add_option("--top", options->top, "How many to print (0: all)");
  summarize->callback([options] {
    const auto totals = profiler::summarize_trace(options->file);
    fmt::print("{}", profiler::format_summary(totals, options->top));
  });
}

}  // namespace chorus::cli
