// An emulated accelerator on PyTorch's PrivateUse1 dispatch key, renamed "emu" from Python.
//
// Device memory is host memory behind our own allocator; each stream is a worker thread
// with a bounded FIFO queue; events are jobs on that queue that take a timestamp. This
// header is what the seven translation units share:
//   streams.cpp  worker-thread streams (the bounded launch queue), deferred frees
//   events.cpp   events: queue entries that take a timestamp
//   clock.cpp    the SM clock that ramps up under load, and the spin (_sleep) that counts it
//   memory.cpp   the device allocator and its statistics
//   pinned.cpp   the caching pinned host allocator and its statistics
//   device.cpp   the device guard and the PrivateUse1 hooks that torch calls into
//   ops.cpp      aten kernels (empty, views, resize, the copy) and the CPU fallback
#pragma once

#include <c10/core/Allocator.h>
#include <c10/core/Device.h>
#include <c10/core/Stream.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace emu {

// At most this many emulated devices (XFERBENCH_EMU_DEVICES asks for 1..8; default 1).
constexpr int kMaxDevices = 8;
// Stream ids per device: 0 is the default stream, 1..kSideStreams are side streams handed
// out round-robin (as CUDA's stream pool does), so creating streams never leaks threads.
constexpr int kSideStreams = 32;

// ---- devices (device.cpp)
int device_count();
c10::DeviceIndex current_device();
void set_current_device(c10::DeviceIndex index);
// The index itself, or the current device for -1; raises for one that does not exist.
c10::DeviceIndex resolve_index(c10::DeviceIndex index);

// ---- peer access between devices (device.cpp)
// Whether `device` can read and write `peer`'s memory directly (cudaDeviceCanAccessPeer):
// every ordered pair of two distinct devices can, unless XFERBENCH_EMU_NO_PEER ("0>1,1>0")
// or set_peer_access says it cannot. A device never "accesses" itself as a peer.
bool can_access_peer(c10::DeviceIndex device, c10::DeviceIndex peer);
void set_peer_access(c10::DeviceIndex device, c10::DeviceIndex peer, bool allowed);
// True once per ordered pair with peer access, on its first copy: torch enables peer access
// lazily on the first copy between two devices (cudaDeviceEnablePeerAccess), and that copy
// pays for it on the host (kPeerEnableS here).
bool first_peer_copy(c10::DeviceIndex src, c10::DeviceIndex dst);
constexpr double kPeerEnableS = 0.002;

// ---- streams (streams.cpp)
c10::Stream current_stream(c10::DeviceIndex index);
c10::Stream exchange_stream(const c10::Stream& stream);
c10::Stream new_stream(c10::DeviceIndex index);
// What a queued job is, for the launch queue's bound and the SM clock:
//   kWork    keeps the device busy while it runs (copies, the spin): the clock ramps up;
//   kSync    bounded but not busy (event records and waits): a stream waiting on another
//            does not load the device;
//   kMarker  internal (deferred frees): never blocks the caller and is not busy, since a
//            worker that pushes one onto its own full queue would wait for itself.
enum class JobKind { kWork, kSync, kMarker };
// Queue `job` on `stream`; it runs on that stream's worker thread after everything queued
// there before it. Jobs must not throw. Unless it is a kMarker, the caller blocks while the
// stream already holds queue_depth() jobs (queued or running), as a CUDA launch blocks
// once a stream has about a thousand pending operations.
void enqueue(const c10::Stream& stream, std::function<void()> job,
             JobKind kind = JobKind::kWork);
// As enqueue, the job being what `make()` returns, called under the stream's queue lock once
// there is room: what it decides (an event's version) is in the queue in the same instant.
void enqueue_made(
    const c10::Stream& stream,
    const std::function<std::function<void()>()>& make,
    JobKind kind);
// The launch queue's bound per stream: set_queue_depth, else XFERBENCH_EMU_QUEUE_DEPTH,
// else kDefaultQueueDepth. A smaller bound set while jobs wait applies to the next push.
constexpr int64_t kDefaultQueueDepth = 1024;
void set_queue_depth(int64_t depth);
int64_t queue_depth();
void synchronize_stream(const c10::Stream& stream);
// An opaque, stable pointer that identifies the stream (torch.Stream.native_handle).
void* stream_handle(const c10::Stream& stream);
bool query_stream(const c10::Stream& stream);
void synchronize_device(c10::DeviceIndex index);
// Run `fn` once every job queued so far, on every stream of every device, has run; at once
// when all of them are idle. Frees go through this, so a queued copy never touches memory
// that was freed after it was queued.
void after_queued_work(std::function<void()> fn);
// Jobs queued on `index`'s streams and not finished yet.
int64_t pending_jobs(c10::DeviceIndex index);

