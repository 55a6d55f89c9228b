"""Peer copies: ``dst.copy_(src)`` from one device to another of the same machine.

PyTorch queues a copy between two devices on the SOURCE device's current stream, behind a
two-way barrier with the destination's current stream, so it is device work: it is timed on
device time from events on the source's stream, its calls queued behind a stream hold (as
d2d). A contiguous copy is one memcpy (a copy engine; staged through the host by the driver
where the pair has no peer access); a strided one (a transposed source) runs a copy kernel
where peer access is on and goes through contiguous temporaries where it is not.

The first copy of an ordered pair in a process enables peer access (torch calls
``cudaDeviceEnablePeerAccess`` lazily on it), so it is timed apart, once, on the host clock
from the call until both devices are done; every copy is verified bit for bit.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..device_memory import DoesNotFit, check_fits
from ..devices import Capabilities, Device, can_access_peer, synchronize
from ..errors import XferbenchError
from ..measurement import Measurement
from ..spec import DEFAULT_SPEC, MeasureSpec
from ..timing import measure
from ..units import size_label
from . import VerificationError
from .copies import pattern

# torch loads inside the functions that need it: `import xferbench` stays free of it.

#: contiguous: one memcpy (a copy engine); strided: a transposed source (a copy kernel).
PEER_LAYOUTS = ("contiguous", "strided")
#: The strided source is a (rows, nbytes / rows) byte matrix, transposed.
STRIDED_ROWS = 64
#: What one peer copy queues on the source's stream: the wait for the destination's stream,
#: the copy, and the event the destination then waits for (torch's two-way barrier).
PEER_OPS_PER_CALL = 4

#: Ordered pairs (device type, src, dst) this process has copied between: peer access is
#: enabled from their first copy on, so a "first copy" timed after one would not be one.
_COPIED: set[tuple[str, int, int]] = set()


@dataclass(frozen=True)
class PeerCase:
    src: int
    dst: int
    layout: str  # contiguous | strided
    nbytes: int

    def __post_init__(self) -> None:
        if self.layout not in PEER_LAYOUTS:
            raise XferbenchError(
                f"layout {self.layout!r} is not one of {', '.join(PEER_LAYOUTS)}")
        if self.src < 0 or self.dst < 0:
            raise XferbenchError(f"device indices {self.src}, {self.dst} must be >= 0")
        if self.nbytes <= 0:
            raise XferbenchError(f"size {self.nbytes} is not a size: give a positive byte count")

    @property
    def pair(self) -> str:
        return f"{self.src}->{self.dst}"

    @property
    def label(self) -> str:
        return f"peer {self.pair} {self.layout} {size_label(self.nbytes)}"


def peer_skip_reason(case: PeerCase, caps: Capabilities) -> str | None:
    """Why ``case`` yields no number on a machine whose device under test has ``caps``, or
    None when it runs. Depends only on the case and the probe, so asv skips at discovery."""
    if caps.device == "cpu" or caps.device == "mps":
        return f"peer copies need two accelerators: {caps.device} has no peers"
    if caps.devices < 2:
        return (f"peer copies need two devices: {caps.device} is the only "
                f"{caps.device.split(':')[0]} device here")
    if case.src == case.dst:
        return "a copy within one device is d2d: see Copy (direction d2d)"
    if max(case.src, case.dst) >= caps.devices:
        return f"device {max(case.src, case.dst)} is not here: this machine has {caps.devices}"
    if case.layout == "strided" and case.nbytes % STRIDED_ROWS:
        return f"a strided copy needs a multiple of {STRIDED_ROWS} bytes"
    return None


@dataclass
class PeerWorkload:
    """The buffers of a built case, ``run()`` that queues its copy, ``verify()`` that checks it."""

    case: PeerCase
    src: Device
    dst: Device
    run: Callable[[], None]
    expected: Any  # the host tensor the destination must equal
    result: Callable[[], Any]
    peer_access: bool
    keep: list[Any] = field(default_factory=list)

    def verify(self) -> None:
        """Synchronise both devices, then check the destination bit for bit."""
        import torch

        synchronize(self.src)
        synchronize(self.dst)
        got = self.result().to("cpu")
        if got.shape != self.expected.shape or not torch.equal(got, self.expected):
            wrong = (f"{int((got != self.expected).sum())} of {self.expected.numel()} bytes wrong"
                     if got.shape == self.expected.shape else f"got shape {tuple(got.shape)}")
            raise VerificationError(f"{self.case.label}: the destination differs ({wrong})")


def build_peer(case: PeerCase, device_type: str, caps: Capabilities) -> PeerWorkload:
    """Allocate and fill the source on ``src`` and the destination on ``dst`` (untimed)."""
    import torch

    reason = peer_skip_reason(case, caps)
    if reason:
        raise XferbenchError(f"{case.label}: {reason}")
    src, dst = Device(device_type, case.src), Device(device_type, case.dst)
    for dev in (src, dst):
        why = check_fits(case.nbytes, dev, copies=1, host_copies=2)
        if why:
            raise DoesNotFit(f"{case.label}: {why}")
    host = pattern(case.nbytes)
    if case.layout == "contiguous":
        source, expected = host.to(src.torch()), host
    else:  # a transposed view: the copy restrides, so a kernel (or temporaries) does it
        matrix = host.view(STRIDED_ROWS, -1)
        source, expected = matrix.to(src.torch()).t(), matrix.t().contiguous()
    dest = torch.empty(tuple(source.shape), dtype=source.dtype, device=dst.torch())
    synchronize(src)
    synchronize(dst)

    def run() -> None:
        dest.copy_(source)

    return PeerWorkload(case, src, dst, run, expected, lambda: dest,
                        can_access_peer(src, dst), keep=[source, dest])


def first_copy_s(work: PeerWorkload) -> float:
    """The pair's first copy in this process, verified: seconds on the host clock from the
    call until both devices are done (it enables peer access). Refused once the pair has
    copied here: it would not be the first."""
    key = (work.src.type, work.src.index or 0, work.dst.index or 0)
    if key in _COPIED:
        raise XferbenchError(
            f"{work.case.label}: the pair already copied in this process, so peer access is "
            "enabled: time the first copy before any other copy of the pair")
    _COPIED.add(key)
    t0 = time.perf_counter()
    work.run()
    synchronize(work.src)
    synchronize(work.dst)
    taken = time.perf_counter() - t0
    work.verify()
    return taken


def measure_peer(work: PeerWorkload, spec: MeasureSpec | None = None) -> Measurement:
    """Verify, measure on the source device's clock (device time: the call queues the copy on
    the source's stream) and verify again."""
    _COPIED.add((work.src.type, work.src.index or 0, work.dst.index or 0))
    work.run()
    work.verify()  # a wrong first copy fails before any number exists
    m = measure(work.run, spec or DEFAULT_SPEC, device=work.src, nbytes=work.case.nbytes,
                label=work.case.label, clock="device_s", ops_per_call=PEER_OPS_PER_CALL,
                sm_clocked=work.case.layout != "contiguous")  # a strided copy is a kernel
    work.verify()
    return m


@dataclass(frozen=True)
class PeerResult:
    """A measured peer copy: the steady-state measurement, the pair's peer access as the
    backend reports it, and its first copy (seconds) where that was timed."""

    case: PeerCase
    measurement: Measurement
    peer_access: bool
    first_copy_s: float | None = None


def run_peer(case: PeerCase, device_type: str, caps: Capabilities,
             spec: MeasureSpec | None = None, *, first: bool = False) -> PeerResult:
    """Build, measure and verify ``case``; with ``first``, time the pair's first copy too.

    Args:
        case: the pair of devices, the layout and the size.
        device_type: the devices' type ("cuda").
        caps: the capability probe of the device under test.
        spec: warm-up and sampling budgets; DEFAULT_SPEC where None.
        first: also time the pair's first copy (peer access set up, nothing warm).
    """
    work = build_peer(case, device_type, caps)
    first_s = first_copy_s(work) if first else None
    m = measure_peer(work, spec)
    return PeerResult(case, m, work.peer_access, first_s)
