#include "chorus/comm/gloo_communicator.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <future>

#include <fmt/format.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

#include "chorus/core/env.h"
#include "chorus/profiler/profiler.h"

namespace chorus::comm {
namespace {

// Whether `store` holds `key` now: a BoundedStore asks; other stores (Gloo's FileStore) only
// offer a wait, given a millisecond.
// A failed collective's report (its own key, then the others') is bounded by these, so
// that the error comes within the deadline + 1 s even when rank 0, which serves the
// store, is the stalled one.
constexpr std::chrono::milliseconds kReportTimeout(400);
constexpr std::chrono::milliseconds kReportGrace(300);

void report_failure(gloo::rendezvous::Store& store, const std::string& key) {
  if (auto* bounded = dynamic_cast<BoundedStore*>(&store)) {
    bounded->set(key, {'1'}, kReportTimeout);
  } else {
    store.set(key, {'1'});
  }
}

// False also when the store cannot answer in time.
bool has_key(gloo::rendezvous::Store& store, const std::string& key) {
  try {
    if (auto* bounded = dynamic_cast<BoundedStore*>(&store)) return bounded->check({key}, kReportTimeout);
    store.wait({key}, std::chrono::milliseconds(1));
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

std::string this_hostname() {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  return name;
}

}  // namespace

GlooOptions gloo_options_from_env(GlooOptions options) {
  options.sync_max_bytes =
      env_integer("CHORUS_GLOO_SYNC_BYTES", "a non-negative integer", 0).value_or(options.sync_max_bytes);
  options.busy_poll =
      env_integer("CHORUS_GLOO_BUSY_POLL", "a non-negative integer", 0).value_or(options.busy_poll) != 0;
  return options;
}

struct GlooCommunicator::Task {
  const char* op;
  uint64_t sequence;
  std::function<void()> run;
  std::promise<void> done;
};

namespace {
class FutureWork final : public Work {
 public:
  explicit FutureWork(std::shared_future<void> done) : done_(std::move(done)) {}
  void wait() override { done_.get(); }

 private:
  std::shared_future<void> done_;
};
}  // namespace

GlooCommunicator::GlooCommunicator(int rank, int size, gloo::rendezvous::Store& store, GlooOptions options)
    : rank_(rank), size_(size), options_(std::move(options)), store_(&store) {
  // Gloo writes with writev: a peer that closed its end (it failed) must give this rank
  // an error to report, not kill it with SIGPIPE. Only the default action is replaced.
  struct sigaction previous = {};
  if (::sigaction(SIGPIPE, nullptr, &previous) == 0 && previous.sa_handler == SIG_DFL) ::signal(SIGPIPE, SIG_IGN);
  gloo::transport::tcp::attr attr;
  if (const char* ifname = std::getenv("CHORUS_SOCKET_IFNAME"); ifname != nullptr && *ifname != '\0') {
    attr.iface = ifname;
  } else {
    attr.hostname = options_.hostname.empty() ? this_hostname() : options_.hostname;
  }
  auto device = gloo::transport::tcp::CreateDevice(attr);
  auto context = std::make_shared<gloo::rendezvous::Context>(rank_, size_);
  context->setTimeout(options_.timeout);
  gloo::rendezvous::PrefixStore prefixed("chorus/" + options_.name, store);
  try {
    context->connectFullMesh(prefixed, device);
    if (size_ > 1 && options_.sync_max_bytes > 0) {
      auto sync = std::make_shared<gloo::rendezvous::Context>(rank_, size_);
      sync->setTimeout(options_.timeout);
      gloo::rendezvous::PrefixStore sync_prefixed("chorus/" + options_.name + "/sync", store);
      sync->connectFullMesh(sync_prefixed, device);
      for (int r = 0; r < size_; ++r) {
        if (r != rank_) sync->getPair(r)->setSync(true, options_.busy_poll);
      }
      sync_context_ = std::move(sync);
    }
  } catch (const std::exception& e) {
    throw_error<CollectiveError>("gloo: rank {} of {} could not connect to its peers: {}", rank_, size_, e.what());
  }
  context_ = std::move(context);
  thread_ = std::thread([this] { thread_main(); });
}

GlooCommunicator::~GlooCommunicator() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  ready_.notify_all();
  thread_.join();
}

std::unique_ptr<Work> GlooCommunicator::enqueue(const char* op, Run run) {
  auto task = std::make_shared<Task>(Task{op, issued_++, std::move(run), {}});
  std::shared_future<void> done = task->done.get_future().share();
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(task);
  }
  ready_.notify_one();
  return traced(op, std::make_unique<FutureWork>(std::move(done)));
}

void GlooCommunicator::run_now(const char* op, Run run) {
  std::unique_lock lock(mutex_);
  if (running_ || !queue_.empty()) {
    lock.unlock();
    enqueue(op, std::move(run))->wait();  // timed by enqueue
    return;
  }
  profiler::Scope event("collective", op);
  running_ = true;
  const std::string aborted = aborted_;
  lock.unlock();
  Task task{op, issued_++, std::move(run), {}};
  std::future<void> done = task.done.get_future();
  execute(task, aborted);
  lock.lock();
  running_ = false;
  lock.unlock();
  done.get();
}

void GlooCommunicator::execute(Task& task, const std::string& aborted) {
  try {
    if (!aborted.empty()) throw_error<CollectiveError>("{} #{}: aborted: {}", task.op, task.sequence, aborted);
    try {
      task.run();
    } catch (const CollectiveError&) {
      throw;
    } catch (const std::exception& e) {
      fail(task.op, task.sequence, e);
    }
    task.done.set_value();
  } catch (...) {
    {
      std::lock_guard lock(mutex_);
      if (aborted_.empty()) aborted_ = fmt::format("{} #{} failed", task.op, task.sequence);
    }
    task.done.set_exception(std::current_exception());
  }
}

void GlooCommunicator::thread_main() {
  for (;;) {
    std::shared_ptr<Task> task;
    std::string aborted;
    {
      std::unique_lock lock(mutex_);
      ready_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      task = queue_.front();
      queue_.pop_front();
      running_ = true;
      aborted = aborted_;
    }
    execute(*task, aborted);
    std::lock_guard lock(mutex_);
    running_ = false;
  }
}

// Names the ranks that never arrived: every rank that fails reports itself in the store,
// closes its connections and, for a grace period, looks for the others' reports; the
// silent ones are missing. Later collectives fail at once (execute() sees aborted_).
void GlooCommunicator::fail(const char* op, uint64_t sequence, const std::exception& error) {
  const std::string key = fmt::format("chorus/{}/failed/{}/", options_.name, sequence);
  bool reported = true;
  try {
    report_failure(*store_, key + std::to_string(rank_));
  } catch (const std::exception&) {
    reported = false;
  }
  // Close every connection: a peer blocked reading from this rank (in sync mode it reads
  // its socket, which only a close ends) fails now and reports too.
  sync_context_.reset();
  context_.reset();
  std::string missing = "0 (the rendezvous store on rank 0 is unreachable)";
  if (reported) {
    const auto grace = std::min<std::chrono::milliseconds>(options_.timeout, kReportGrace);
    const auto until = std::chrono::steady_clock::now() + grace;
    std::vector<int> silent;
    do {
      silent.clear();
      for (int r = 0; r < size_; ++r) {
        if (r != rank_ && !has_key(*store_, key + std::to_string(r))) silent.push_back(r);
      }
      if (silent.empty()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    } while (std::chrono::steady_clock::now() < until);
    missing = silent.empty() ? "none (all failed together)" : fmt::format("{}", fmt::join(silent, ", "));
  }
  throw_error<CollectiveError>("{} #{} on rank {} of {} failed: {}; ranks that never arrived: {}", op, sequence, rank_,
                               size_, error.what(), missing);
}

void GlooCommunicator::abort(const std::string& reason) {
  std::lock_guard lock(mutex_);
  if (aborted_.empty()) aborted_ = reason;
}

}  // namespace chorus::comm
