// Pinned host memory through a caching allocator, as PyTorch's CachingHostAllocator (the
// one torch.cuda's pin_memory() goes through): a request is rounded up to the next power of
// two; a freed block goes back to a cache for its rounded size once the work queued before
// its free has run, and a later request of that size gets it again with no new allocation.
// A miss allocates a fresh block and pays a delay that stands for page-locking
// (cudaHostAlloc), one block at a time process-wide (the driver's lock), so a cold pin and a
// warm one differ on the host clock, and concurrent cold pins wait for each other, as on a
// GPU machine. empty_cache() returns every cached block.
//
// "Pinned" means "handed out by this allocator and not yet given back": is_pinned() is true
// for a block in use and false once it is back in the cache.
#include "emu.h"

#include <ATen/core/CachingHostAllocator.h>
#include <c10/util/Exception.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace emu {
namespace {

using c10::CachingAllocator::Stat;
using Clock = std::chrono::steady_clock;

// What a fresh block costs (page-locking): kDefaultPinBaseUs plus kDefaultPinUsPerMiB for
// each MiB of its rounded size, unless XFERBENCH_EMU_PIN_COST_US ("BASE" or
// "BASE,PER_MIB", microseconds) or set_pin_cost says otherwise. Modest on purpose (1 us per
// 64 KiB; real page-locking costs more) so emulated runs stay quick, yet a cold pin is
// plainly slower than a warm one.
constexpr double kDefaultPinBaseUs = 20.0;
constexpr double kDefaultPinUsPerMiB = 16.0;

// The driver's lock that page-locking holds (see PinnedMemory::allocate).
std::mutex g_driver_mu;

std::atomic<double> g_pin_base_us{-1.0}; // < 0: not read from the environment yet
std::atomic<double> g_pin_us_per_mib{kDefaultPinUsPerMiB};

void read_pin_cost_env() {
  double base = kDefaultPinBaseUs;
  double per_mib = kDefaultPinUsPerMiB;
  if (const char* text = std::getenv("XFERBENCH_EMU_PIN_COST_US")) {
    const std::string value(text);
    char* end = nullptr;
    base = std::strtod(value.c_str(), &end);
    bool ok = end != value.c_str() && base >= 0;
    if (ok && *end == ',') {
      const char* rest = end + 1;
      per_mib = std::strtod(rest, &end);
      ok = end != rest && per_mib >= 0;
    }
    TORCH_CHECK(
        ok && *end == '\0', "emu: XFERBENCH_EMU_PIN_COST_US='", value,
        "' is not a cost in microseconds: BASE or BASE,PER_MIB, each >= 0 (as 20,16)");
  }
  g_pin_us_per_mib.store(per_mib);
  g_pin_base_us.store(base);
}

std::pair<double, double> pin_cost_us() {
  if (g_pin_base_us.load() < 0) {
    read_pin_cost_env();
  }
  return {g_pin_base_us.load(), g_pin_us_per_mib.load()};
}

// Stands for page-locking `nbytes`: a sleep, so it shows on the host clock without taking
// a core from the other work on a small shared machine.
void pay_pin_cost(size_t nbytes) {
  const auto [base, per_mib] = pin_cost_us();
  const double us = base + per_mib * static_cast<double>(nbytes) / (1 << 20);
  if (us > 0) {
    std::this_thread::sleep_for(std::chrono::duration<double, std::micro>(us));
  }
}

size_t round_up_pow2(size_t n) {
  size_t size = 1;
  while (size < n) {
    size <<= 1;
  }
  return size;
}

size_t bucket_of(size_t size) { // log2 of a power of two, as torch's size_index
  size_t index = 0;
  while ((size_t{1} << index) < size) {
    ++index;
  }
  return index;
}

struct HostBlock {
  enum State { kInUse, kFreed, kCached }; // kFreed: waits for queued work, then kCached
  size_t size; // rounded
  State state;
};

class PinnedMemory final : public at::HostAllocator {
 public:
  c10::DataPtr allocate(size_t nbytes) override {
    const c10::Device where(c10::DeviceType::CPU);
    if (nbytes == 0) {
      return {nullptr, nullptr, &release, where};
    }
    const size_t size = round_up_pow2(nbytes);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (void* ptr = take_cached_locked(size)) {
        return {ptr, ptr, &release, where};
      }
    }
    const auto started = Clock::now();
    void* ptr = nullptr;
    {
      // One fresh block at a time, process-wide: torch pins through cudaHostAlloc, which
      // takes a global lock in the driver ("Use cudaHostAlloc for allocating pinned memory
      // (global lock in driver)", aten/src/ATen/cuda/CachingHostAllocator.cpp), so threads
      // that pin at once wait for each other and a pin's time rises with their number. The
      // wait counts in host_alloc_time, as torch's timer around cudaHostAlloc counts it.
      std::lock_guard<std::mutex> driver(g_driver_mu);
      ptr = aligned_alloc_or_throw(size, "pinned host memory");
      pay_pin_cost(size);
    }
    const auto us = std::chrono::duration_cast<std::chrono::microseconds>(
        Clock::now() - started).count();
    std::lock_guard<std::mutex> lock(mu_);
    blocks_.blocks[reinterpret_cast<uintptr_t>(ptr)] = {size, HostBlock::kInUse};
    stats_.allocations.increase(1);
    stats_.allocated_bytes.increase(size);
    stats_.active_requests.increase(1);
    stats_.active_bytes.increase(size);
    stats_.host_alloc_time.increase(us);
    stats_.bucket_allocation[bucket_of(size)] += 1;
    return {ptr, ptr, &release, where};
  }

