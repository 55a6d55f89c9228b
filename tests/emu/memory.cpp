// Device memory: ordinary host memory; what makes it "device" memory is that this allocator
// handed it out, which is exactly what torch asks (memory_allocated(), get_memory_info()).
// The pinned host allocator is pinned.cpp.
#include "emu.h"

#include <c10/core/CachingDeviceAllocator.h>
#include <c10/util/Exception.h>

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

namespace emu {
namespace {

using c10::CachingAllocator::Stat;
using c10::CachingAllocator::StatType;
using c10::CachingDeviceAllocator::DeviceStats;

// CUDA's caching allocator calls blocks under 1 MiB "small"; the statistics keep its split.
constexpr size_t kSmallBlock = 1 << 20;

struct DeviceBlock {
  size_t size;
  c10::DeviceIndex device;
};

int64_t default_total_bytes() {
  if (const char* text = std::getenv("XFERBENCH_EMU_MEMORY_BYTES")) {
    try {
      const long long value = std::stoll(text);
      TORCH_CHECK(value > 0, "");
      return value;
    } catch (...) {
      TORCH_CHECK(
          false, "emu: XFERBENCH_EMU_MEMORY_BYTES='", text,
          "' is not a positive number of bytes");
    }
  }
  // Half the host's RAM: the emulated device's memory and host memory share the RAM.
  return static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGE_SIZE) / 2;
}

void update(c10::CachingAllocator::StatArray& stats, size_t nbytes, int64_t amount) {
  const auto pool = nbytes < kSmallBlock ? StatType::SMALL_POOL : StatType::LARGE_POOL;
  for (auto type : {StatType::AGGREGATE, pool}) {
    Stat& stat = stats[static_cast<size_t>(type)];
    if (amount >= 0) {
      stat.increase(static_cast<size_t>(amount));
    } else {
      stat.decrease(static_cast<size_t>(-amount));
    }
  }
}

// No caching: every allocation is a fresh block and every free returns it, so allocated,
// reserved and active are all the same figure. Frees are deferred until queued work has
// run (see after_queued_work) but leave the statistics at once, as CUDA's free does.
class DeviceMemory final : public c10::DeviceAllocator {
 public:
  c10::DataPtr allocate(size_t nbytes) override {
    const c10::DeviceIndex device = current_device();
    const c10::Device where(c10::DeviceType::PrivateUse1, device);
    if (nbytes == 0) {
      return {nullptr, nullptr, &release, where};
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      const int64_t in_use = stats_[device].allocated_bytes[0].current;
      if (in_use + static_cast<int64_t>(nbytes) > total_locked()) {
        stats_[device].num_ooms += 1;
        TORCH_CHECK_WITH(
            OutOfMemoryError, false, "emu: out of memory on emu:", device,
            ": tried to allocate ", nbytes, " bytes with ", in_use, " of ", total_bytes_,
            " bytes in use (set XFERBENCH_EMU_MEMORY_BYTES for a larger device)");
      }
    }
    void* ptr = aligned_alloc_or_throw(nbytes, "emulated device memory");
    {
      std::lock_guard<std::mutex> lock(mu_);
      blocks_.blocks[reinterpret_cast<uintptr_t>(ptr)] = {nbytes, device};
      account(device, nbytes, +1);
    }
    return {ptr, ptr, &release, where};
  }

  static void release(void* ptr) {
    if (ptr == nullptr) {
      return;
    }
    instance().forget(ptr);
    after_queued_work([ptr] { std::free(ptr); });
  }

  c10::DeleterFnPtr raw_deleter() const override {
    return &release;
  }

  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }

  bool initialized() override {
    return true;
  }

  void emptyCache(c10::MempoolId_t /*unused*/) override {} // nothing is cached

  // Frees already wait for every stream's queued work, so there is nothing to record.
  void recordStream(const c10::DataPtr& /*unused*/, c10::Stream /*unused*/) override {}

  DeviceStats getDeviceStats(c10::DeviceIndex device) override {
    device = resolve_index(device);
    std::lock_guard<std::mutex> lock(mu_);
    return stats_[device];
  }

  void resetAccumulatedStats(c10::DeviceIndex device) override {
    device = resolve_index(device);
    std::lock_guard<std::mutex> lock(mu_);
    DeviceStats& s = stats_[device];
    for (auto* array : {&s.allocation, &s.segment, &s.active, &s.allocated_bytes,
                        &s.reserved_bytes, &s.active_bytes, &s.requested_bytes}) {
      for (Stat& stat : *array) {
        stat.reset_accumulated();
      }
    }
    s.num_ooms = 0;
    s.num_device_alloc = 0;
    s.num_device_free = 0;
  }

