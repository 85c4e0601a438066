// `chorus text`: BERT tokenisation of stdin lines and WordPiece vocabulary learning, for
// scripts and for checking chorus against KerasNLP by eye. Results go to stdout only.
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "chorus/core/error.h"
#include "chorus/text/bert_tokenizer.h"
#include "chorus/text/word_piece_vocabulary.h"
#include "tools/chorus/commands.h"

namespace chorus::cli {
namespace {

struct TextArgs {
  std::string vocabulary;
  bool no_lowercase = false;
  bool strip_accents = false;
  bool pieces = false;
  int64_t size = 0;
  std::vector<std::string> files;
};

void run_tokenize(const TextArgs& args) {
  const text::BertTokenizer tokenizer = text::BertTokenizer::from_file(
      args.vocabulary, {.lowercase = !args.no_lowercase, .strip_accents = args.strip_accents});
  std::string line;
  std::string out;
  std::vector<int32_t> ids;
  for (int64_t number = 1; std::getline(std::cin, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    ids.clear();
    try {
      tokenizer.tokenize_into(line, ids);
    } catch (const ValueError& e) {
      throw_error<ValueError>("<stdin>:{}: {}", number, e.what());
    }
    out.clear();
    for (size_t i = 0; i < ids.size(); ++i) {
      if (i > 0) out.push_back(' ');
      out += args.pieces ? tokenizer.id_to_token(ids[i]) : std::to_string(ids[i]);
    }
    out.push_back('\n');
    std::cout << out;
  }
  std::cout.flush();
}

void run_learn(const TextArgs& args) {
  text::WordPieceVocabularyOptions options{.vocabulary_size = args.size, .lowercase = !args.no_lowercase};
  size_t file = 0;
  std::ifstream in;
  std::string line;
  int64_t number = 0;
  auto next_line = [&]() -> std::optional<std::string> {
    while (true) {
      if (in.is_open() && std::getline(in, line)) {
        ++number;
        return line;
      }
      if (file == args.files.size()) return std::nullopt;
      in = std::ifstream(args.files[file++], std::ios::binary);
      number = 0;
      if (!in) throw_error<IOError>("{}: cannot open", args.files[file - 1]);
    }
  };
  try {
    for (const std::string& token : text::compute_word_piece_vocabulary(next_line, options)) {
      std::cout << token << '\n';
    }
  } catch (const ValueError& e) {
    if (file == 0) throw;
    throw_error<ValueError>("{}:{}: {}", args.files[file - 1], number, e.what());
  }
  std::cout.flush();
}

}  // namespace

void add_text_command(CLI::App& app) {
  auto args = std::make_shared<TextArgs>();
  CLI::App* text = app.add_subcommand("text", "Tokenize text and learn WordPiece vocabularies");
  text->require_subcommand(1);

  CLI::App* tokenize = text->add_subcommand(
      "tokenize", "Tokenize UTF-8 lines from stdin with BERT's WordPiece rules; one line of ids per input line");
  tokenize->add_option("--vocabulary", args->vocabulary, "vocabulary file, one token per line (BERT's vocab.txt)")
      ->required();
  tokenize->add_flag("--no-lowercase", args->no_lowercase, "keep case (for *_cased vocabularies)");
  tokenize->add_flag("--strip-accents", args->strip_accents, "drop accents (NFD, then remove combining marks)");
  tokenize->add_flag("--pieces", args->pieces, "print the pieces instead of their ids");
  tokenize->callback([args] { run_tokenize(*args); });

  CLI::App* learn = text->add_subcommand(
      "learn-vocabulary", "Learn a WordPiece vocabulary from text files; prints it, reserved tokens first");
  learn->add_option("--size", args->size, "target vocabulary size")->required()->check(CLI::PositiveNumber);
  learn->add_flag("--no-lowercase", args->no_lowercase, "keep case");
  learn->add_option("files", args->files, "UTF-8 text files")->required();
  learn->callback([args] { run_learn(*args); });
}

}  // namespace chorus::cli
