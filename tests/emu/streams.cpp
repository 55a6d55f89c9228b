// Streams are worker threads with bounded FIFO queues (events, queue entries that take a
// timestamp when the worker reaches them, are events.cpp). This is the part that makes
// "returns at once, lands later" real: the host thread only ever enqueues, the worker does
// the work.
#include "emu.h"

#include <c10/util/Exception.h>

#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace emu {
namespace {

using Clock = std::chrono::steady_clock;

class Worker;
Worker* workers();
constexpr int kStreamsPerDevice = 1 + kSideStreams;

// The launch queue's bound; 0 until first read (XFERBENCH_EMU_QUEUE_DEPTH or the default).
std::atomic<int64_t> g_queue_depth{0};

// One stream. Two counters, not the queue, answer "has everything queued before now run?":
// a job that was popped but is still running counts as pending, so a synchronise never
// returns while the last copy is still writing.
class Worker {
 public:
  void push(std::function<void()> job, JobKind kind) {
    push_made([&job] { return std::move(job); }, kind);
  }

  // Push the job `make()` returns, made under the queue's lock once there is room: what it
  // decides (an event's version) is then in the queue in the same instant.
  template <class Make>
  void push_made(Make&& make, JobKind kind) {
    check_same_process();
    const bool bounded = kind != JobKind::kMarker;
    if (bounded) {
      queue_depth(); // a bad XFERBENCH_EMU_QUEUE_DEPTH raises here, before any lock
    }
    if (kind == JobKind::kWork) {
      host_stall(); // a loaded host, where the stall knob asks for one: before the lock
    }
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (bounded) { // the launch queue: block while the stream already holds `depth` jobs
        done_cv_.wait(lock, [&] {
          return static_cast<int64_t>(enqueued_ - done_) < queue_depth();
        });
      }
      start_locked();
      queue_.push_back({make(), kind});
      ++enqueued_;
    }
    work_cv_.notify_one();
  }

  // Held, the worker starts no job (one it popped waits, counted pending): a test then
  // reads "queued, not run yet" as a fact, not as a race against the worker.
  void hold(bool held) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      held_ = held;
    }
    work_cv_.notify_all();
  }

  // A new depth applies to callers already waiting for room.
  void wake_waiters() {
    std::lock_guard<std::mutex> lock(mu_); // not lost between a waiter's check and its wait
    done_cv_.notify_all();
  }

  // Block the caller until every job queued before this call has run.
  void synchronize() {
    if (!started_.load()) {
      return;
    }
    check_same_process();
    std::unique_lock<std::mutex> lock(mu_);
    const uint64_t target = enqueued_;
    done_cv_.wait(lock, [&] { return done_ >= target; });
  }

  bool idle() {
    if (!started_.load()) {
      return true;
    }
    std::lock_guard<std::mutex> lock(mu_);
    return done_ == enqueued_;
  }

  int64_t pending() {
    if (!started_.load()) {
      return 0;
    }
    std::lock_guard<std::mutex> lock(mu_);
    return static_cast<int64_t>(enqueued_ - done_);
  }

  bool started() const {
    return started_.load();
  }

  // False in a forked child: the worker thread stayed behind in the parent.
  bool runs_here() const {
    return started_.load() && owner_pid_.load() == getpid();
  }

 private:
  // Threads do not survive fork(): a child that inherited a started stream would wait for
  // ever. CUDA refuses such a child too, so say so instead of hanging.
  void check_same_process() const {
    const pid_t owner = owner_pid_.load();
    TORCH_CHECK(
        owner == 0 || owner == getpid(),
        "emu: cannot use the emulated device in a forked child after its streams started "
        "(as with CUDA); use the 'spawn' start method");
  }

  void start_locked() {
    if (started_.load()) {
      return;
    }
    owner_pid_.store(getpid());
    const auto device = static_cast<c10::DeviceIndex>((this - workers()) / kStreamsPerDevice);
    std::thread([this, device] { run(device); }).detach();
    started_.store(true);
  }

  void run(c10::DeviceIndex device) {
    for (;;) {
      Job job;
      {
        std::unique_lock<std::mutex> lock(mu_);
        work_cv_.wait(lock, [&] { return !queue_.empty() && !held_; });
        job = std::move(queue_.front());
        queue_.pop_front();
      }
      const bool busy = job.kind == JobKind::kWork;
      if (busy) {
        device_busy(device, true);
      }
      job.fn();
      if (busy) {
        device_busy(device, false);
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        ++done_;
      }
      done_cv_.notify_all();
    }
  }

  struct Job {
    std::function<void()> fn;
    JobKind kind = JobKind::kWork;
  };

  std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable done_cv_; // a job finished: for synchronize and for room to push
  std::deque<Job> queue_;
  uint64_t enqueued_ = 0;
  uint64_t done_ = 0;
  bool held_ = false; // guarded by mu_
  std::atomic<bool> started_{false};
  std::atomic<pid_t> owner_pid_{0};
};

