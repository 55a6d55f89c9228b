"""An emulated accelerator, "emu", so CPU-only CI runs the accelerator code paths.

``load()`` builds the C++ backend if this torch has no build of these sources yet (see
``_build.py``), loads it, names PrivateUse1 "emu" and registers ``torch.emu``. After it,
``torch.accelerator.current_accelerator()`` is ``device(type='emu')`` for the rest of the
process: load it only in a process meant to run on the emulated device.

    import emu                 # tests/ on sys.path, as under pytest
    emu.load()                 # raises emu.BuildUnavailable (one line) if it cannot be built
    x = torch.ones(4, device="emu")

Test knobs: ``set_copy_delay(seconds)`` (or ``with copy_delay(seconds):``) holds every queued
copy that long before it runs; ``with held(stream):`` keeps a stream from starting any job,
so "queued, not run yet" is a fact whatever the host's load; ``with manual_time() as clock:``
stops the clock model's time, which then moves by ``clock.advance(s)``; ``pending(device)``
counts queued jobs;
``set_queue_depth(n)`` bounds each stream's launch queue (the host blocks at ``n`` pending
jobs, default 1024); ``set_pin_cost(us, us_per_mib)`` is what a fresh pinned block costs;
``set_clock(mhz)`` pins the SM clock (None: the ramp model again), ``set_throttle(reasons)``
reports throttle reasons and caps the clock, ``set_clock_model(ramp_s, cooldown_s)`` changes
the ramp; ``set_peer_access(device, peer, allowed)`` turns peer access between two devices
off or on (``torch.emu.can_device_access_peer`` answers it). README.md says what each
emulates.
Environment: XFERBENCH_EMU_DEVICES (number of devices, 1..8, default 1),
XFERBENCH_EMU_NO_PEER (ordered pairs without peer access, "0>1,1>0"; default: every pair has it),
XFERBENCH_EMU_MEMORY_BYTES (each device's total for get_memory_info, default half the RAM),
XFERBENCH_EMU_QUEUE_DEPTH (the launch queue's bound per stream, default 1024),
XFERBENCH_EMU_PIN_COST_US (a fresh pinned block's cost: "BASE" or "BASE,PER_MIB" in
microseconds, default "20,16"), XFERBENCH_EMU_HOST_STALL (every EVERY-th copy or spin queued
SECONDS late: "EVERY,SECONDS", default off), XFERBENCH_EMU_CLOCK_READ_S (what each
clock_info() read costs, default 0), XFERBENCH_EMU_CACHE (where builds are kept, default
<venv>/xferbench-emu).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

from ._build import BuildUnavailable, build, built_library

__all__ = ["DEVICE_TYPE", "BuildUnavailable", "build", "built_library", "clock_model",
           "ManualTime", "copy_delay", "held", "is_loaded", "load", "manual_time", "pending",
           "pin_cost",
           "queue_depth",
           "set_clock", "set_clock_model", "set_copy_delay", "set_memory_total",
           "set_peer_access", "set_pin_cost", "set_queue_depth", "set_throttle"]

#: The device type the backend registers as: torch.device("emu"), "emu:0".
DEVICE_TYPE = "emu"

MAX_DEVICES = 8  # emu.h's kMaxDevices
DEFAULT_QUEUE_DEPTH = 1024  # emu.h's kDefaultQueueDepth
IDLE_SM_CLOCK_MHZ = 345.0  # emu.h's kIdleMHz: the model's clock at idle
MAX_SM_CLOCK_MHZ = 1980.0  # emu.h's kMaxMHz: the model's clock under load

_loaded = False


def is_loaded() -> bool:
    return _loaded


def _check_environment() -> None:
    text = os.environ.get("XFERBENCH_EMU_DEVICES")
    if text is not None and not (text.isdigit() and 1 <= int(text) <= MAX_DEVICES):
        raise ValueError(
            f"XFERBENCH_EMU_DEVICES='{text}' is not a device count: use 1 to {MAX_DEVICES}")
    text = os.environ.get("XFERBENCH_EMU_NO_PEER")
    if text is not None and not _is_pair_list(text):
        raise ValueError(
            f"XFERBENCH_EMU_NO_PEER='{text}' is not a list of device pairs: write ordered "
            f"pairs of two devices 0 to {MAX_DEVICES - 1} as SRC>DST, comma-separated (0>1,1>0)")
    text = os.environ.get("XFERBENCH_EMU_MEMORY_BYTES")
    if text is not None and not (text.isdigit() and int(text) > 0):
        raise ValueError(
            f"XFERBENCH_EMU_MEMORY_BYTES='{text}' is not a positive number of bytes")
    text = os.environ.get("XFERBENCH_EMU_QUEUE_DEPTH")
    if text is not None and not (text.isdigit() and int(text) >= 1):
        raise ValueError(
            f"XFERBENCH_EMU_QUEUE_DEPTH='{text}' is not a queue depth: use a whole number of "
            f"operations >= 1 (default {DEFAULT_QUEUE_DEPTH})")
    text = os.environ.get("XFERBENCH_EMU_PIN_COST_US")
    if text is not None and not _is_pin_cost(text):
        raise ValueError(
            f"XFERBENCH_EMU_PIN_COST_US='{text}' is not a cost in microseconds: BASE or "
            "BASE,PER_MIB, each >= 0 (as 20,16)")
    text = os.environ.get("XFERBENCH_EMU_HOST_STALL")
    every, _, seconds = (text or "").partition(",")
    if text is not None and not (every.isdigit() and int(every) >= 1 and _is_pin_cost(seconds)):
        raise ValueError(
            f"XFERBENCH_EMU_HOST_STALL='{text}' is not a stall: EVERY,SECONDS (as 3,0.005)")
    text = os.environ.get("XFERBENCH_EMU_CLOCK_READ_S")
    if text is not None and not (_is_pin_cost(text) and "," not in text):
        raise ValueError(
            f"XFERBENCH_EMU_CLOCK_READ_S='{text}' is not a delay: seconds >= 0 (as 0.005)")


def _is_pair_list(text: str) -> bool:
    """"0>1,1>0": ordered pairs of two distinct device indices below MAX_DEVICES."""
    for pair in text.split(","):
        src, sep, dst = pair.strip().partition(">")
        if not (sep and src.isdigit() and dst.isdigit()):
            return False
        if int(src) == int(dst) or max(int(src), int(dst)) >= MAX_DEVICES:
            return False
    return True


def _is_pin_cost(text: str) -> bool:
    parts = text.split(",")
    try:
        values = [float(part) for part in parts]
    except ValueError:
        return False
    return len(parts) <= 2 and all(value >= 0 and value != float("inf") for value in values)


def load() -> None:
    """Build if needed, load the backend and register "emu"; a no-op the second time."""
    global _loaded
    if _loaded:
        return
    _check_environment()
    library = build()
    import torch
    import torch.utils

    if _loaded:  # importing torch ran the autoload (autoload/sitecustomize.py), which loaded it
        return

    from . import _device_module

    torch.ops.load_library(str(library))
    torch.utils.rename_privateuse1_backend(DEVICE_TYPE)
    torch._register_device_module(DEVICE_TYPE, _device_module)
    # tensor.emu(), tensor.is_emu, module.emu(), ... like their cuda counterparts.
    torch.utils.generate_methods_for_privateuse1_backend()
    _loaded = True


def set_copy_delay(seconds: float) -> None:
    """Hold every copy queued from now on ``seconds`` before it runs (0: no hold)."""
    import torch

    torch.ops.xferbench_emu.set_copy_delay(float(seconds))


@contextlib.contextmanager
def copy_delay(seconds: float) -> Iterator[None]:
    """``with copy_delay(0.005):`` copies queued in the block are held that long."""
    import torch

    previous = torch.ops.xferbench_emu.copy_delay()
    set_copy_delay(seconds)
    try:
        yield
    finally:
        set_copy_delay(previous)


def set_host_stall(every: int, seconds: float) -> None:
    """Every ``every``-th work job queued from now on (a copy, a spin) sleeps ``seconds`` on
    the calling thread first: a host descheduled on a loaded machine, which queues the calls
    behind a stream hold late (0: off; default XFERBENCH_EMU_HOST_STALL, else off)."""
    import torch

    torch.ops.xferbench_emu.set_host_stall(int(every), float(seconds))


def set_clock_read_delay(seconds: float) -> None:
    """Each ``torch.emu.clock_info()`` from now on takes ``seconds`` more, as NVML's calls can
    in a microVM (default XFERBENCH_EMU_CLOCK_READ_S, else 0)."""
    from . import _device_module

    _device_module.set_clock_read_delay(seconds)


def pending(device: int = 0) -> int:
    """Jobs queued on emu:``device``'s streams that have not finished."""
    import torch

    return int(torch.ops.xferbench_emu.pending(device))


