// The two interfaces through which torch's device-generic code reaches a PrivateUse1
// backend: the device guard (current device, streams, events: torch.Stream, torch.Event,
// torch.accelerator.current_stream/synchronize) and the hooks (device count, pinned
// memory, generators: torch.accelerator.current_accelerator, pin_memory(), is_pinned()).
#include "emu.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <ATen/native/Resize.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/util/Exception.h>

#include <atomic>
#include <cstdlib>
#include <mutex>

namespace emu {
namespace {

// XFERBENCH_EMU_DEVICES, clamped to 1..kMaxDevices. It must not throw (torch calls the
// device count where errors are not allowed); the Python loader validates the text.
int read_device_count() {
  const char* text = std::getenv("XFERBENCH_EMU_DEVICES");
  if (text == nullptr) {
    return 1;
  }
  const int n = std::atoi(text);
  return n < 1 ? 1 : (n > kMaxDevices ? kMaxDevices : n);
}

// Ordered pairs without peer access, one bit per (device, peer): bit device * kMaxDevices + peer.
// Read once from XFERBENCH_EMU_NO_PEER ("0>1,2>3"; the Python loader validates the text, so
// what does not parse here is skipped), then changed by set_peer_access.
uint64_t read_no_peer() {
  const char* text = std::getenv("XFERBENCH_EMU_NO_PEER");
  uint64_t mask = 0;
  while (text != nullptr && *text != '\0') {
    char* end = nullptr;
    const long a = std::strtol(text, &end, 10);
    if (end == text || *end != '>') {
      break;
    }
    const char* next = end + 1;
    const long b = std::strtol(next, &end, 10);
    if (end == next) {
      break;
    }
    if (a >= 0 && a < kMaxDevices && b >= 0 && b < kMaxDevices) {
      mask |= uint64_t{1} << (a * kMaxDevices + b);
    }
    text = *end == ',' ? end + 1 : end;
  }
  return mask;
}

std::atomic<uint64_t>& no_peer() {
  static std::atomic<uint64_t> mask{read_no_peer()};
  return mask;
}

uint64_t pair_bit(c10::DeviceIndex device, c10::DeviceIndex peer) {
  return uint64_t{1} << (resolve_index(device) * kMaxDevices + resolve_index(peer));
}

// The current device is per thread, as in CUDA.
thread_local c10::DeviceIndex tls_current_device = 0;

c10::DeviceIndex index_of(const c10::Device& device) {
  TORCH_CHECK(
      device.type() == c10::DeviceType::PrivateUse1, "emu: expected an emu device, got ",
      device);
  return resolve_index(device.index());
}

struct GuardImpl final : public c10::impl::DeviceGuardImplInterface {
  c10::DeviceType type() const override {
    return c10::DeviceType::PrivateUse1;
  }

  c10::Device exchangeDevice(c10::Device device) const override {
    const auto previous = current_device();
    set_current_device(index_of(device));
    return {c10::DeviceType::PrivateUse1, previous};
  }

  c10::Device getDevice() const override {
    return {c10::DeviceType::PrivateUse1, current_device()};
  }

  void setDevice(c10::Device device) const override {
    set_current_device(index_of(device));
  }

  void uncheckedSetDevice(c10::Device device) const noexcept override {
    if (device.index() >= 0 && device.index() < device_count()) {
      tls_current_device = device.index();
    }
  }

  c10::Stream getStream(c10::Device device) const override {
    return current_stream(index_of(device));
  }

  c10::Stream getDefaultStream(c10::Device device) const override {
    return c10::Stream(
        c10::Stream::UNSAFE, c10::Device(c10::DeviceType::PrivateUse1, index_of(device)), 0);
  }

  c10::Stream getStreamFromGlobalPool(c10::Device device, bool /*high_priority*/)
      const override {
    return new_stream(index_of(device));
  }

  c10::Stream getNewStream(c10::Device device, int /*priority*/) const override {
    return new_stream(index_of(device));
  }

  c10::Stream exchangeStream(c10::Stream stream) const override {
    return exchange_stream(stream);
  }

  void* getStreamNativeHandle(const c10::Stream stream) const override {
    return stream_handle(stream);
  }

  c10::DeviceIndex deviceCount() const noexcept override {
    return static_cast<c10::DeviceIndex>(device_count());
  }

  c10::DeviceCapability getDeviceCapability(c10::Device /*device*/) const override {
    return {}; // every dtype: kernels run on the CPU
  }

  bool queryStream(const c10::Stream& stream) const override {
    return query_stream(stream);
  }

  void synchronizeStream(const c10::Stream& stream) const override {
    synchronize_stream(stream);
  }

  void synchronizeDevice(const c10::DeviceIndex index) const override {
    synchronize_device(index);
  }

  void record(
      void** event,
      const c10::Stream& stream,
      const c10::DeviceIndex /*device_index*/,
      const c10::EventFlag flag) const override {
    // torch.Event(enable_timing=True) asks for BACKEND_DEFAULT (see c10's EventFlag note).
    record_event(event, stream, flag == c10::EventFlag::BACKEND_DEFAULT);
  }

