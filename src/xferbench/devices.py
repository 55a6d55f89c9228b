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

from .errors import XferbenchError, interrupt_kept

if TYPE_CHECKING:
    import torch

#: The accelerators torch knows by name. A PrivateUse1 backend registered with torch (an
#: out-of-tree device such as tests/emu's "emu") is one too, under the name it registered:
#: see ``privateuse1_type``.
ACCELERATOR_TYPES = ("cuda", "xpu", "mps")


@dataclass(frozen=True)
class Device:
    """A resolved device: ``type`` is "cpu", "cuda" (also ROCm), "xpu", "mps" or the name of a
    registered PrivateUse1 backend."""

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
    #: The backend emulates an accelerator on the host: every code path runs, but its times
    #: are host threads' and measure nothing (see ``is_emulated``).
    emulated: bool = False
    #: A spin can hold the device's stream (``spin_module``): CUDA, ROCm, tests/emu.
    stream_hold: bool = False
    #: Devices of this type here (peer copies need two).
    devices: int = 1

    def to_dict(self) -> dict[str, Any]:
        return {
            "device": self.device,
            "pinned_memory": self.pinned_memory,
            "timing_events": self.timing_events,
            "side_streams": self.side_streams,
            "reason": self.reason,
            "emulated": self.emulated,
            "stream_hold": self.stream_hold,
            "devices": self.devices,
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


def privateuse1_type() -> str | None:
    """The device type of the PrivateUse1 backend registered with this torch ("emu" for
    tests/emu, "npu" for Ascend's torch_npu, ...), or None when there is none.

    A backend that renamed PrivateUse1 is registered; one that kept torch's placeholder name
    counts only when torch.accelerator reports it.
    """
    import torch

    name_of = getattr(torch._C, "_get_privateuse1_backend_name", None)
    name = name_of() if name_of is not None else None
    if not name or name in ("cpu", *ACCELERATOR_TYPES):
        return None
    if name != "privateuseone" or _accelerator_type() == name:
        return name
    return None


def _device_types() -> str:
    """What a device may be called here, for error messages."""
    extra = privateuse1_type()
    if extra is None:
        return "auto, cpu, cuda, cuda:N, xpu or mps"
    return f"auto, cpu, cuda, cuda:N, xpu, mps or {extra}"


def module_of(device_type: str) -> Any:
    """``torch.cuda`` / ``torch.xpu`` / ``torch.mps`` / a PrivateUse1 backend's registered
    device module (``torch.emu``): the per-backend fallback module."""
    import torch

    return getattr(torch, device_type)


def device_count(device_type: str) -> int:
    if device_type == "cpu":
        return 1
    if device_type == "mps":
        return 1 if _accelerator_type() == "mps" else 0
    try:
        if device_type not in ACCELERATOR_TYPES:  # a PrivateUse1 backend: ask torch.accelerator
            import torch

            if _accelerator_type() != device_type:
                return 0
            return int(torch.accelerator.device_count())
        mod = module_of(device_type)
        return int(mod.device_count()) if mod.is_available() else 0
    except Exception:  # a backend compiled out raises instead of returning 0
        return 0


def is_emulated(device: str | Device) -> bool:
    """Whether ``device``'s backend says it emulates an accelerator on the host: its device
    module's ``is_emulated()`` returns True (tests/emu's does). Everything runs on such a
    device, but its times are host threads' and measure nothing."""
    dev = device if isinstance(device, Device) else resolve_device(device)
    if not dev.is_accelerator:
        return False
    try:
        says = getattr(module_of(dev.type), "is_emulated", None)
        return bool(says()) if callable(says) else False
    except Exception:  # a backend without a device module cannot say: a real one
        return False


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
    """Turn "auto", "cpu", "cuda", "cuda:1", "xpu", "mps" or a registered PrivateUse1
    backend's name ("emu", "emu:0") into a Device that exists here.

    "auto" picks the accelerator PyTorch reports (CUDA, ROCm, XPU, MPS, PrivateUse1), else
    the CPU.
    Raises XferbenchError with one sentence naming what exists when the device is absent.
    """
    if isinstance(spec, Device):
        return spec
    with interrupt_kept():  # torch's first import: a Ctrl-C in its numpy import is kept
        import torch  # noqa: F401
    text = str(spec).strip().lower()
    if not text:
        raise XferbenchError(f"device '' is empty: use {_device_types()}")
    if text == "auto":
        acc = _accelerator_type()
        if acc is None:
            return Device("cpu")
        return Device(acc, None if acc == "mps" else _current_index(acc))
    kind, _, index_text = text.partition(":")
    if kind == "rocm" or kind == "hip":
        kind = "cuda"  # ROCm builds of PyTorch expose HIP devices as "cuda"
    if kind not in ("cpu", *ACCELERATOR_TYPES) and kind != privateuse1_type():
        raise XferbenchError(f"device '{spec}' is not a device type: use {_device_types()}")
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
    emulated = is_emulated(dev)
    if emulated:
        reasons.append(f"{dev.name} is emulated on the host: every accelerator path runs, "
                       "but its times are host threads', not measurements")
    return Capabilities(dev.name, pinned, events, streams, reason="; ".join(reasons),
                        emulated=emulated, stream_hold=spin_module(dev) is not None,
                        devices=device_count(dev.type))


def can_access_peer(device: Device, peer: Device) -> bool:
    """Whether ``device`` can access ``peer``'s memory directly: the backend module's
    ``can_device_access_peer`` (``torch.cuda``'s, ``torch.xpu``'s, tests/emu's). False for a
    device and itself, two backends, the CPU, and a backend without the call."""
    if (not device.is_accelerator or device.type != peer.type or device.index is None
            or peer.index is None or device.index == peer.index):
        return False
    ask = getattr(module_of(device.type), "can_device_access_peer", None)
    return bool(ask(device.index, peer.index)) if callable(ask) else False


def spin_module(device: Device) -> Any:
    """The backend module whose ``_sleep(cycles)`` spins on ``device``'s current stream
    (``torch.cuda`` for CUDA and ROCm, ``torch.emu`` for tests/emu), or None where there is
    no spin to hold a stream with."""
    if not device.is_accelerator:
        return None
    try:
        module = module_of(device.type)
    except AttributeError:
        return None
    return module if callable(getattr(module, "_sleep", None)) else None


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


def set_current_device(device: Device) -> None:
    """Make ``device`` the current one of its backend (what "cuda" means without an index);
    a no-op on the CPU and on a device without indices (mps)."""
    if not device.is_accelerator or device.index is None:
        return
    import torch

    acc = getattr(torch, "accelerator", None)
    if acc is not None and hasattr(acc, "set_device_index"):
        acc.set_device_index(device.index)
    else:
        module_of(device.type).set_device(device.index)