  // A queued non_blocking copy may still read or write the block: it goes back to the
  // cache only after every stream's queued work has run (torch records an event instead).
  static void release(void* ptr) {
    if (ptr == nullptr) {
      return;
    }
    instance().set_state(ptr, HostBlock::kInUse, HostBlock::kFreed);
    after_queued_work([ptr] { instance().cache(ptr); });
  }

  c10::DeleterFnPtr raw_deleter() const override {
    return &release;
  }

  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }

  bool record_event(void* /*ptr*/, void* /*ctx*/, c10::Stream /*stream*/) override {
    return true; // blocks wait for all queued work before they are reused
  }

  // Every cached block is returned (num_host_free grows); blocks in use, or freed while
  // queued work may still touch them, stay.
  void empty_cache() override {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [size, ptrs] : cached_) {
      for (void* ptr : ptrs) {
        const auto started = Clock::now();
        blocks_.blocks.erase(reinterpret_cast<uintptr_t>(ptr));
        std::free(ptr);
        stats_.allocations.decrease(1);
        stats_.allocated_bytes.decrease(size);
        stats_.host_free_time.increase(std::chrono::duration_cast<std::chrono::microseconds>(
            Clock::now() - started).count());
      }
    }
    cached_.clear();
  }

  // As torch's: num_host_alloc and num_host_free are the blocks allocated and freed.
  at::HostStats get_stats() override {
    std::lock_guard<std::mutex> lock(mu_);
    at::HostStats stats = stats_;
    stats.num_host_alloc = stats.allocations.allocated;
    stats.num_host_free = stats.allocations.freed;
    return stats;
  }

  void reset_accumulated_stats() override {
    std::lock_guard<std::mutex> lock(mu_);
    for (Stat* stat : {&stats_.active_requests, &stats_.active_bytes, &stats_.allocations,
                       &stats_.allocated_bytes}) {
      stat->reset_accumulated();
    }
    stats_.host_alloc_time.reset_accumulated();
    stats_.host_free_time.reset_accumulated();
  }

  void reset_peak_stats() override {
    std::lock_guard<std::mutex> lock(mu_);
    for (Stat* stat : {&stats_.active_requests, &stats_.active_bytes, &stats_.allocations,
                       &stats_.allocated_bytes}) {
      stat->reset_peak();
    }
    stats_.host_alloc_time.reset_peak();
    stats_.host_free_time.reset_peak();
  }

  bool in_use(const void* ptr) {
    std::lock_guard<std::mutex> lock(mu_);
    const HostBlock* block = blocks_.find(ptr);
    return block != nullptr && block->state == HostBlock::kInUse;
  }

  static PinnedMemory& instance();

 private:
  void* take_cached_locked(size_t size) {
    auto it = cached_.find(size);
    if (it == cached_.end() || it->second.empty()) {
      return nullptr;
    }
    void* ptr = it->second.back(); // the most recently cached first, as torch
    it->second.pop_back();
    blocks_.blocks.at(reinterpret_cast<uintptr_t>(ptr)).state = HostBlock::kInUse;
    stats_.active_requests.increase(1);
    stats_.active_bytes.increase(size);
    return ptr;
  }

  void set_state(void* ptr, HostBlock::State from, HostBlock::State to) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = blocks_.blocks.find(reinterpret_cast<uintptr_t>(ptr));
    TORCH_INTERNAL_ASSERT(
        it != blocks_.blocks.end() && it->second.state == from,
        "emu: freeing pinned memory that is not in use");
    it->second.state = to;
  }

  // Runs once the work queued before the free has run (possibly on a worker thread).
  void cache(void* ptr) {
    std::lock_guard<std::mutex> lock(mu_);
    HostBlock& block = blocks_.blocks.at(reinterpret_cast<uintptr_t>(ptr));
    TORCH_INTERNAL_ASSERT(block.state == HostBlock::kFreed);
    block.state = HostBlock::kCached;
    cached_[block.size].push_back(ptr);
    stats_.active_requests.decrease(1);
    stats_.active_bytes.decrease(block.size);
  }

  std::mutex mu_;
  BlockMap<HostBlock> blocks_;
  std::map<size_t, std::vector<void*>> cached_; // rounded size -> blocks free for reuse
  at::HostStats stats_;
};

