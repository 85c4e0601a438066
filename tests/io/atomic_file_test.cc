#include "chorus/io/atomic_file.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "chorus/core/error.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/test_names.h"

namespace chorus::io {
namespace {

namespace fs = std::filesystem;
using namespace testing::test_names;

class AtomicFileTest : public chorus::testing::TempDirTest {
 protected:
  // Names of the entries of dir(), sorted: shows leftover temporaries.
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir_)) names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }
};

TEST_F(AtomicFileTest, WritesANewFileAndReadsItBack) {
  const fs::path path = dir_ / "weights.bin";
  const std::string bytes("a\0b\xff\n", 5);  // binary, with a NUL
  write_file_atomically(path, bytes);
  EXPECT_EQ(read_file(path), bytes);
  EXPECT_EQ(entries(), std::vector<std::string>{"weights.bin"});
}

TEST_F(AtomicFileTest, ReplacesAnExistingFile) {
  const fs::path path = write("model.json", std::string(10000, 'o'));
  write_file_atomically(path, "new");
  EXPECT_EQ(read_file(path), "new");
  write_file_atomically(path, "");
  EXPECT_EQ(read_file(path), "");
  EXPECT_EQ(entries(), std::vector<std::string>{"model.json"});
}

TEST_F(AtomicFileTest, ReadsALargeFileWhole) {
  std::string bytes(3 << 20, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 7919 % 251);
  const fs::path path = dir_ / "big.bin";
  write_file_atomically(path, bytes);
  EXPECT_EQ(read_file(path), bytes);
}

TEST_F(AtomicFileTest, FailedRenameLeavesTheTargetIntactAndNoTemporary) {
  // A non-empty directory at the target: the file is written and flushed, then rename fails.
  const fs::path target = dir_ / "checkpoint";
  fs::create_directory(target);
  write("checkpoint/keep.txt", "old");
  EXPECT_THAT([&] { write_file_atomically(target, "new"); },
              ThrowsMessage<IOError>(
                  AllOf(HasSubstr(target.string() + ": cannot rename"), HasSubstr("Is a directory"))));
  EXPECT_EQ(read_file(target / "keep.txt"), "old");
  EXPECT_EQ(entries(), std::vector<std::string>{"checkpoint"});
}

TEST_F(AtomicFileTest, UnwritableDirectoryLeavesTheOldFileIntact) {
  if (::geteuid() == 0) GTEST_SKIP() << "root can write into a read-only directory";
  const fs::path path = write("model.json", "old");
  fs::permissions(dir_, fs::perms::owner_read | fs::perms::owner_exec);
  EXPECT_THAT([&] { write_file_atomically(path, "new"); },
              ThrowsMessage<IOError>(AllOf(HasSubstr(path.string() + ": cannot create the temporary file"),
                                           HasSubstr("Permission denied"))));
  fs::permissions(dir_, fs::perms::owner_all);
  EXPECT_EQ(read_file(path), "old");
  EXPECT_EQ(entries(), std::vector<std::string>{"model.json"});
}

TEST_F(AtomicFileTest, MissingParentDirectoryIsAnError) {
  const fs::path path = dir_ / "no_such_dir" / "model.json";
  EXPECT_THAT([&] { write_file_atomically(path, "x"); },
              ThrowsMessage<IOError>(AllOf(HasSubstr(path.string() + ": cannot create the temporary file " +
                                                     path.string() + ".tmp-" + std::to_string(::getpid()) + "-"),
                                           HasSubstr("No such file or directory"))));
}

TEST_F(AtomicFileTest, PathWithoutAFileNameIsAnError) {
  EXPECT_THAT([&] { write_file_atomically("", "x"); },
              ThrowsMessage<IOError>(HasSubstr("expected a path that names a file or directory")));
  EXPECT_THAT([&] { write_file_atomically("/", "x"); },
              ThrowsMessage<IOError>(HasSubstr("/: expected a path that names a file or directory")));
}

TEST_F(AtomicFileTest, TrailingSeparatorNamesTheSameFile) {
  write_file_atomically(dir() + "/a.txt/", "x");
  EXPECT_EQ(read_file(dir_ / "a.txt"), "x");
}

TEST_F(AtomicFileTest, ReadFileErrorsNameThePath) {
  const fs::path missing = dir_ / "missing.bin";
  EXPECT_THAT([&] { read_file(missing); },
              ThrowsMessage<IOError>(HasSubstr(missing.string() + ": cannot open: No such file or directory")));
  EXPECT_THAT([&] { read_file(dir_); }, ThrowsMessage<IOError>(HasSubstr(dir() + ": read failed: Is a directory")));
}