def set_memory_total(nbytes: int) -> None:
    """Each device's total memory (get_memory_info, and where allocation fails)."""
    import torch

    torch.ops.xferbench_emu.set_memory_total(int(nbytes))


def set_queue_depth(depth: int) -> None:
    """Each stream's launch queue holds at most ``depth`` jobs (queued or running); a call that
    would queue one more blocks the host until one finishes, as CUDA's launch queue does."""
    import torch

    torch.ops.xferbench_emu.set_queue_depth(int(depth))


def queue_depth() -> int:
    """The launch queue's bound per stream (XFERBENCH_EMU_QUEUE_DEPTH, default 1024)."""
    import torch

    return int(torch.ops.xferbench_emu.queue_depth())


def set_pin_cost(base_us: float, us_per_mib: float = 16.0) -> None:
    """What a fresh pinned host block (a cache miss) costs the host: ``base_us`` plus
    ``us_per_mib`` per MiB of its rounded size, in microseconds (page-locking's stand-in)."""
    import torch

    torch.ops.xferbench_emu.set_pin_cost(float(base_us), float(us_per_mib))


def pin_cost() -> tuple[float, float]:
    """(base_us, us_per_mib): see set_pin_cost; default (20.0, 16.0)."""
    import torch

    base, per_mib = torch.ops.xferbench_emu.pin_cost()
    return float(base), float(per_mib)


