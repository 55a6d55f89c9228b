"""The device layer: which device to use, what it can do, and every accelerator call.

Everything that touches ``torch.cuda`` / ``torch.accelerator`` lives here, so the rest of
the package stays device-agnostic. torch is imported inside the functions, never at module
import, and nothing here initialises an accelerator until a function that needs one runs.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .errors import XferbenchError

if TYPE_CHECKING:
    import torch

ACCELERATOR_TYPES = ("cuda", "xpu", "mps")


@dataclass(frozen=True)
class Device:
    """A resolved device: ``type`` is "cpu", "cuda" (also ROCm), "xpu" or "mps"."""

    type: str
    index: int | None = None

    @property
    def name(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    @property
    def is_accelerator(self) -> bool:
        return self.type != "cpu"

    def torch(self) -> torch.device:
        import torch

        return torch.device(self.name)

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Capabilities:
    """What a device supports for the practices measured here, each with its reason if not."""

    device: str
    pinned_memory: bool
    timing_events: bool
    side_streams: bool
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "device": self.device,
            "pinned_memory": self.pinned_memory,
            "timing_events": self.timing_events,
            "side_streams": self.side_streams,
            "reason": self.reason,
        }


def _accelerator_type() -> str | None:
    """The accelerator this PyTorch reports, or None; uses torch.accelerator where present."""
    import torch

    acc = getattr(torch, "accelerator", None)
    if acc is not None and hasattr(acc, "is_available"):
        if not acc.is_available():
            return None
        current = acc.current_accelerator()
        return None if current is None else current.type
    # torch < 2.6: probe the backends one by one.
    if torch.cuda.is_available():
        return "cuda"
    xpu = getattr(torch, "xpu", None)
    if xpu is not None and xpu.is_available():
        return "xpu"
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return "mps"
    return None


def module_of(device_type: str) -> Any:
    """``torch.cuda`` / ``torch.xpu`` / ``torch.mps``: the per-backend fallback module."""
    import torch

    return getattr(torch, device_type)


def device_count(device_type: str) -> int:
    if device_type == "cpu":
        return 1
    if device_type == "mps":
        return 1 if _accelerator_type() == "mps" else 0
    mod = module_of(device_type)
    try:
        return int(mod.device_count()) if mod.is_available() else 0
    except Exception:  # a backend compiled out raises instead of returning 0
        return 0


def _describe_present() -> str:
    acc = _accelerator_type()
    if acc is None:
        import torch

        built = torch.version.cuda and f"CUDA {torch.version.cuda}" or (
            torch.version.hip and f"ROCm {torch.version.hip}")
        if not built:
            return f"no accelerator: this PyTorch ({torch.__version__}) is a CPU build"
        return f"no accelerator: this PyTorch ({torch.__version__}, {built}) sees no device"
    n = device_count(acc)
    names = ", ".join(f"{acc}:{i}" for i in range(n)) if acc != "mps" else "mps"
    return f"this machine has {names} only"


def resolve_device(spec: str | Device = "auto") -> Device:
    """Turn "auto", "cpu", "cuda", "cuda:1", "xpu", "mps" into a Device that exists here.

    "auto" picks the accelerator PyTorch reports (CUDA, ROCm, XPU, MPS), else the CPU.
    Raises XferbenchError with one sentence naming what exists when the device is absent.
    """
    if isinstance(spec, Device):
        return spec
    text = str(spec).strip().lower()
    if not text:
        raise XferbenchError("device '' is empty: use auto, cpu, cuda, cuda:N, xpu or mps")
    if text == "auto":
        acc = _accelerator_type()
        if acc is None:
            return Device("cpu")
        return Device(acc, None if acc == "mps" else _current_index(acc))
    kind, _, index_text = text.partition(":")
    if kind == "rocm" or kind == "hip":
        kind = "cuda"  # ROCm builds of PyTorch expose HIP devices as "cuda"
    if kind not in ("cpu", *ACCELERATOR_TYPES):
        raise XferbenchError(
            f"device '{spec}' is not a device type: use auto, cpu, cuda, cuda:N, xpu or mps"
        )
    index: int | None = None
    if index_text:
        if not index_text.isdigit():
            raise XferbenchError(f"device '{spec}' has a bad index: write it as {kind}:0")
        index = int(index_text)
    if kind == "cpu":
        if index not in (None, 0):
            raise XferbenchError(f"device '{spec}' not found: the CPU is 'cpu'")
        return Device("cpu")
    if _accelerator_type() != kind or device_count(kind) == 0:
        raise XferbenchError(f"device '{spec}' not found: {_describe_present()}")
    if kind == "mps":
        if index not in (None, 0):
            raise XferbenchError(f"device '{spec}' not found: this machine has mps only")
        return Device("mps")
    n = device_count(kind)
    if index is None:
        index = _current_index(kind)
    if index >= n:
        raise XferbenchError(f"device '{spec}' not found: {_describe_present()}")
    return Device(kind, index)


def _current_index(kind: str) -> int:
    import torch

    acc = getattr(torch, "accelerator", None)
    if acc is not None and hasattr(acc, "current_device_index"):
        return int(acc.current_device_index())
    return int(module_of(kind).current_device())


def capabilities(device: str | Device) -> Capabilities:
    """Probe pinned host memory, timing events and side streams for ``device``."""
    dev = resolve_device(device)
    if not dev.is_accelerator:
        return Capabilities(
            dev.name, False, False, False,
            reason="the CPU has no pinned host memory, timing events or side streams",
        )
    pinned = events = streams = True
    reasons = []
    if dev.type == "mps":
        # MPS shares memory with the CPU; pin_memory() is a no-op there and events time
        # whole command buffers, so only what can be measured honestly is claimed.
        pinned = False
        streams = False  # torch.Stream(device="mps") is refused: one queue only
        reasons.append("mps has unified memory (pinning changes nothing) and one stream")
    return Capabilities(dev.name, pinned, events, streams, reason="; ".join(reasons))


def synchronize(device: Device) -> None:
    """Wait for all work queued on ``device``; a no-op on the CPU."""
    if not device.is_accelerator:
        return
    import torch

    acc = getattr(torch, "accelerator", None)
    if acc is not None and hasattr(acc, "synchronize"):
        acc.synchronize(device.torch())
    else:
        module_of(device.type).synchronize(device.torch())


def new_event(device: Device, *, timing: bool = True) -> Any:
    """An event on ``device`` (``torch.Event`` where it exists, else the backend's); with
    ``timing`` False it can be queried but not timed (cheaper to record)."""
    import torch

    if hasattr(torch, "Event"):
        return torch.Event(device=device.torch(), enable_timing=timing)
    return module_of(device.type).Event(enable_timing=timing)


def new_stream(device: Device) -> Any:
    """A side stream on ``device``."""
    import torch

    # torch.Stream became a context manager in later releases; before that, use the
    # backend's Stream so that stream_context() can wrap it.
    if hasattr(torch, "Stream") and hasattr(torch.Stream, "__enter__"):
        return torch.Stream(device=device.torch())
    return module_of(device.type).Stream(device=device.torch())


def stream_context(device: Device, stream: Any) -> Any:
    """``with stream_context(dev, s):`` makes ``s`` current for the block."""

    if hasattr(stream, "__enter__"):
        return stream
    return module_of(device.type).stream(stream)


def current_stream(device: Device) -> Any:
    import torch

    acc = getattr(torch, "accelerator", None)
    if acc is not None and hasattr(acc, "current_stream"):
        return acc.current_stream(device.torch())
    return module_of(device.type).current_stream(device.torch())


def autocast_dtype(device: Device) -> Any:
    """The dtype ``torch.autocast`` runs ``device``'s matmuls in: bfloat16 where the device
    supports it, else float16, else None (no autocast). Asked of torch itself: a 2x2 matmul
    under autocast must come out in the dtype asked for (an unsupported dtype makes autocast
    warn and disable itself, so the product stays float32)."""
    import torch

    amp = getattr(torch, "amp", None)
    if amp is None or not amp.is_autocast_available(device.type):
        return None
    for dtype in (torch.bfloat16, torch.float16):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # "...dtype is not supported. Disabling"
                with torch.autocast(device.type, dtype=dtype):
                    a = torch.ones(2, 2, device=device.torch())
                    if (a @ a).dtype == dtype:
                        return dtype
        except (RuntimeError, TypeError, ValueError):
            continue
    return None


@contextlib.contextmanager
def sync_debug_warnings(device: Device) -> Iterator[None]:
    """Within the block, each host-device synchronisation on ``device`` emits a UserWarning
    (``torch.cuda.set_sync_debug_mode("warn")``; CUDA and ROCm only). The mode is restored."""
    import torch

    if device.type != "cuda":
        raise XferbenchError(f"no sync debug mode on {device}: it exists for CUDA and ROCm only")
    previous = torch.cuda.get_sync_debug_mode()
    torch.cuda.set_sync_debug_mode("warn")
    try:
        yield
    finally:
        torch.cuda.set_sync_debug_mode(previous)


#: Spin rate of torch.cuda._sleep per device (cycles per second), measured once warm.
_SPIN_CYCLES_PER_S: dict[str, float] = {}
#: Longest hold: a batch that needs more is split by the caller, not held longer.
MAX_HOLD_S = 0.2
#: The SM clock runs this long under a spin before the spin is calibrated: an H200 idles at
#: about 345 MHz and runs at 1980, so a spin calibrated cold ends up to 5.7x early once warm.
WARM_SPIN_S = 0.05


def can_hold_stream(device: Device) -> bool:
    """Whether ``hold_stream`` can hold ``device``'s stream (CUDA and ROCm only)."""
    if device.type != "cuda":
        return False
    import torch

    return hasattr(torch.cuda, "_sleep")


def calibrate_spin(device: Device) -> float:
    """Cycles per second of ``torch.cuda._sleep`` on ``device``, measured after the clock has
    run under a spin for at least WARM_SPIN_S (timing events around each chunk); stored for
    ``hold_stream``. Call it again when a hold was seen to end early."""
    import torch

    with torch.cuda.device(device.index or 0):
        stream = current_stream(device)
        cycles, spent, rate = 1_000_000, 0.0, 0.0
        for _ in range(200):  # a bound: 50 ms of spin takes 2 to 20 rounds
            pairs = [(new_event(device), new_event(device)) for _ in range(8)]
            for start, end in pairs:
                start.record(stream)
                torch.cuda._sleep(cycles)
                end.record(stream)
            synchronize(device)
            times = sorted(max(s.elapsed_time(e) * 1e-3, 1e-7) for s, e in pairs)
            spent += sum(times)
            rate = cycles / times[len(times) // 2]
            if spent >= WARM_SPIN_S:
                break
            cycles = max(cycles, int(rate * 0.002))  # chunks of about 2 ms once the rate is known
    _SPIN_CYCLES_PER_S[device.name] = rate
    return rate


def hold_stream(device: Device, seconds: float) -> bool:
    """Queue a spin of about ``seconds`` (at most MAX_HOLD_S) on ``device``'s current stream,
    so that work the host queues next waits behind it and runs back to back (nvbandwidth's
    blocking kernel).

    Without it, a launch-bound call finds the device idle: its start event fires at once and
    "device time" becomes the host's launch time. The spin counts SM clock cycles; its rate is
    calibrated warm (``calibrate_spin``) the first time. Whether a hold really outlasted the
    queueing is the caller's to check (an event recorded after the spin must still be pending
    once the batch is queued; see ``timing.measure``). CUDA/ROCm only
    (``torch.cuda._sleep``); returns False where no spin exists, and the caller records that.
    """
    if seconds <= 0 or not can_hold_stream(device):
        return False
    import torch

    rate = _SPIN_CYCLES_PER_S.get(device.name) or calibrate_spin(device)
    with torch.cuda.device(device.index or 0):  # the spin goes to the current device
        torch.cuda._sleep(int(min(seconds, MAX_HOLD_S) * rate))
    return True