TEST_F(AtomicFileTest, ConcurrentReadersSeeTheOldOrTheNewFileNeverAMix) {
  const fs::path path = dir_ / "state.bin";
  const std::string a(1 << 16, 'a'), b(1 << 16, 'b');
  write_file_atomically(path, a);
  std::thread writer([&] {
    for (int i = 0; i < 6; ++i) write_file_atomically(path, i % 2 == 0 ? b : a);
  });
  for (int i = 0; i < 30; ++i) {
    const std::string seen = read_file(path);
    ASSERT_TRUE(seen == a || seen == b) << "read " << seen.size() << " bytes of a mixed file";
  }
  writer.join();
  EXPECT_EQ(read_file(path), a);
  EXPECT_EQ(entries(), std::vector<std::string>{"state.bin"});
}

TEST_F(AtomicFileTest, ThreadsWriteDistinctTargets) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 3; ++i) write_file_atomically(dir_ / fmt::format("f{}", t), fmt::format("{}:{}", t, i));
    });
  }
  for (auto& thread : threads) thread.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(read_file(dir_ / fmt::format("f{}", t)), fmt::format("{}:2", t));
  EXPECT_EQ(entries(), (std::vector<std::string>{"f0", "f1", "f2", "f3"}));
}

// ---- AtomicDirectory ----

TEST_F(AtomicFileTest, DirectoryStagesBesideTheTarget) {
  const fs::path target = dir_ / "ckpt";
  AtomicDirectory directory(target);
  EXPECT_EQ(directory.staging().parent_path(), dir_);
  EXPECT_THAT(directory.staging().filename().string(),
              ::testing::StartsWith("ckpt.tmp-" + std::to_string(::getpid()) + "-"));
  EXPECT_TRUE(fs::is_directory(directory.staging()));
  EXPECT_TRUE(fs::is_empty(directory.staging()));
}

TEST_F(AtomicFileTest, DirectoryCommitCreatesTheTarget) {
  const fs::path target = dir_ / "ckpt";
  {
    AtomicDirectory directory(target);
    write_file_atomically(directory.staging() / "model.json", "{}");
    fs::create_directory(directory.staging() / "assets");
    write_file_atomically(directory.staging() / "assets" / "vocab.txt", "a\nb\n");
    directory.commit();
  }
  EXPECT_EQ(read_file(target / "model.json"), "{}");
  EXPECT_EQ(read_file(target / "assets" / "vocab.txt"), "a\nb\n");
  EXPECT_EQ(entries(), std::vector<std::string>{"ckpt"});
}

TEST_F(AtomicFileTest, DirectoryCommitReplacesAnExistingDirectory) {
  const fs::path target = dir_ / "ckpt";
  fs::create_directories(target / "sub");
  write("ckpt/old_only.txt", "old");
  write("ckpt/model.json", "old model");
  write("ckpt/sub/deep.txt", "deep");
  {
    AtomicDirectory directory(target / "");  // a trailing separator names the same directory
    write_file_atomically(directory.staging() / "model.json", "new model");
    directory.commit();
  }
  EXPECT_EQ(read_file(target / "model.json"), "new model");
  EXPECT_FALSE(fs::exists(target / "old_only.txt"));
  EXPECT_FALSE(fs::exists(target / "sub"));
  EXPECT_EQ(entries(), std::vector<std::string>{"ckpt"});  // no .tmp or .old left behind
}

TEST_F(AtomicFileTest, UncommittedDirectoryLeavesTheOldOneAndRemovesTheStaging) {
  const fs::path target = dir_ / "ckpt";
  write("ckpt_placeholder", "");  // the directory listing below also checks siblings survive
  fs::create_directory(target);
  write("ckpt/model.json", "old model");
  fs::path staging;
  {
    AtomicDirectory directory(target);
    staging = directory.staging();
    write_file_atomically(staging / "model.json", "half-written");
    fs::create_directory(staging / "sub");
    write_file_atomically(staging / "sub" / "x", "x");
  }  // e.g. an exception while saving
  EXPECT_FALSE(fs::exists(staging));
  EXPECT_EQ(read_file(target / "model.json"), "old model");
  EXPECT_EQ(entries(), (std::vector<std::string>{"ckpt", "ckpt_placeholder"}));
}

TEST_F(AtomicFileTest, DirectoryCommitTwiceIsAnError) {
  const fs::path target = dir_ / "ckpt";
  AtomicDirectory directory(target);
  directory.commit();
  EXPECT_TRUE(fs::is_directory(target));
  EXPECT_THAT([&] { directory.commit(); },
              ThrowsMessage<IOError>(HasSubstr(target.string() + ": commit() called twice")));
}

TEST_F(AtomicFileTest, DirectoryInAMissingParentIsAnError) {
  const fs::path target = dir_ / "missing" / "ckpt";
  EXPECT_THAT([&] { AtomicDirectory directory(target); },
              ThrowsMessage<IOError>(AllOf(HasSubstr(target.string() + ": cannot create the staging directory"),
                                           HasSubstr("No such file or directory"))));
}