// Leaked on purpose: detached worker threads and frees during interpreter shutdown may
// still reach them after static destructors would have run.
Worker* workers() {
  static Worker* all = new Worker[kMaxDevices * kStreamsPerDevice];
  return all;
}

Worker& worker_for(const c10::Stream& stream) {
  TORCH_CHECK(
      stream.device_type() == c10::DeviceType::PrivateUse1,
      "emu: expected an emu stream, got one on ", stream.device());
  const auto index = resolve_index(stream.device_index());
  const auto id = stream.id();
  TORCH_CHECK(id >= 0 && id < kStreamsPerDevice, "emu: unknown stream id ", id);
  return workers()[index * kStreamsPerDevice + id];
}

c10::Stream make_stream(c10::DeviceIndex index, c10::StreamId id) {
  return c10::Stream(
      c10::Stream::UNSAFE, c10::Device(c10::DeviceType::PrivateUse1, index), id);
}

// The current stream is per thread and per device, as in CUDA; 0 is the default stream.
thread_local std::array<c10::StreamId, kMaxDevices> tls_current_stream{};

std::atomic<uint32_t> next_side_stream[kMaxDevices];

std::atomic<double> g_copy_delay_s{0.0};

// The host-stall knob: every `every`-th work job queued (a copy, a spin) first sleeps
// `seconds` on the calling thread, as a host descheduled on a loaded machine queues late.
// every 0: not read yet (XFERBENCH_EMU_HOST_STALL); -1: off.
std::atomic<int64_t> g_stall_every{0};
std::atomic<double> g_stall_s{0.0};
std::atomic<uint64_t> g_stall_count{0};

void read_stall_environment() {
  int64_t every = -1;
  double seconds = 0.0;
  if (const char* text = std::getenv("XFERBENCH_EMU_HOST_STALL")) {
    char* end = nullptr;
    const long long n = std::strtoll(text, &end, 10);
    const bool comma = end != text && *end == ',';
    const double s = comma ? std::strtod(end + 1, &end) : -1.0;
    TORCH_CHECK(
        comma && *end == '\0' && n >= 1 && s >= 0.0, "emu: XFERBENCH_EMU_HOST_STALL='", text,
        "' is not a stall: EVERY,SECONDS (as 3,0.005)");
    every = n;
    seconds = s;
  }
  g_stall_s.store(seconds);
  int64_t unset = 0;
  g_stall_every.compare_exchange_strong(unset, every); // set_host_stall may have won
}

} // namespace

void host_stall() {
  if (g_stall_every.load() == 0) {
    read_stall_environment();
  }
  const int64_t every = g_stall_every.load();
  if (every > 0 && (g_stall_count.fetch_add(1) + 1) % static_cast<uint64_t>(every) == 0) {
    std::this_thread::sleep_for(std::chrono::duration<double>(g_stall_s.load()));
  }
}

void set_host_stall(int64_t every, double seconds) {
  TORCH_CHECK(every >= 0 && seconds >= 0.0, "emu: a host stall needs every >= 0 (0: off) and "
              "seconds >= 0, got ", every, " and ", seconds);
  g_stall_s.store(seconds);
  g_stall_count.store(0);
  g_stall_every.store(every == 0 ? -1 : every);
}

void hold_stream(c10::DeviceIndex index, c10::StreamId id, bool held) {
  worker_for(make_stream(resolve_index(index), id)).hold(held);
}

