// aten kernels for PrivateUse1: tensor creation, views and resizing (so aliasing is real),
// the copy kernel (which decides what is queued and what waits), and the CPU fallback for
// every other op. Plus a small `torch.ops.xferbench_emu` library of test knobs.
#include "emu.h"

#include <ATen/EmptyTensor.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/CPUFallback.h>
#include <ATen/TensorIterator.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/set_native.h>
#include <ATen/ops/unfold_native.h>
#include <ATen/ops/view_native.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <bitset>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

namespace emu {
namespace {

constexpr c10::DispatchKeySet kEmuKeys(c10::DispatchKey::PrivateUse1);

bool is_emu(const at::Tensor& t) {
  return t.device().type() == c10::DeviceType::PrivateUse1;
}

at::Tensor empty_memory_format(
    c10::IntArrayRef size,
    std::optional<c10::ScalarType> dtype,
    std::optional<c10::Layout> layout,
    std::optional<c10::Device> device,
    std::optional<bool> pin_memory,
    std::optional<c10::MemoryFormat> memory_format) {
  TORCH_CHECK(
      c10::layout_or_default(layout) == c10::Layout::Strided,
      "emu: only strided tensors are supported");
  TORCH_CHECK(
      !c10::pinned_memory_or_default(pin_memory),
      "emu: only CPU tensors can be pinned, not emu ones");
  // The allocator tags memory with the current device: make it the requested one.
  c10::DeviceGuard guard(c10::device_or_default(device));
  return at::detail::empty_generic(
      size, device_allocator(), kEmuKeys, c10::dtype_or_default(dtype), memory_format);
}

at::Tensor empty_strided(
    c10::IntArrayRef size,
    c10::IntArrayRef stride,
    std::optional<c10::ScalarType> dtype,
    std::optional<c10::Layout> layout,
    std::optional<c10::Device> device,
    std::optional<bool> pin_memory) {
  TORCH_CHECK(
      c10::layout_or_default(layout) == c10::Layout::Strided,
      "emu: only strided tensors are supported");
  TORCH_CHECK(
      !c10::pinned_memory_or_default(pin_memory),
      "emu: only CPU tensors can be pinned, not emu ones");
  c10::DeviceGuard guard(c10::device_or_default(device));
  return at::detail::empty_strided_generic(
      size, stride, device_allocator(), kEmuKeys, c10::dtype_or_default(dtype));
}

const at::Tensor& resize_(
    const at::Tensor& self,
    c10::IntArrayRef size,
    std::optional<c10::MemoryFormat> memory_format) {
  c10::DeviceGuard guard(self.device());
  const size_t needed = at::detail::computeStorageNbytesContiguous(
      size, self.dtype().itemsize(), self.storage_offset());
  if (self.storage() && needed > self.storage().nbytes()) {
    // Growing copies the old block into a new one on this thread; queued copies into the
    // old block must have landed first.
    synchronize_device(self.device().index());
  }
  // The CPU's resize is device-agnostic apart from its allocator, which it takes from the
  // storage: ours.
  at::native::resize_impl_cpu_(self.unsafeGetTensorImpl(), size, /*stride=*/std::nullopt);
  if (memory_format.has_value()) {
    TORCH_CHECK(
        *memory_format != c10::MemoryFormat::Preserve,
        "emu: unsupported memory format ", *memory_format);
    self.unsafeGetTensorImpl()->empty_tensor_restride(*memory_format);
  }
  return self;
}

// A CPU tensor over the same bytes as `t` (emu memory is host memory). Only used after
// the stream that could be writing those bytes has been synchronised.
at::Tensor host_view(const at::Tensor& t) {
  if (!is_emu(t)) {
    return t;
  }
  auto view = at::from_blob(
      t.data_ptr(), t.sizes(), t.strides(),
      at::TensorOptions().dtype(t.dtype()).device(c10::DeviceType::CPU));
  view._set_conj(t.is_conj());
  view._set_neg(t.is_neg());
  return view;
}

// Same dtype, shape and dense layout on both sides: the copy is one block of bytes, which
// is what a DMA engine (and our worker) can move without running a kernel.
bool same_bytes_layout(const at::Tensor& src, const at::Tensor& dst) {
  return src.dtype() == dst.dtype() && src.sizes().equals(dst.sizes()) &&
      src.strides().equals(dst.strides()) && src.is_non_overlapping_and_dense() &&
      !src.is_conj() && !dst.is_conj() && !src.is_neg() && !dst.is_neg();
}

// A memcpy queued on `stream`: the caller returns at once, the bytes land when the worker
// gets there. The delay knob (set_copy_delay) is read now, so a test's setting applies to
// the copies it queued.
void queue_copy(const c10::Stream& stream, void* dst, const void* src, size_t nbytes) {
  const double delay_s = copy_delay();
  enqueue(stream, [dst, src, nbytes, delay_s] {
    if (delay_s > 0) {
      std::this_thread::sleep_for(std::chrono::duration<double>(delay_s));
    }
    std::memmove(dst, src, nbytes);
  });
}

// From now on, what is queued on `waiter` runs only once `stream` has reached the work queued
// on it so far (an event recorded on one, waited for on the other).
void barrier(const c10::Stream& stream, const c10::Stream& waiter) {
  void* event = nullptr;
  record_event(&event, stream, /*timing=*/false);
  block_on_event(event, waiter);
  destroy_event(event); // the queued record and wait hold their own references
}

// dst.copy_(src) between two emu devices, as torch's CUDA copy makes it: on the SOURCE
// device's current stream, behind a two-way barrier (the source stream first waits for the
// work queued on the destination's current stream; the destination's stream then waits for
// the copy), so the caller returns at once. With peer access the bytes move in one memmove;
// without it, through a host buffer, as the driver stages such a copy through host memory.
// The first copy of an ordered pair with peer access enables it, on the calling thread
// (kPeerEnableS), as torch does lazily on that copy.
void queue_peer_copy(const at::Tensor& src, const at::Tensor& dst) {
  const auto from = src.device().index();
  const auto to = dst.device().index();
  const bool peer = can_access_peer(from, to);
  if (peer && first_peer_copy(from, to)) {
    std::this_thread::sleep_for(std::chrono::duration<double>(kPeerEnableS));
  }
  const auto src_stream = current_stream(from);
  const auto dst_stream = current_stream(to);
  barrier(dst_stream, src_stream);
  const double delay_s = copy_delay();
  void* d = dst.data_ptr();
  const void* s = src.data_ptr();
  const size_t n = dst.nbytes();
  enqueue(src_stream, [d, s, n, delay_s, peer] {
    if (delay_s > 0) {
      std::this_thread::sleep_for(std::chrono::duration<double>(delay_s));
    }
    if (peer) {
      std::memmove(d, s, n);
      return;
    }
    std::vector<unsigned char> staged(n);
    std::memcpy(staged.data(), s, n);
    std::memcpy(d, staged.data(), n);
  });
  barrier(src_stream, dst_stream);
}

// The host side of a copy made on the calling thread, serially: torch's intra-op threads
// on a small loaded host can stall a 1 MiB copy for tens of milliseconds at a barrier, which
// would read as the copy's own cost. A same-layout copy is one memmove; a restriding copy of
// one dtype walks the elements (TensorIterator's serial loop); a converting one is torch's.
void host_copy(const at::Tensor& src, const at::Tensor& dst) {
  const at::Tensor to = host_view(dst);
  const at::Tensor from = host_view(src);
  if (same_bytes_layout(src, dst)) {
    std::memmove(to.data_ptr(), from.data_ptr(), dst.nbytes());
    return;
  }
  if (src.dtype() != dst.dtype() || src.is_conj() != dst.is_conj() ||
      src.is_neg() != dst.is_neg()) {
    to.copy_(from);
    return;
  }
  const at::Tensor expanded = from.expand_as(to);
  auto iter = at::TensorIteratorConfig()
                  .add_output(to)
                  .add_const_input(expanded)
                  .resize_outputs(false)
                  .check_all_same_dtype(false)
                  .build();
  const int64_t item = static_cast<int64_t>(dst.element_size());
  iter.serial_for_each(
      [item](char** data, const int64_t* strides, int64_t size0, int64_t size1) {
        for (int64_t j = 0; j < size1; ++j) {
          char* out = data[0] + j * strides[2];
          const char* in = data[1] + j * strides[3];
          for (int64_t i = 0; i < size0; ++i) {
            std::memcpy(out + i * strides[0], in + i * strides[1], item);
          }
        }
      },
      {0, iter.numel()});
}

// aten::_copy_from(self=src, dst, non_blocking): every copy that touches an emu tensor.
// The rules are CUDA's:
//  * emu -> emu on one device: queued on the current stream (cudaMemcpyAsync D2D), whatever
//    non_blocking says;
//  * emu -> emu across devices, same layout: queued on the source device's current stream
//    behind a two-way barrier (queue_peer_copy), whatever non_blocking says;
//  * host <-> emu with non_blocking=True, the host side pinned and laid out as the device
//    side: queued on the current stream; the caller returns before the bytes land;
//  * any other host <-> emu copy: the caller waits for the current stream to drain, then
//    copies, so it returns with the data in place. So does CUDA for pageable memory: "For
//    transfers from pageable host memory to device memory, a stream sync is performed before
//    the copy is initiated", and a copy from the device to pageable memory "returns only once
//    the copy has completed" (CUDA Runtime API, "API synchronization behavior"), non_blocking
//    or not. A host side that is not laid out as the device side (a strided view of a pinned
//    buffer, x[::2]) is staged the same way: torch copies it through a contiguous temporary
//    (copy_requires_temporaries in aten/src/ATen/native/cuda/Copy.cu), which is pageable, so
//    the copy from that temporary waits for the stream. A blocking copy waits
//    (memcpy_and_sync).
// Copies that convert dtype, broadcast or restride run on this thread after the wait.
at::Tensor copy_from(const at::Tensor& src, const at::Tensor& dst, bool non_blocking) {
  TORCH_CHECK(
      (is_emu(src) || src.is_cpu()) && (is_emu(dst) || dst.is_cpu()),
      "emu: cannot copy from ", src.device(), " to ", dst.device());
  if (dst.numel() == 0) {
    return dst;
  }
  if (is_emu(src) && is_emu(dst)) {
    if (src.device() == dst.device()) {
      const auto stream = current_stream(dst.device().index());
      if (same_bytes_layout(src, dst)) {
        queue_copy(stream, dst.data_ptr(), src.data_ptr(), dst.nbytes());
        return dst;
      }
      synchronize_stream(stream);
    } else {
      if (same_bytes_layout(src, dst)) {
        queue_peer_copy(src, dst);
        return dst;
      }
      // Restriding across devices: both current streams drain, then the copy runs here
      // (CUDA queues a copy kernel; kernels are never queued here).
      synchronize_stream(current_stream(src.device().index()));
      synchronize_stream(current_stream(dst.device().index()));
    }
    host_view(dst).copy_(host_view(src));
    return dst;
  }
  const at::Tensor& host = is_emu(src) ? dst : src;
  const at::Tensor& device = is_emu(src) ? src : dst;
  const auto stream = current_stream(device.device().index());
  if (non_blocking && is_pinned_ptr(host.data_ptr()) && same_bytes_layout(src, dst)) {
    queue_copy(stream, dst.data_ptr(), src.data_ptr(), dst.nbytes());
    return dst;
  }
  synchronize_stream(stream); // a staged copy: the work queued before it runs first
  host_copy(src, dst);
  return dst;
}

// tensor.record_stream(s): frees already wait for every stream's queued work.
void record_stream(at::Tensor& /*self*/, c10::Stream /*stream*/) {}

at::Tensor copy_from_and_resize(const at::Tensor& src, const at::Tensor& dst) {
  if (!dst.sizes().equals(src.sizes())) {
    dst.resize_(src.sizes());
  }
  return copy_from(src, dst, /*non_blocking=*/false);
}

// Every other op runs on the CPU through torch's boxed fallback, which copies emu
// arguments to the host, runs the CPU kernel and copies results back. It runs at once, on
// the calling thread: so first the current stream of every emu device among the
// arguments drains, as a CUDA kernel queued on that stream would wait for the work before
// it. Work on other streams is not waited for, as in CUDA (order it with wait_stream).
// Documented simplification: kernels are never queued, so only copies overlap the host.
// A CUDA kernel refuses tensors on another device, as torch's generated device check and
// TensorIterator do: "Expected all tensors to be on the same device, ...". The CPU fallback
// would run such an op happily (it moves every argument to the host), hiding the bug the
// error reports; so the check is made here, in torch's wording. Allowed, as on CUDA: a 0-dim
// CPU tensor (TensorIterator takes it as a scalar) and CPU indices in a Tensor?[] list
// (advanced indexing); tensor_split and ctc_loss take their CPU index/length tensors.
void check_same_device(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const auto& name = op.schema().name();
  if (name == "aten::tensor_split" || name == "aten::_ctc_loss" || name == "aten::ctc_loss") {
    return;
  }
  const auto& args = op.schema().arguments();
  const auto nargs = args.size();
  std::optional<c10::Device> common;
  auto check = [&](const at::Tensor& t, const std::string& arg) {
    if (!t.defined() || (t.device().is_cpu() && t.dim() == 0)) {
      return;
    }
    if (!common.has_value()) {
      common = t.device();
    } else if (*common != t.device()) {
      TORCH_CHECK(false, "Expected all tensors to be on the same device, but got ", arg,
                  " is on ", t.device(), ", different from other tensors on ", *common,
                  " (when checking argument in method wrapper_PrivateUse1_",
                  name.substr(name.find("::") + 2), ")");
    }
  };
  size_t i = 0;
  for (const c10::IValue& arg : torch::jit::last(*stack, nargs)) {
    const std::string& arg_name = args[i++].name();
    if (arg.isTensor()) {
      check(arg.toTensor(), arg_name);
    } else if (arg.isTensorList()) {
      for (const at::Tensor& t : arg.toTensorList().vec()) {
        check(t, arg_name);
      }
    }
  }
}

void fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  check_same_device(op, stack);
  std::bitset<kMaxDevices> devices;
  auto mark = [&](const at::Tensor& t) {
    if (t.defined() && is_emu(t)) {
      devices.set(t.device().index());
    }
  };
  const auto nargs = op.schema().arguments().size();
  for (const c10::IValue& arg : torch::jit::last(*stack, nargs)) {
    if (arg.isTensor()) {
      mark(arg.toTensor());
    } else if (arg.isTensorList()) {
      for (const at::Tensor& t : arg.toTensorList().vec()) {
        mark(t);
      }
    } else if (arg.isOptionalTensorList()) {
      for (const std::optional<at::Tensor>& t : arg.toOptionalTensorList().vec()) {
        if (t.has_value()) {
          mark(*t);
        }
      }
    }
  }
  for (int i = 0; i < kMaxDevices; ++i) {
    if (devices.test(i)) {
      synchronize_stream(current_stream(static_cast<c10::DeviceIndex>(i)));
    }
  }
  at::native::cpu_fallback(op, stack);
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("empty.memory_format", TORCH_FN(empty_memory_format));
  m.impl("empty_strided", TORCH_FN(empty_strided));
  m.impl("resize_", TORCH_FN(resize_));
  m.impl("_copy_from", TORCH_FN(copy_from));
  m.impl("_copy_from_and_resize", TORCH_FN(copy_from_and_resize));
  m.impl("record_stream", TORCH_FN(record_stream));
  // Views must alias the same memory; the fallback would return copies. The CPU's
  // implementations only rearrange sizes, strides and storage, so they serve as they are.
  m.impl("view", TORCH_FN(at::native::view));
  m.impl("as_strided", TORCH_FN(at::native::as_strided_tensorimpl));
  m.impl("_reshape_alias", TORCH_FN(at::native::_reshape_alias));
  m.impl("unfold", TORCH_FN(at::native::unfold));
  m.impl("set_.source_Storage", TORCH_FN(at::native::set_));
  m.impl("set_.source_Storage_storage_offset", TORCH_FN(at::native::set_storage_cpu_));
  m.impl("set_.source_Tensor", TORCH_FN(at::native::set_tensor_));
}

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&fallback>());
}