// ---- events (events.cpp): the opaque void* that c10::Event holds.
void record_event(void** event, const c10::Stream& stream, bool timing);
void block_on_event(void* event, const c10::Stream& stream);
bool query_event(void* event);
void synchronize_event(void* event);
void destroy_event(void* event) noexcept;
double elapsed_ms(void* start, void* end);

// Seconds each queued (non_blocking) copy waits before it runs: a test knob that makes the
// window between "the call returned" and "the data landed" wide enough to observe.
void set_copy_delay(double seconds);
double copy_delay();
// The host-stall knob (XFERBENCH_EMU_HOST_STALL="EVERY,SECONDS", set_host_stall): every
// EVERY-th work job queued sleeps SECONDS on the calling thread first (every 0: off).
void host_stall();
void set_host_stall(int64_t every, double seconds);

// ---- the SM clock (clock.cpp)
// The model: idle at kIdleMHz; ramps linearly to kMaxMHz over the ramp time once the device
// is continuously busy (a kWork job running on any of its streams); holds its value while
// idle and drops back to idle after the cool-down. Computed from the moments the device
// turned busy or idle: no thread of its own.
constexpr double kIdleMHz = 345.0;
constexpr double kMaxMHz = 1980.0;
constexpr double kDefaultRampS = 0.020;
constexpr double kDefaultCooldownS = 0.050;
// While any throttle reason is set, the clock is capped at this share of kMaxMHz.
constexpr double kThrottleShare = 0.5;
// Called by a stream's worker around each kWork job.
void device_busy(c10::DeviceIndex index, bool busy);
// The clock `index` runs at now, in MHz (the model, a pinned value, the throttle's cap).
double sm_clock_mhz(c10::DeviceIndex index);
// torch.emu._sleep: queue on the current stream of the current device a spin that ends once
// `cycles` cycles of the clock have passed.
void queue_sleep(int64_t cycles);
// Test knobs, for every device: a pinned clock (nullopt: the model), throttle reasons
// (thermal, power and hw_slowdown cap the clock at kThrottleShare of kMaxMHz), the model's
// ramp and cool-down in seconds.
void set_clock(std::optional<double> mhz);
void set_throttle(std::vector<std::string> reasons);
std::vector<std::string> throttle_reasons();
void set_clock_model(double ramp_s, double cooldown_s);
std::pair<double, double> clock_model();
// The model's time stopped (it moves only by advance_time) or the steady clock again; and
// whether a kWork job runs on the device now: tests that read the ramp at chosen moments.
void set_manual_time(bool on);
// Hold a stream's worker (it starts no job until let go) or let it go.
void hold_stream(c10::DeviceIndex index, c10::StreamId id, bool held);
void advance_time(double seconds);
bool is_busy(c10::DeviceIndex index);

// ---- memory (memory.cpp, pinned.cpp)
constexpr size_t kAlignment = 64; // as torch's CPU allocator: vectorised kernels expect it
void* aligned_alloc_or_throw(size_t nbytes, const char* what);

// Blocks keyed by start address, so "does ptr lie inside a block?" is one lookup. `Block`
// has a `size`.
template <class Block>
struct BlockMap {
  std::map<uintptr_t, Block> blocks;

  Block* find(const void* ptr) {
    const auto p = reinterpret_cast<uintptr_t>(ptr);
    auto it = blocks.upper_bound(p);
    if (it == blocks.begin()) {
      return nullptr;
    }
    --it;
    return p < it->first + it->second.size ? &it->second : nullptr;
  }
};

c10::Allocator* device_allocator();
c10::Allocator* host_allocator();
// Whether `ptr` lies inside a pinned host block that is handed out (not one back in the
// cache).
bool is_pinned_ptr(const void* ptr);
// The emulated device whose memory holds `ptr`, if any.
std::optional<c10::DeviceIndex> device_of_ptr(const void* ptr);
void set_memory_total(int64_t bytes);
// The pinned host allocator's statistics under torch.cuda.host_memory_stats()'s flat keys.
std::vector<std::pair<std::string, int64_t>> host_stats();
void empty_host_cache();
void reset_host_stats(bool accumulated);
// What a fresh pinned block costs the host, in microseconds: base + per MiB of its size.
void set_pin_cost(double base_us, double us_per_mib);
std::pair<double, double> pin_cost();

} // namespace emu