PinnedMemory& PinnedMemory::instance() {
  // Leaked: tensors freed during interpreter shutdown still call release().
  static PinnedMemory* memory = new PinnedMemory();
  return *memory;
}

// Registered at load time: pin_memory(), torch.empty(..., pin_memory=True) and the pinned
// destination of a non_blocking D2H copy allocate through it; torch.accelerator's
// empty_host_cache() reaches its empty_cache().
struct Register {
  Register() {
    at::setHostAllocator(c10::DeviceType::PrivateUse1, &PinnedMemory::instance());
  }
};
Register register_allocator;

} // namespace

c10::Allocator* host_allocator() {
  return &PinnedMemory::instance();
}

bool is_pinned_ptr(const void* ptr) {
  return PinnedMemory::instance().in_use(ptr);
}

void set_pin_cost(double base_us, double us_per_mib) {
  TORCH_CHECK(
      base_us >= 0 && us_per_mib >= 0, "emu: the pin cost must be >= 0 microseconds, got ",
      base_us, " + ", us_per_mib, " per MiB");
  pin_cost_us(); // read the environment first, so it cannot overwrite this later
  g_pin_us_per_mib.store(us_per_mib);
  g_pin_base_us.store(base_us);
}

// Read through torch's HostAllocator interface, as torch.cuda.host_memory_stats() reads
// CUDA's.
std::vector<std::pair<std::string, int64_t>> host_stats() {
  const at::HostStats s = at::getHostAllocator(c10::DeviceType::PrivateUse1)->get_stats();
  std::vector<std::pair<std::string, int64_t>> out;
  auto stat = [&](const std::string& name, const Stat& value) {
    out.emplace_back(name + ".current", value.current);
    out.emplace_back(name + ".peak", value.peak);
    out.emplace_back(name + ".allocated", value.allocated);
    out.emplace_back(name + ".freed", value.freed);
  };
  auto duration = [&](const std::string& name, const c10::CachingAllocator::DurationStat& d) {
    out.emplace_back(name + ".total", d.total);
    out.emplace_back(name + ".max", d.max);
    out.emplace_back(name + ".min", d.min);
    out.emplace_back(name + ".count", d.count);
    out.emplace_back(name + ".avg", d.count == 0 ? 0 : d.total / d.count);
  };
  stat("active_requests", s.active_requests);
  stat("active_bytes", s.active_bytes);
  stat("allocations", s.allocations);
  stat("allocated_bytes", s.allocated_bytes);
  duration("host_alloc_time", s.host_alloc_time);
  duration("host_free_time", s.host_free_time);
  out.emplace_back("num_host_alloc", s.num_host_alloc);
  out.emplace_back("num_host_free", s.num_host_free);
  return out;
}

void empty_host_cache() {
  at::getHostAllocator(c10::DeviceType::PrivateUse1)->empty_cache();
}

void reset_host_stats(bool accumulated) {
  auto* allocator = at::getHostAllocator(c10::DeviceType::PrivateUse1);
  accumulated ? allocator->reset_accumulated_stats() : allocator->reset_peak_stats();
}

std::pair<double, double> pin_cost() {
  return pin_cost_us();
}

} // namespace emu
