// The SM clock and the spin that counts it (torch.emu._sleep, as torch.cuda._sleep).
//
// A GPU's SM clock idles several times below its clock under load; the model idles at 345 MHz and
// runs at 1980, so a spin calibrated on an idle device ends up to 5.7x early once the device is
// warm: the behaviour a stream hold must survive. The model, per device: while the device is busy
// (a kWork job running on any of its streams) the clock rises linearly from where it was towards
// kMaxMHz, reaching it from idle in the ramp time; while idle it holds its value, and after the
// cool-down it is back at kIdleMHz. It is computed from the moment of the last busy/idle transition
// and the clock at that moment, so it costs a lock per job and no thread.
//
// Test knobs: set_clock pins the clock to a value (None: the model again); set_throttle
// names throttle reasons, which clock_info reports and which, while a slowdown among them
// (thermal, power, hw_slowdown) is set, cap the clock at kThrottleShare of kMaxMHz; set_clock_model changes the ramp and the cool-down.
// set_manual_time stops the model's time: it then moves only by advance_time, so a test
// reads the ramp at moments it chooses, whatever the host's load (a spin waits for the time
// its cycles need, sleeping). The knobs apply to every device.
#include "emu.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace emu {
namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

struct DeviceClock {
  std::mutex mu;
  int busy = 0; // kWork jobs running now on the device's streams
  bool ever_busy = false;
  Clock::time_point since; // the last busy/idle transition
  double mhz_at = kIdleMHz; // the model's clock at `since`
};

DeviceClock g_clocks[kMaxDevices];
std::atomic<double> g_ramp_s{kDefaultRampS};
std::atomic<double> g_cooldown_s{kDefaultCooldownS};
std::atomic<double> g_pinned_mhz{0.0}; // > 0: set_clock pinned the clock to this
std::mutex g_throttle_mu;
std::vector<std::string> g_throttle; // guarded by g_throttle_mu
std::atomic<bool> g_throttled{false}; // a slowdown among them: the clock is capped
std::atomic<bool> g_manual{false}; // set_manual_time: the model's time moves by advance_time
std::atomic<int64_t> g_manual_ns{0}; // the manual time, steady-clock nanoseconds
// How far the manual time ran ahead of the steady clock: kept once it is let go, so that the
// model's time never runs backwards.
std::atomic<int64_t> g_ahead_ns{0};

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

// The model's time: the steady clock (plus what a manual time ran ahead), or the manual
// time a test moves.
Clock::time_point model_now() {
  const int64_t ns = g_manual.load() ? g_manual_ns.load() : steady_ns() + g_ahead_ns.load();
  return Clock::time_point(std::chrono::nanoseconds(ns));
}

// NVML's slowdown reasons, by the names xferbench's telemetry reads (its REASON_BITS):
// these cap the clock. Other names (as "sync_boost") are reported and change nothing.
bool is_slowdown(const std::string& reason) {
  return reason == "thermal" || reason == "power" || reason == "hw_slowdown";
}

double model_locked(const DeviceClock& c, Clock::time_point now) {
  if (!c.ever_busy) {
    return kIdleMHz;
  }
  const double dt = seconds(now - c.since);
  if (c.busy > 0) {
    const double ramp = g_ramp_s.load();
    if (ramp <= 0) {
      return kMaxMHz;
    }
    return std::min(kMaxMHz, c.mhz_at + (kMaxMHz - kIdleMHz) * dt / ramp);
  }
  return dt > g_cooldown_s.load() ? kIdleMHz : c.mhz_at;
}

double model_mhz(c10::DeviceIndex index) {
  DeviceClock& c = g_clocks[index];
  std::lock_guard<std::mutex> lock(c.mu);
  return model_locked(c, model_now());
}