c10::Stream current_stream(c10::DeviceIndex index) {
  index = resolve_index(index);
  return make_stream(index, tls_current_stream[index]);
}

c10::Stream exchange_stream(const c10::Stream& stream) {
  worker_for(stream); // validates it
  const auto index = resolve_index(stream.device_index());
  const auto previous = make_stream(index, tls_current_stream[index]);
  tls_current_stream[index] = stream.id();
  return previous;
}

c10::Stream new_stream(c10::DeviceIndex index) {
  index = resolve_index(index);
  const uint32_t n = next_side_stream[index].fetch_add(1);
  return make_stream(index, 1 + static_cast<c10::StreamId>(n % kSideStreams));
}

void enqueue(const c10::Stream& stream, std::function<void()> job, JobKind kind) {
  worker_for(stream).push(std::move(job), kind);
}

void enqueue_made(
    const c10::Stream& stream,
    const std::function<std::function<void()>()>& make,
    JobKind kind) {
  worker_for(stream).push_made(make, kind);
}

int64_t queue_depth() {
  const int64_t depth = g_queue_depth.load();
  if (depth > 0) {
    return depth;
  }
  int64_t value = kDefaultQueueDepth;
  if (const char* text = std::getenv("XFERBENCH_EMU_QUEUE_DEPTH")) {
    char* end = nullptr;
    const long long parsed = std::strtoll(text, &end, 10);
    TORCH_CHECK(
        end != text && *end == '\0' && parsed >= 1, "emu: XFERBENCH_EMU_QUEUE_DEPTH='", text,
        "' is not a queue depth: use a whole number of operations >= 1 (default ",
        kDefaultQueueDepth, ")");
    value = parsed;
  }
  int64_t unset = 0;
  g_queue_depth.compare_exchange_strong(unset, value); // set_queue_depth may have won
  return g_queue_depth.load();
}

void set_queue_depth(int64_t depth) {
  TORCH_CHECK(depth >= 1, "emu: the queue depth must be >= 1 operation, got ", depth);
  g_queue_depth.store(depth);
  for (int i = 0; i < kMaxDevices * kStreamsPerDevice; ++i) {
    workers()[i].wake_waiters();
  }
}

void synchronize_stream(const c10::Stream& stream) {
  worker_for(stream).synchronize();
}

void* stream_handle(const c10::Stream& stream) {
  return &worker_for(stream);
}

bool query_stream(const c10::Stream& stream) {
  return worker_for(stream).idle();
}

void synchronize_device(c10::DeviceIndex index) {
  index = resolve_index(index);
  for (int id = 0; id < kStreamsPerDevice; ++id) {
    workers()[index * kStreamsPerDevice + id].synchronize();
  }
}

int64_t pending_jobs(c10::DeviceIndex index) {
  index = resolve_index(index);
  int64_t total = 0;
  for (int id = 0; id < kStreamsPerDevice; ++id) {
    total += workers()[index * kStreamsPerDevice + id].pending();
  }
  return total;
}

void after_queued_work(std::function<void()> fn) {
  std::vector<Worker*> busy;
  for (int i = 0; i < kMaxDevices * kStreamsPerDevice; ++i) {
    Worker& w = workers()[i];
    // In a forked child no worker runs, so nothing queued can touch the memory any more.
    if (w.runs_here() && !w.idle()) {
      busy.push_back(&w);
    }
  }
  if (busy.empty()) {
    fn();
    return;
  }
  // The last busy stream to reach its marker runs fn: by then all earlier work has run.
  auto remaining = std::make_shared<std::atomic<size_t>>(busy.size());
  auto shared_fn = std::make_shared<std::function<void()>>(std::move(fn));
  for (Worker* w : busy) { // markers never wait for room: see JobKind
    w->push(
        [remaining, shared_fn] {
          if (remaining->fetch_sub(1) == 1) {
            (*shared_fn)();
          }
        },
        JobKind::kMarker);
  }
}

void set_copy_delay(double seconds) {
  TORCH_CHECK(seconds >= 0.0, "emu: copy delay must be >= 0 seconds, got ", seconds);
  g_copy_delay_s.store(seconds);
}

double copy_delay() {
  return g_copy_delay_s.load();
}

} // namespace emu
