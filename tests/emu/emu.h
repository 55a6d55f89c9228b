// An emulated accelerator on PyTorch's PrivateUse1 dispatch key, renamed "emu" from Python.
//
// Device memory is host memory behind our own allocator; each stream is a worker thread
// with a FIFO queue; events are jobs on that queue that take a timestamp. This header is
// what the four translation units share:
//   streams.cpp  worker-thread streams and events
//   memory.cpp   device and pinned-host allocators, their statistics, deferred frees
//   device.cpp   the device guard and the PrivateUse1 hooks that torch calls into
//   ops.cpp      aten kernels (empty, views, resize, the copy) and the CPU fallback
#pragma once

#include <c10/core/Allocator.h>
#include <c10/core/Device.h>
#include <c10/core/Stream.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>

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

// ---- streams (streams.cpp)
c10::Stream current_stream(c10::DeviceIndex index);
c10::Stream exchange_stream(const c10::Stream& stream);
c10::Stream new_stream(c10::DeviceIndex index);
// Queue `job` on `stream`; it runs on that stream's worker thread after everything queued
// there before it. Jobs must not throw.
void enqueue(const c10::Stream& stream, std::function<void()> job);
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

// Events: the opaque void* that c10::Event holds.
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

// ---- memory (memory.cpp)
c10::Allocator* device_allocator();
c10::Allocator* host_allocator();
// Whether `ptr` lies inside a block from the pinned host allocator.
bool is_pinned_ptr(const void* ptr);
// The emulated device whose memory holds `ptr`, if any.
std::optional<c10::DeviceIndex> device_of_ptr(const void* ptr);
void set_memory_total(int64_t bytes);

} // namespace emu