// Spin on the calling worker until `cycles` of `index`'s clock have passed, the clock
// integrated over time (it rises while the spin runs, since the spin keeps the device
// busy). The bulk is slept in steps of at most 1 ms and the last 0.3 ms spun, so a long
// hold does not take a core from the host on a small machine; a knob changed during the
// spin applies from the next step.
void spin(c10::DeviceIndex index, int64_t cycles) {
  const double target = static_cast<double>(cycles);
  double done = 0.0;
  auto last = model_now();
  double mhz_last = sm_clock_mhz(index);
  while (done < target) {
    const auto now = model_now();
    const double mhz = sm_clock_mhz(index);
    done += 0.5 * (mhz_last + mhz) * 1e6 * seconds(now - last); // trapezoid
    last = now;
    mhz_last = mhz;
    const double left_s = (target - done) / (mhz * 1e6);
    if (g_manual.load()) { // the time moves when the test moves it: wait for it, never spin
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    } else if (left_s > 300e-6) {
      std::this_thread::sleep_for(
          std::chrono::duration<double>(std::min(left_s - 250e-6, 1e-3)));
    }
  }
}

} // namespace

void device_busy(c10::DeviceIndex index, bool busy) {
  DeviceClock& c = g_clocks[index];
  std::lock_guard<std::mutex> lock(c.mu);
  const auto now = model_now();
  if (busy) {
    if (c.busy == 0) { // idle -> busy: the ramp starts from the clock held while idle
      c.mhz_at = model_locked(c, now);
      c.since = now;
      c.ever_busy = true;
    }
    ++c.busy;
  } else {
    if (c.busy == 1) { // busy -> idle: hold the clock reached
      c.mhz_at = model_locked(c, now);
      c.since = now;
    }
    --c.busy;
  }
}

void set_clock(std::optional<double> mhz) {
  TORCH_CHECK(
      !mhz.has_value() || *mhz > 0, "emu: a pinned SM clock must be > 0 MHz, got ",
      mhz.value_or(0.0));
  g_pinned_mhz.store(mhz.value_or(0.0));
}

void set_throttle(std::vector<std::string> reasons) {
  std::lock_guard<std::mutex> lock(g_throttle_mu);
  g_throttle = std::move(reasons);
  g_throttled.store(std::any_of(g_throttle.begin(), g_throttle.end(), is_slowdown));
}

void set_clock_model(double ramp_s, double cooldown_s) {
  TORCH_CHECK(
      ramp_s >= 0 && cooldown_s >= 0, "emu: the ramp and the cool-down must be >= 0 s, got ",
      ramp_s, " and ", cooldown_s);
  g_ramp_s.store(ramp_s);
  g_cooldown_s.store(cooldown_s);
}

std::vector<std::string> throttle_reasons() {
  std::lock_guard<std::mutex> lock(g_throttle_mu);
  return g_throttle;
}

void set_manual_time(bool on) {
  if (on == g_manual.load()) {
    return;
  }
  if (on) { // from the model's now: it sees no jump
    g_manual_ns.store(steady_ns() + g_ahead_ns.load());
  } else {
    g_ahead_ns.store(std::max<int64_t>(g_ahead_ns.load(), g_manual_ns.load() - steady_ns()));
  }
  g_manual.store(on);
}

void advance_time(double seconds_) {
  TORCH_CHECK(seconds_ >= 0, "emu: time only moves forward, got ", seconds_, " s");
  TORCH_CHECK(g_manual.load(), "emu: advance_time needs set_manual_time(True) first");
  g_manual_ns.fetch_add(static_cast<int64_t>(seconds_ * 1e9));
}

bool is_busy(c10::DeviceIndex index) {
  DeviceClock& c = g_clocks[index];
  std::lock_guard<std::mutex> lock(c.mu);
  return c.busy > 0;
}

std::pair<double, double> clock_model() {
  return {g_ramp_s.load(), g_cooldown_s.load()};
}

void queue_sleep(int64_t cycles) {
  const auto index = current_device();
  enqueue(current_stream(index), [index, cycles] { spin(index, cycles); }, JobKind::kWork);
}

double sm_clock_mhz(c10::DeviceIndex index) {
  const double pinned = g_pinned_mhz.load();
  double mhz = pinned > 0 ? pinned : model_mhz(index);
  if (g_throttled.load()) {
    mhz = std::min(mhz, kThrottleShare * kMaxMHz);
  }
  return mhz;
}

} // namespace emu
