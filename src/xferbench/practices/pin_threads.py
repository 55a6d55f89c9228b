"""Pinning under concurrency: ``pin_memory()`` from 1, 2, 4 and 8 threads at once, each call a
fresh pinned block (the caching host allocator emptied before each round, outside the timed
region), with and without a reserved pinned segment; and the host memory one pinned byte
costs.

CUDA's caching host allocator makes a fresh block with ``cudaHostAlloc``, which takes a
global lock in the driver (aten/src/ATen/cuda/CachingHostAllocator.cpp says so), so threads
that pin at once wait for each other. ``pinned_reserve_segment_size_mb`` (a
``PYTORCH_CUDA_ALLOC_CONF`` setting, in the releases that have it) pins one segment at the
first allocation and hands small blocks out of it without the driver. The segment is made
once per process, at its first pinned allocation, so the reserved case runs in a fresh
process of its own. Each block is a power of two at least as large as the request: the host
memory a pinned byte costs is the allocator's own count (``allocated_bytes``) over the bytes
asked for.

``timing.measure`` times one caller's calls; here each of N threads times its own call, all
released together by a barrier, so the samples are the calls' own durations.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass
from typing import Any

from ..device_memory import DoesNotFit, check_fits, empty_host_cache, host_pinned_bytes
from ..devices import Capabilities, Device, capabilities, resolve_device, synchronize
from ..errors import XferbenchError
from ..units import MiB, size_label
from . import VerificationError, sweep
from .copies import pattern
from .pinning import pin_skip_reason

# torch loads inside the functions that need it: `import xferbench` stays free of it.

THREADS = (1, 2, 4, 8)
RESERVES = ("none", "reserved")
#: A batch of 1.5 MiB: its block is rounded up to 2 MiB, as most sizes are rounded up.
PIN_NBYTES = 3 * MiB // 2
#: The full sweep also pins one tensor over 2 GiB, where sizes past int32 have broken.
LARGE_PIN_NBYTES = 2048 * MiB + MiB
#: Rounds of N concurrent pins after one untimed round; quick runs take fewer.
ROUNDS = 10
QUICK_ROUNDS = 3
#: The setting, as PYTORCH_CUDA_ALLOC_CONF and the allocator's error name it.
RESERVE_SETTING = "pinned_reserve_segment_size_mb"


def pin_sizes() -> tuple[int, ...]:
    return (PIN_NBYTES, LARGE_PIN_NBYTES) if sweep() == "full" else (PIN_NBYTES,)


@dataclass(frozen=True)
class PinThreadsCase:
    threads: int
    reserve: str = "none"  # one of RESERVES
    nbytes: int = PIN_NBYTES

    def __post_init__(self) -> None:
        if self.threads not in THREADS or self.reserve not in RESERVES or self.nbytes <= 0:
            raise XferbenchError(
                f"{self.threads} threads, reserve {self.reserve!r}, {self.nbytes} bytes: give "
                f"threads in {THREADS}, a reserve in {', '.join(RESERVES)} and a positive size")

    @property
    def label(self) -> str:
        return f"pin_memory x{self.threads} threads {self.reserve} {size_label(self.nbytes)}"


def pin_threads_skip_reason(case: PinThreadsCase, caps: Capabilities) -> str | None:
    """Why ``case`` yields no number on a device with ``caps``; the probe only."""
    why = pin_skip_reason(caps)
    if why:
        return why
    if case.nbytes > PIN_NBYTES and (case.threads != 1 or case.reserve != "none"):
        return (f"the pin of {size_label(case.nbytes)} is measured once, from one thread, "
                "without a reserved segment")
    if case.reserve == "reserved" and caps.device.partition(":")[0] != "cuda":
        return (f"{RESERVE_SETTING} is a setting of CUDA's caching host allocator "
                f"(PYTORCH_CUDA_ALLOC_CONF): {caps.device} pins through its own allocator")
    return None


class NotInRelease(XferbenchError):
    """The release has no such setting: the combination gives no figure, for this reason."""


@dataclass(frozen=True)
class PinThreadsResult:
    """Each call's seconds, per round the slowest call over the fastest (1 where the calls
    did not wait for each other, about N where N calls took turns), and the pinned bytes
    the allocator holds per byte asked for (None where it keeps no count)."""

    label: str
    device: str
    call_s: tuple[float, ...]
    spread: tuple[float, ...]
    host_bytes_per_byte: float | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PinThreadsResult:
        return cls(data["label"], data["device"], tuple(data["call_s"]),
                   tuple(data["spread"]), data["host_bytes_per_byte"])


def run_pin_threads(case: PinThreadsCase, device: str | Device = "auto",
                    rounds: int = ROUNDS) -> PinThreadsResult:
    """``rounds`` rounds of ``case.threads`` concurrent ``pin_memory()`` calls, each round
    from an emptied cache, after one untimed round; every pinned copy verified. The reserved
    case runs in a fresh process whose ``PYTORCH_CUDA_ALLOC_CONF`` sets the segment
    (NotInRelease where the release refuses the setting)."""
    dev = resolve_device(device)
    why = pin_threads_skip_reason(case, capabilities(dev))
    if why:
        raise XferbenchError(f"{case.label} on {dev}: {why}")
    if rounds < 1:
        raise XferbenchError(f"{rounds} rounds: give at least one")
    why = check_fits(case.nbytes * case.threads, Device("cpu"), copies=3)
    if why:
        raise DoesNotFit(f"{case.label}: {why}")
    if case.reserve == "reserved":
        return _in_fresh_process(case, dev, rounds)
    return _measure(case, dev, rounds)


def _measure(case: PinThreadsCase, dev: Device, rounds: int) -> PinThreadsResult:
    src = pattern(case.nbytes)
    calls, spreads = _rounds(src, case.threads, rounds + 1, dev)
    n = case.threads
    return PinThreadsResult(case.label, dev.name, tuple(calls[n:]), tuple(spreads[1:]),
                            _bytes_per_byte(src, dev))


def _rounds(src: Any, threads: int, rounds: int, dev: Device) -> tuple[list[float],
                                                                        list[float]]:
    """Each call's seconds, round after round, and each round's slowest over fastest call."""
    go, done = threading.Barrier(threads + 1), threading.Barrier(threads + 1)
    took = [[0.0] * rounds for _ in range(threads)]
    pinned: list[Any] = [None] * threads
    failed: list[BaseException] = []

    def worker(k: int) -> None:
        for r in range(rounds):
            go.wait()
            try:
                started = time.perf_counter()
                pinned[k] = src.pin_memory()
                took[k][r] = time.perf_counter() - started
            except BaseException as exc:  # reported by the caller, after the barrier
                failed.append(exc)
            done.wait()

    workers = [threading.Thread(target=worker, args=(k,), daemon=True) for k in range(threads)]
    for w in workers:
        w.start()
    for _ in range(rounds):
        pinned[:] = [None] * threads  # last round's blocks back to the cache, then emptied
        synchronize(dev)
        empty_host_cache(dev)
        go.wait()
        done.wait()
        if failed:
            raise failed[0]
        _verify(pinned, src)
    for w in workers:
        w.join()
    calls = [took[k][r] for r in range(rounds) for k in range(threads)]
    spreads = [max(t[r] for t in took) / max(min(t[r] for t in took), 1e-9)
               for r in range(rounds)]
    return calls, spreads


def _verify(pinned: list[Any], src: Any) -> None:
    import torch

    for block in pinned:
        if not (block.is_pinned() and torch.equal(block, src)):
            raise VerificationError("pin_memory(): a pinned copy differs from its source")


def _bytes_per_byte(src: Any, dev: Device) -> float | None:
    """Pinned bytes the allocator holds for one fresh pin of ``src``, per byte of ``src``."""
    synchronize(dev)
    empty_host_cache(dev)
    before = host_pinned_bytes(dev)
    block = src.pin_memory()
    after = host_pinned_bytes(dev)
    del block
    if before is None or after is None:
        return None
    return (after - before) / src.numel() / src.element_size()


def _in_fresh_process(case: PinThreadsCase, dev: Device, rounds: int) -> PinThreadsResult:
    """The reserved case, measured by a child whose allocator settings reserve enough for
    every fresh block of its rounds (the segment hands out blocks, never takes them back)."""
    block_mb = max(1, 1 << max(0, (case.nbytes - 1).bit_length() - 20))
    reserve_mb = block_mb * case.threads * (rounds + 2)
    conf = os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "")
    env = {**os.environ, "PYTORCH_CUDA_ALLOC_CONF": ",".join(
        x for x in (conf, f"{RESERVE_SETTING}:{reserve_mb}") if x)}
    args = json.dumps({"threads": case.threads, "reserve": case.reserve,
                       "nbytes": case.nbytes, "device": dev.name, "rounds": rounds})
    proc = subprocess.run([sys.executable, "-c", _CHILD, args], env=env, text=True,
                          capture_output=True, check=False)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        if RESERVE_SETTING in last:
            raise NotInRelease(f"this release refuses {RESERVE_SETTING}: {last}")
        raise RuntimeError(f"the process that measured {case.label} failed: {last}")
    return PinThreadsResult.from_dict(json.loads(proc.stdout.strip().splitlines()[-1]))


_CHILD = ("import json, sys; from xferbench.practices import pin_threads as p; "
          "a = json.loads(sys.argv[1]); "
          "c = p.PinThreadsCase(a['threads'], a['reserve'], a['nbytes']); "
          "d = p.resolve_device(a['device']); "
          "print(json.dumps(p._measure(c, d, a['rounds']).to_dict()))")
