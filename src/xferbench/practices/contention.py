"""The host link under contention: pinned ``non_blocking`` copies on several devices at once
(host-to-all: H2D on each; all-to-host: D2H from each), and one device copying both ways at
once (bidirectional: H2D and D2H on two streams). Each stream copy is timed beside the same
copy alone, so the loss to contention is a ratio (nvbandwidth's host_to_all and bidirectional
tests, through PyTorch).

Each stream copy runs on a stream of its own, timed by events on that stream. Together, every
copy's stream is first held by a spin, so that all copies are queued before any starts and
they run at the same time (nvbandwidth's blocking kernel). Alone, the copies run one after
another, each held the same way. Every copy is verified bit for bit.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from ..device_memory import DoesNotFit, check_fits
from ..devices import (
    Capabilities,
    Device,
    new_event,
    new_stream,
    stream_context,
    synchronize,
)
from ..errors import XferbenchError
from ..spec import DEFAULT_SPEC, MeasureSpec
from ..stream_hold import hold_stream
from ..units import size_label
from . import VerificationError
from .copies import pattern

# torch loads inside the functions that need it: `import xferbench` stays free of it.

MODES = ("host_to_all", "all_to_host", "bidirectional")
#: The spin that holds each copy's stream while the host queues every copy.
HOLD_S = 0.02
#: The benchmark parameter that names each stream copy: the device index ("0", "1", ...) for
#: host-to-all and all-to-host, "h2d" or "d2h" for bidirectional.
STREAM_PARAM = "stream"


@dataclass(frozen=True)
class ContentionCase:
    mode: str  # host_to_all | all_to_host | bidirectional
    nbytes: int
    devices: tuple[int, ...]  # bidirectional: the first alone

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise XferbenchError(f"mode {self.mode!r} is not one of {', '.join(MODES)}")
        if self.nbytes <= 0 or not self.devices:
            raise XferbenchError("a contention case needs a positive size and a device")

    @property
    def label(self) -> str:
        on = ",".join(str(d) for d in self.devices)
        return f"{self.mode} on {on} {size_label(self.nbytes)}"


def contention_skip_reason(case: ContentionCase, caps: Capabilities) -> str | None:
    """Why ``case`` yields no number with ``caps`` (the probe only), or None."""
    if caps.device in ("cpu", "mps") or not caps.pinned_memory:
        return f"contention on the host link needs pinned host memory: {caps.device} has none"
    if not caps.side_streams:
        return f"the stream copies need streams of their own: {caps.device} has one stream"
    if case.mode != "bidirectional" and len(case.devices) < 2:
        return ("host-to-all and all-to-host need two devices or more: give xferbench run "
                "--devices all (or a list)")
    return None


@dataclass
class StreamCopy:
    """One copy on a stream of its own, with the events around it."""

    name: str  # the device index, or h2d / d2h for bidirectional
    device: Device
    stream: Any
    src: Any
    dst: Any
    expected: Any
    events: tuple[Any, Any]  # start and end, on this copy's stream

    def queue(self) -> None:
        with stream_context(self.device, self.stream):
            self.events[0].record(self.stream)
            self.dst.copy_(self.src, non_blocking=True)
            self.events[1].record(self.stream)

    def seconds(self) -> float:
        return self.events[0].elapsed_time(self.events[1]) * 1e-3

    def verify(self, label: str) -> None:
        import torch

        got = self.dst.to("cpu")
        if not torch.equal(got, self.expected):
            raise VerificationError(f"{label}, stream copy {self.name}: the destination differs")


def _stream_copy(name: str, dev: Device, direction: str, nbytes: int, seed: int
                 ) -> StreamCopy:
    import torch

    host = pattern(nbytes, seed=seed)
    if direction == "h2d":
        src, dst = host.pin_memory(), torch.empty(nbytes, dtype=torch.uint8, device=dev.torch())
    else:
        src = host.to(dev.torch())
        dst = torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)
    return StreamCopy(name, dev, new_stream(dev), src, dst, host,
                (new_event(dev), new_event(dev)))


def build_copies(case: ContentionCase, device_type: str) -> list[StreamCopy]:
    devs = [Device(device_type, i) for i in case.devices]
    for dev in devs:
        why = check_fits(case.nbytes, dev, copies=2, host_copies=3)
        if why:
            raise DoesNotFit(f"{case.label}: {why}")
    if case.mode == "bidirectional":
        devs = devs[:1]
        copies = [_stream_copy("h2d", devs[0], "h2d", case.nbytes, 1),
                  _stream_copy("d2h", devs[0], "d2h", case.nbytes, 2)]
    else:
        direction = "h2d" if case.mode == "host_to_all" else "d2h"
        copies = [_stream_copy(str(d.index), d, direction, case.nbytes, i)
                  for i, d in enumerate(devs)]
    for dev in devs:
        synchronize(dev)
    return copies


def _hold(copy: StreamCopy) -> None:
    with stream_context(copy.device, copy.stream):
        hold_stream(copy.device, HOLD_S)


def _round(copies: list[StreamCopy], together: bool) -> list[float]:
    """Each copy's seconds: all held and then running at once, or one after another."""
    devices = list({copy.device: None for copy in copies})
    groups = [copies] if together else [[copy] for copy in copies]
    out: list[float] = []
    for group in groups:
        for copy in group:
            _hold(copy)
        for copy in group:
            copy.queue()
        for dev in devices:
            synchronize(dev)
        out += [copy.seconds() for copy in group]
    return out


@dataclass(frozen=True)
class ContentionResult:
    """Per stream copy, seconds per copy alone and together (samples)."""

    case: ContentionCase
    streams: tuple[str, ...]  # each stream copy's name, in the order of the samples
    alone_s: tuple[tuple[float, ...], ...]
    together_s: tuple[tuple[float, ...], ...]


def run_contention(case: ContentionCase, device_type: str,
                   spec: MeasureSpec | None = None) -> ContentionResult:
    """Measure ``case``: rounds of every stream copy alone and of all of them together,
    alternating, until the spec's budget (at least its min_samples rounds). The copies are
    verified before and after."""
    spec = spec or DEFAULT_SPEC
    copies = build_copies(case, device_type)
    _round(copies, True)  # warm up, and a wrong copy fails before any number exists
    for copy in copies:
        copy.verify(case.label)
    alone: list[list[float]] = [[] for _ in copies]
    together: list[list[float]] = [[] for _ in copies]
    started = time.perf_counter()
    while True:
        for i, s in enumerate(_round(copies, False)):
            alone[i].append(s)
        for i, s in enumerate(_round(copies, True)):
            together[i].append(s)
        taken = time.perf_counter() - started
        if taken >= spec.max_time_s or (taken >= spec.min_time_s
                                        and len(alone[0]) >= spec.min_samples):
            break
    for copy in copies:
        copy.verify(case.label)
    return ContentionResult(case, tuple(copy.name for copy in copies),
                            tuple(tuple(x) for x in alone), tuple(tuple(x) for x in together))