  void block(void* event, const c10::Stream& stream) const override {
    block_on_event(event, stream);
  }

  bool queryEvent(void* event) const override {
    return query_event(event);
  }

  void synchronizeEvent(void* event) const override {
    synchronize_event(event);
  }

  void destroyEvent(void* event, const c10::DeviceIndex /*device_index*/)
      const noexcept override {
    destroy_event(event);
  }

  double elapsedTime(void* start, void* end, const c10::DeviceIndex /*device_index*/)
      const override {
    return elapsed_ms(start, end);
  }

  // Frees already wait for every stream's queued work (memory.cpp); nothing to record.
  void recordDataPtrOnStream(const c10::DataPtr& /*data_ptr*/, const c10::Stream& /*stream*/)
      const override {}
};

C10_REGISTER_GUARD_IMPL(PrivateUse1, GuardImpl);

struct Hooks final : public at::PrivateUse1HooksInterface {
  bool isBuilt() const override {
    return true;
  }

  bool isAvailable() const override {
    return device_count() > 0;
  }

  bool hasPrimaryContext(c10::DeviceIndex /*device_index*/) const override {
    return true; // nothing to initialise
  }

  void init() const override {}

  c10::DeviceIndex deviceCount() const override {
    return static_cast<c10::DeviceIndex>(device_count());
  }

  void setCurrentDevice(c10::DeviceIndex index) const override {
    set_current_device(index);
  }

  c10::DeviceIndex getCurrentDevice() const override {
    return current_device();
  }

  c10::DeviceIndex exchangeDevice(c10::DeviceIndex index) const override {
    const auto previous = current_device();
    set_current_device(index);
    return previous;
  }

  c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex index) const override {
    return exchangeDevice(index);
  }

  bool isPinnedPtr(const void* data) const override {
    return is_pinned_ptr(data);
  }

  c10::Allocator* getPinnedMemoryAllocator() const override {
    return host_allocator();
  }

  c10::Device getDeviceFromPtr(void* data) const override {
    const auto index = device_of_ptr(data);
    TORCH_CHECK(index.has_value(), "emu: pointer ", data, " is not emulated device memory");
    return {c10::DeviceType::PrivateUse1, *index};
  }

  // Kernels on emu tensors run on the CPU through the fallback, with the CPU's default
  // generator; emu's generator is that one, so torch.manual_seed seeds what actually runs.
  const at::Generator& getDefaultGenerator(c10::DeviceIndex /*device_index*/) const override {
    return at::detail::getDefaultCPUGenerator();
  }

  at::Generator getNewGenerator(c10::DeviceIndex /*device_index*/) const override {
    return at::detail::createCPUGenerator();
  }

  // storage.resize_() on an emu storage.
  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t nbytes) const override {
    c10::DeviceGuard guard(storage.device());
    synchronize_device(storage.device().index()); // queued copies may still use the old block
    at::native::resize_bytes_cpu(storage.unsafeGetStorageImpl(), nbytes);
  }
};

struct RegisterHooks {
  RegisterHooks() {
    // Leaked: torch keeps the pointer for the life of the process.
    at::RegisterPrivateUse1HooksInterface(new Hooks());
  }
};
RegisterHooks register_hooks;

} // namespace

int device_count() {
  static const int count = read_device_count();
  return count;
}

c10::DeviceIndex current_device() {
  return tls_current_device;
}

c10::DeviceIndex resolve_index(c10::DeviceIndex index) {
  if (index == -1) {
    return tls_current_device;
  }
  TORCH_CHECK(
      index >= 0 && index < device_count(), "emu: device emu:", static_cast<int>(index),
      " not found: this process has ", device_count(),
      " emulated device(s) (XFERBENCH_EMU_DEVICES)");
  return index;
}

void set_current_device(c10::DeviceIndex index) {
  tls_current_device = resolve_index(index);
}

bool can_access_peer(c10::DeviceIndex device, c10::DeviceIndex peer) {
  if (resolve_index(device) == resolve_index(peer)) {
    return false;
  }
  return (no_peer().load() & pair_bit(device, peer)) == 0;
}

void set_peer_access(c10::DeviceIndex device, c10::DeviceIndex peer, bool allowed) {
  const uint64_t bit = pair_bit(device, peer);
  if (allowed) {
    no_peer().fetch_and(~bit);
  } else {
    no_peer().fetch_or(bit);
  }
}

bool first_peer_copy(c10::DeviceIndex src, c10::DeviceIndex dst) {
  static std::mutex mu;
  static uint64_t enabled = 0;
  const uint64_t bit = pair_bit(src, dst);
  std::lock_guard<std::mutex> lock(mu);
  const bool first = (enabled & bit) == 0;
  enabled |= bit;
  return first;
}

} // namespace emu