def set_clock(mhz: float | None) -> None:
    """Pin every device's SM clock to ``mhz``; None gives the clock back to its model (idle at
    345 MHz, ramping to 1980 under load)."""
    import torch

    torch.ops.xferbench_emu.set_clock(None if mhz is None else float(mhz))


def set_throttle(reasons: list[str]) -> None:
    """Throttle reasons every device reports in ``torch.emu.clock_info()`` (empty: none). While
    "thermal", "power" or "hw_slowdown" is among them the SM clock is capped at half its
    maximum; other names are reported only."""
    import torch

    torch.ops.xferbench_emu.set_throttle([str(reason) for reason in reasons])


def set_clock_model(ramp_s: float = 0.02, cooldown_s: float = 0.05) -> None:
    """The clock's ramp (idle to maximum under continuous load) and cool-down (idle this long:
    back at the idle clock), in seconds; the defaults are the model's."""
    import torch

    torch.ops.xferbench_emu.set_clock_model(float(ramp_s), float(cooldown_s))


def clock_model() -> tuple[float, float]:
    """(ramp_s, cooldown_s): see set_clock_model."""
    import torch

    ramp, cooldown = torch.ops.xferbench_emu.clock_model()
    return float(ramp), float(cooldown)


@contextlib.contextmanager
def held(stream: Any = None) -> Iterator[None]:
    """Within the block ``stream`` (default: the current stream of the current device) starts
    no job: what is queued on it stays queued, counted pending, and an event recorded on it
    does not complete, whatever the host's load. Let go at the block's end. A synchronise of
    that stream inside the block would wait for ever."""
    import torch

    if stream is None:
        stream = torch.accelerator.current_stream()
    index = stream.device_index if stream.device_index is not None else 0
    torch.ops.xferbench_emu.hold_stream(index, stream.stream_id, True)
    try:
        yield
    finally:
        torch.ops.xferbench_emu.hold_stream(index, stream.stream_id, False)


@contextlib.contextmanager
def manual_time() -> Iterator[ManualTime]:
    """Within the block the clock model's time stands still and moves only by
    ``advance(seconds)``: a test reads the ramp at the moments it chooses, whatever the host's
    load. A spin waits (sleeping) for the time its cycles need."""
    import torch

    torch.ops.xferbench_emu.set_manual_time(True)
    try:
        yield ManualTime()
    finally:
        torch.ops.xferbench_emu.set_manual_time(False)


class ManualTime:
    """The model's time while ``manual_time`` holds it."""

    def advance(self, seconds: float) -> None:
        import torch

        torch.ops.xferbench_emu.advance_time(float(seconds))

    @staticmethod
    def busy(device: int = 0) -> bool:
        """Whether a job that keeps the device busy (a copy, a spin) runs on it now."""
        import torch

        return bool(torch.ops.xferbench_emu.is_busy(device))

    def wait_busy(self, device: int = 0, timeout_s: float = 60.0) -> None:
        """Until the device's worker has started its job (a condition, not a time: a
        loaded host only makes it later); raises TimeoutError after ``timeout_s``."""
        import time

        give_up = time.monotonic() + timeout_s
        while not self.busy(device):
            if time.monotonic() > give_up:
                raise TimeoutError(f"emu:{device} did not start its job in {timeout_s} s")
            time.sleep(0.001)


def set_peer_access(device: int, peer: int, allowed: bool) -> None:
    """Whether emu:``device`` can access emu:``peer``'s memory directly, for copies queued from
    now on (``torch.emu.can_device_access_peer(device, peer)`` answers it). A copy without peer
    access still lands, staged through host memory; one with it pays, the first time for
    the pair, for enabling it (2 ms on the host, as torch enables peer access lazily)."""
    import torch

    torch.ops.xferbench_emu.set_peer_access(int(device), int(peer), bool(allowed))