// torch.autocast("emu") is accepted and changes nothing: kernels run on the CPU at the
// dtypes they are given. Without this every op inside the block would fail to dispatch.
TORCH_LIBRARY_IMPL(_, AutocastPrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFallthrough());
}

// Test knobs and what torch.emu needs beyond torch's interfaces, reached from Python as
// torch.ops.xferbench_emu.<name>. All registered here: torch/library.h is the costliest
// header to compile, so only this file includes it.
TORCH_LIBRARY(xferbench_emu, m) {
  m.def("device_count() -> int", [] { return static_cast<int64_t>(device_count()); });
  m.def("set_copy_delay(float seconds) -> ()", [](double seconds) { set_copy_delay(seconds); });
  m.def("copy_delay() -> float", [] { return copy_delay(); });
  m.def("set_host_stall(int every, float seconds) -> ()", [](int64_t every, double seconds) {
    set_host_stall(every, seconds);
  });
  m.def("pending(int device) -> int", [](int64_t device) {
    return pending_jobs(static_cast<c10::DeviceIndex>(device));
  });
  m.def("set_memory_total(int nbytes) -> ()", [](int64_t nbytes) { set_memory_total(nbytes); });
  m.def("set_queue_depth(int depth) -> ()", [](int64_t depth) { set_queue_depth(depth); });
  m.def("queue_depth() -> int", [] { return queue_depth(); });
  // the SM clock (clock.cpp)
  m.def("_sleep(int cycles) -> ()", [](int64_t cycles) { queue_sleep(cycles); });
  m.def("clock_info(int device) -> (float, float, str[])", [](int64_t device) {
    const double mhz = sm_clock_mhz(resolve_index(static_cast<c10::DeviceIndex>(device)));
    return std::make_tuple(mhz, kMaxMHz, throttle_reasons());
  });
  m.def("set_clock(float? mhz) -> ()", [](std::optional<double> mhz) { set_clock(mhz); });
  m.def("set_throttle(str[] reasons) -> ()", [](std::vector<std::string> reasons) {
    set_throttle(std::move(reasons));
  });
  m.def("set_clock_model(float ramp_s, float cooldown_s) -> ()", [](double ramp, double cool) {
    set_clock_model(ramp, cool);
  });
  m.def("clock_model() -> (float, float)", [] {
    const auto [ramp, cooldown] = clock_model();
    return std::make_tuple(ramp, cooldown);
  });
  m.def("set_manual_time(bool on) -> ()", [](bool on) { set_manual_time(on); });
  m.def("hold_stream(int device, int stream, bool held) -> ()",
        [](int64_t device, int64_t stream, bool held) {
          hold_stream(static_cast<c10::DeviceIndex>(device), static_cast<c10::StreamId>(stream),
                      held);
        });
  m.def("advance_time(float seconds) -> ()", [](double s) { advance_time(s); });
  m.def("is_busy(int device) -> bool", [](int64_t device) {
    return is_busy(resolve_index(static_cast<c10::DeviceIndex>(device)));
  });
  // peer access between devices (device.cpp)
  m.def("can_access_peer(int device, int peer) -> bool", [](int64_t device, int64_t peer) {
    return can_access_peer(static_cast<c10::DeviceIndex>(device),
                           static_cast<c10::DeviceIndex>(peer));
  });
  m.def("set_peer_access(int device, int peer, bool allowed) -> ()",
        [](int64_t device, int64_t peer, bool allowed) {
          set_peer_access(static_cast<c10::DeviceIndex>(device),
                          static_cast<c10::DeviceIndex>(peer), allowed);
        });
  // pinned host memory (pinned.cpp)
  m.def("host_stats() -> Dict(str, int)", [] {
    c10::Dict<std::string, int64_t> out;
    for (const auto& [name, value] : host_stats()) {
      out.insert(name, value);
    }
    return out;
  });
  m.def("empty_host_cache() -> ()", [] { empty_host_cache(); });
  m.def("reset_host_stats(bool accumulated) -> ()", [](bool accumulated) {
    reset_host_stats(accumulated);
  });
  m.def("set_pin_cost(float base_us, float us_per_mib) -> ()", [](double base, double per_mib) {
    set_pin_cost(base, per_mib);
  });
  m.def("pin_cost() -> (float, float)", [] {
    const auto [base, per_mib] = pin_cost();
    return std::make_tuple(base, per_mib);
  });
}

} // namespace emu
