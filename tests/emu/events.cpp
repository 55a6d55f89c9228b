// Events: queue entries that take a timestamp (steady clock) when a stream's worker reaches
// them. record/query/synchronize/wait/elapsed_time behave as CUDA's.
#include "emu.h"

#include <c10/util/Exception.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>

namespace emu {
namespace {

using Clock = std::chrono::steady_clock;

// What an event handle points to. Queued record/wait jobs hold their own reference, so an
// event destroyed from Python while its record is still queued stays valid until it runs.
struct EventState {
  std::mutex mu;
  std::condition_variable cv;
  uint64_t recorded = 0; // versions handed out by record()
  uint64_t completed = 0; // highest version a worker has reached
  Clock::time_point when; // when the worker reached `completed`
  bool timing = false;
  c10::DeviceIndex device = -1;
};

struct EventHandle {
  std::shared_ptr<EventState> state;
};

std::shared_ptr<EventState> state_of(void* event) {
  return static_cast<EventHandle*>(event)->state;
}

} // namespace

void record_event(void** event, const c10::Stream& stream, bool timing) {
  if (*event == nullptr) {
    auto state = std::make_shared<EventState>();
    state->timing = timing;
    state->device = stream.device_index();
    *event = new EventHandle{std::move(state)};
  }
  auto state = state_of(*event);
  TORCH_CHECK(
      state->device == stream.device_index(),
      "emu: event on emu:", state->device, " recorded on a stream of ", stream.device());
  // The version is taken once the record has room in the queue, in the same instant as
  // the push: a wait_event from another thread never targets a record not yet queued.
  enqueue_made(
      stream,
      [&state]() -> std::function<void()> {
        uint64_t version;
        {
          std::lock_guard<std::mutex> lock(state->mu);
          version = ++state->recorded;
        }
        return [state, version] {
          {
            std::lock_guard<std::mutex> lock(state->mu);
            if (version > state->completed) {
              state->completed = version;
              state->when = Clock::now();
            }
          }
          state->cv.notify_all();
        };
      },
      JobKind::kSync);
}

void block_on_event(void* event, const c10::Stream& stream) {
  if (event == nullptr) {
    return; // never recorded: nothing to wait for, as in CUDA
  }
  auto state = state_of(event);
  uint64_t version;
  {
    std::lock_guard<std::mutex> lock(state->mu);
    version = state->recorded;
  }
  // The waiting stream's worker blocks here, so work queued after this on that stream
  // runs only once the other stream has reached the event.
  enqueue(
      stream,
      [state, version] {
        std::unique_lock<std::mutex> lock(state->mu);
        state->cv.wait(lock, [&] { return state->completed >= version; });
      },
      JobKind::kSync);
}

bool query_event(void* event) {
  if (event == nullptr) {
    return true;
  }
  auto state = state_of(event);
  std::lock_guard<std::mutex> lock(state->mu);
  return state->completed >= state->recorded;
}

void synchronize_event(void* event) {
  if (event == nullptr) {
    return;
  }
  auto state = state_of(event);
  std::unique_lock<std::mutex> lock(state->mu);
  const uint64_t target = state->recorded;
  state->cv.wait(lock, [&] { return state->completed >= target; });
}

void destroy_event(void* event) noexcept {
  delete static_cast<EventHandle*>(event);
}

double elapsed_ms(void* start, void* end) {
  TORCH_CHECK(
      start != nullptr && end != nullptr,
      "emu: both events must be recorded before calculating elapsed time");
  auto a = state_of(start);
  auto b = state_of(end);
  if (a == b) {
    return 0.0; // one event against itself; locking its mutex twice would deadlock
  }
  TORCH_CHECK(
      a->timing && b->timing,
      "emu: both events must be created with enable_timing=True to measure elapsed time");
  std::scoped_lock lock(a->mu, b->mu);
  // CUDA answers cudaErrorNotReady here; the caller synchronises first.
  TORCH_CHECK(
      a->completed >= a->recorded && b->completed >= b->recorded,
      "emu: elapsed_time needs both events to have completed; synchronize first");
  return std::chrono::duration<double, std::milli>(b->when - a->when).count();
}

} // namespace emu