  void resetPeakStats(c10::DeviceIndex device) override {
    device = resolve_index(device);
    std::lock_guard<std::mutex> lock(mu_);
    DeviceStats& s = stats_[device];
    for (auto* array : {&s.allocation, &s.segment, &s.active, &s.allocated_bytes,
                        &s.reserved_bytes, &s.active_bytes, &s.requested_bytes}) {
      for (Stat& stat : *array) {
        stat.reset_peak();
      }
    }
  }

  // (free, total): total is XFERBENCH_EMU_MEMORY_BYTES (default half the host's RAM),
  // free is what this process has not allocated from it.
  std::pair<size_t, size_t> getMemoryInfo(c10::DeviceIndex device) override {
    device = resolve_index(device);
    std::lock_guard<std::mutex> lock(mu_);
    const int64_t in_use = stats_[device].allocated_bytes[0].current;
    const int64_t total = total_locked();
    const int64_t free = std::max<int64_t>(0, total - in_use);
    return {static_cast<size_t>(free), static_cast<size_t>(total)};
  }

  std::optional<c10::DeviceIndex> device_of(const void* ptr) {
    std::lock_guard<std::mutex> lock(mu_);
    const auto* block = blocks_.find(ptr);
    if (block == nullptr) {
      return std::nullopt;
    }
    return block->device;
  }

  void set_total(int64_t bytes) {
    TORCH_CHECK(bytes > 0, "emu: memory total must be > 0 bytes, got ", bytes);
    std::lock_guard<std::mutex> lock(mu_);
    total_bytes_ = bytes;
  }

  static DeviceMemory& instance();

 private:
  // Read on first use, not at load time: a bad XFERBENCH_EMU_MEMORY_BYTES then raises a
  // Python error instead of aborting the process while the library loads.
  int64_t total_locked() {
    if (total_bytes_ < 0) {
      total_bytes_ = default_total_bytes();
    }
    return total_bytes_;
  }

  void forget(void* ptr) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = blocks_.blocks.find(reinterpret_cast<uintptr_t>(ptr));
    TORCH_INTERNAL_ASSERT(it != blocks_.blocks.end(), "emu: freeing unknown device memory");
    account(it->second.device, it->second.size, -1);
    blocks_.blocks.erase(it);
  }

  void account(c10::DeviceIndex device, size_t nbytes, int sign) {
    DeviceStats& s = stats_[device];
    const int64_t bytes = sign * static_cast<int64_t>(nbytes);
    for (auto* array : {&s.allocated_bytes, &s.reserved_bytes, &s.active_bytes,
                        &s.requested_bytes}) {
      update(*array, nbytes, bytes);
    }
    for (auto* array : {&s.allocation, &s.segment, &s.active}) {
      update(*array, nbytes, sign);
    }
    if (sign > 0) {
      s.num_device_alloc += 1;
    } else {
      s.num_device_free += 1;
    }
  }

  std::mutex mu_;
  BlockMap<DeviceBlock> blocks_;
  DeviceStats stats_[kMaxDevices];
  int64_t total_bytes_ = -1; // unset until first use
};

DeviceMemory& DeviceMemory::instance() {
  // Leaked: tensors freed during interpreter shutdown still call release().
  static DeviceMemory* memory = new DeviceMemory();
  return *memory;
}

// Registered at load time: torch.empty(..., device="emu") allocates through it.
struct Register {
  Register() {
    c10::SetAllocator(c10::DeviceType::PrivateUse1, &DeviceMemory::instance());
  }
};
Register register_allocators;

} // namespace

void* aligned_alloc_or_throw(size_t nbytes, const char* what) {
  void* ptr = nullptr;
  if (posix_memalign(&ptr, kAlignment, nbytes) != 0) {
    TORCH_CHECK_WITH(
        OutOfMemoryError, false, "emu: the host could not allocate ", nbytes, " bytes of ",
        what);
  }
  return ptr;
}

c10::Allocator* device_allocator() {
  return &DeviceMemory::instance();
}

std::optional<c10::DeviceIndex> device_of_ptr(const void* ptr) {
  return DeviceMemory::instance().device_of(ptr);
}

void set_memory_total(int64_t bytes) {
  DeviceMemory::instance().set_total(bytes);
}

} // namespace emu