// Runs `crash` in a child process that then dies without unwinding (as SIGKILL would
// leave it): whatever temporaries it made stay behind, named with a PID that has ended.
template <class Fn>
void in_crashing_child(Fn crash) {
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    crash();
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
}

TEST_F(AtomicFileTest, NextSaveRemovesTheTemporariesOfACrashedWriter) {
  const fs::path model = dir_ / "model";
  in_crashing_child([&] {
    auto* staging = new AtomicDirectory(model);  // neither committed nor destroyed: the process dies first
    std::FILE* f = std::fopen((staging->staging() / "weights").c_str(), "w");
    std::fputs("half a checkpoint", f);
    std::fclose(f);
  });
  in_crashing_child([&] {
    const std::string temp = fmt::format("{}/weights.bin.tmp-{}-0123456789abcdef", dir_.string(), ::getpid());
    std::fclose(std::fopen(temp.c_str(), "w"));
  });
  const std::vector<AtomicTemporary> temporaries = list_atomic_temporaries(dir_);
  ASSERT_EQ(temporaries.size(), 2u);
  for (const AtomicTemporary& t : temporaries) EXPECT_FALSE(t.alive) << t.path;

  AtomicDirectory(model).commit();  // removes model's temporary only
  EXPECT_EQ(entries(), (std::vector<std::string>{"model", temporaries[1].path.filename().string()}));
  write_file_atomically(dir_ / "weights.bin", "w");
  EXPECT_EQ(entries(), (std::vector<std::string>{"model", "weights.bin"}));
}

TEST_F(AtomicFileTest, ATemporaryOfALiveProcessIsKept) {
  const std::string live = "weights.bin.tmp-" + std::to_string(::getpid()) + "-00000000000000ff";
  write(live, "being written");
  write_file_atomically(dir_ / "weights.bin", "w");
  EXPECT_EQ(entries(), (std::vector<std::string>{"weights.bin", live}));
  const auto temporaries = list_atomic_temporaries(dir_);
  ASSERT_EQ(temporaries.size(), 1u);
  EXPECT_TRUE(temporaries[0].alive);
  EXPECT_EQ(temporaries[0].pid, ::getpid());
}

// A killed writer whose parent has not reaped it yet (an orphan waits for init, which
// in a container may take seconds) is a zombie: ended, though its PID still answers.
TEST_F(AtomicFileTest, AZombieWritersTemporaryIsRemoved) {
  const pid_t zombie = ::fork();
  ASSERT_GE(zombie, 0);
  if (zombie == 0) ::_exit(0);
  siginfo_t info{};
  ASSERT_EQ(::waitid(P_PID, static_cast<id_t>(zombie), &info, WEXITED | WNOWAIT), 0);  // ended, not reaped
  ASSERT_EQ(::kill(zombie, 0), 0);
  const std::string temp = fmt::format("weights.bin.tmp-{}-00000000000000ab", zombie);
  write(temp, "half written");
  EXPECT_FALSE(list_atomic_temporaries(dir_).at(0).alive);
  write_file_atomically(dir_ / "weights.bin", "w");
  EXPECT_EQ(entries(), std::vector<std::string>{"weights.bin"});
  ASSERT_EQ(::waitpid(zombie, nullptr, 0), zombie);
}

TEST_F(AtomicFileTest, APreviousVersionMovedAsideByACrashedSwapIsRestored) {
  // Between the fallback swap's two renames only `<target>.old-*` exists.
  const fs::path model = dir_ / "model";
  const pid_t dead_pid = ::fork();
  ASSERT_GE(dead_pid, 0);
  if (dead_pid == 0) ::_exit(0);
  ASSERT_EQ(::waitpid(dead_pid, nullptr, 0), dead_pid);
  const fs::path aside = dir_ / fmt::format("model.old-{}-00000000000000aa", dead_pid);
  fs::create_directories(aside);
  write(fmt::format("model.old-{}-00000000000000aa/config.json", dead_pid), "{}");
  EXPECT_EQ(remove_stale_temporaries(model), std::vector<fs::path>{aside});
  EXPECT_EQ(read_file(model / "config.json"), "{}");
  EXPECT_EQ(entries(), std::vector<std::string>{"model"});
}

TEST_F(AtomicFileTest, OtherNamesAreNotTemporaries) {
  for (const char* name : {"model.tmp", "model.tmp-12-34", "model.tmp-x-0123456789abcdef", ".tmp-1-0123456789abcdef",
                           "model.tmp-1-0123456789abcdeg", "model.new-1-0123456789abcdef"}) {
    write(name, "");
  }
  EXPECT_TRUE(list_atomic_temporaries(dir_).empty());
  EXPECT_TRUE(remove_stale_temporaries(dir_ / "model").empty());
  EXPECT_EQ(entries().size(), 6u);
}

}  // namespace
}  // namespace chorus::io
