"""The input side of ``practices.pipeline``: a seeded synthetic dataset, the DataLoader over it,
and the three ways a batch reaches the device (blocking, non_blocking, prefetch).

The dataset is deterministic per index: sample ``i`` is a pooled image shifted and flipped
as a function of ``i`` (the host work a decode-and-augment step stands for), a token row and a
label, so any worker process builds the same bytes and ``expected_batch`` can rebuild any batch
in the main process to check what arrived. The sampler cycles for ever, so one iterator (and
its worker processes) outlives every timed call: a timed call takes the next ``steps``
batches, and batch ``j`` of the stream holds samples ``j*batch .. (j+1)*batch - 1`` modulo the
dataset's length.
"""

from __future__ import annotations

import itertools
import multiprocessing
import warnings
from typing import Any

from ..devices import Device, current_stream, new_event, stream_context

# torch loads inside the functions that need it: `import xferbench` stays free of it.

#: One sample: a uint8 image (12 KiB) and a row of token ids.
IMAGE_SHAPE = (3, 64, 64)
SEQ_LEN = 32
VOCAB = 1024
CLASSES = 10
#: Distinct base images; a prime, so that the pool and the shift never line up.
POOL = 61
#: The loader's start method for worker processes. fork: a worker starts in milliseconds
#: (spawn would import torch again in each, seconds on a small machine). It is safe here
#: because a worker runs the dataset only, which touches no accelerator; pinning happens in
#: the main process's pin-memory thread. Where fork does not exist (Windows), spawn.
START_METHOD = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
#: Python 3.12 warns that forking a process with threads "may lead to deadlocks in the child"
#: (an accelerator runtime always has threads). The DataLoader's workers run no code that
#: holds those threads' locks, and PyTorch sets them to one intra-op thread: the warning is
#: expected and filtered where the workers start, nowhere else.
FORK_WARNING = r".*use of fork\(\) may lead to deadlocks in the child"


class SyntheticImages:
    """``n`` samples, each ``{"images": uint8 (3, 64, 64), "tokens": int64 (SEQ_LEN,),
    "labels": int}``, determined by the index and the seed alone. A plain class (the
    DataLoader needs only ``__len__`` and ``__getitem__``), so that defining it needs no
    torch."""

    def __init__(self, n: int, *, seed: int = 1234) -> None:
        import torch

        gen = torch.Generator().manual_seed(seed)
        self.n = n
        self.images = torch.randint(0, 256, (POOL, *IMAGE_SHAPE), dtype=torch.uint8,
                                    generator=gen)
        self.tokens = torch.randint(0, VOCAB, (POOL, SEQ_LEN), generator=gen)

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> dict[str, Any]:
        import torch

        if not 0 <= i < self.n:
            raise IndexError(f"sample {i} is not in a dataset of {self.n}")
        # the host work of a decode-and-augment step: a shift and a flip chosen by the index
        image = torch.roll(self.images[i % POOL], shifts=(i * 7) % IMAGE_SHAPE[2], dims=2)
        if (i // POOL) % 2:
            image = image.flip(1)
        tokens = (self.tokens[i % POOL] + i) % VOCAB
        return {"images": image, "tokens": tokens, "labels": i % CLASSES}


class Cycle:
    """The sampler: 0 .. n-1, again and again (an iterable is all a DataLoader needs)."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __iter__(self) -> Any:
        return itertools.cycle(range(self.n))


def expected_batch(dataset: Any, batch: int, j: int) -> dict[str, Any]:
    """Batch ``j`` of the stream, built in this process: what the loader must deliver."""
    from torch.utils.data import default_collate

    return default_collate([dataset[(j * batch + k) % len(dataset)] for k in range(batch)])


def open_loader(dataset: Any, batch: int, workers: int, pin_memory: bool) -> Any:
    """An iterator over ``dataset`` in batches, for ever; its worker processes start now.

    Workers are daemonic and watch their parent: they end with the iterator (dropping the last
    reference shuts them down), or with the process if that ends first. No
    ``persistent_workers``: the one iterator outlives the timed calls already, so worker start
    and pipeline fill (a per-epoch cost that a real epoch of thousands of steps amortises)
    stay out of the timed steps.
    """
    from torch.utils.data import DataLoader

    extra: dict[str, Any] = {}
    if workers:
        extra = {"multiprocessing_context": START_METHOD, "prefetch_factor": 2}
    loader = DataLoader(dataset, batch_size=batch, sampler=Cycle(len(dataset)),
                        num_workers=workers, pin_memory=pin_memory, **extra)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=FORK_WARNING, category=DeprecationWarning)
        return iter(loader)


def close_loader(iterator: Any) -> None:
    """End ``iterator``'s worker processes now, with the DataLoader's own shutdown (what its
    ``__del__`` calls): after a failure, the exception's traceback keeps the iterator alive
    until the cyclic garbage collector runs, and its workers with it (seconds later, or, in a
    benchmark process that has moved on, never)."""
    shutdown = getattr(iterator, "_shutdown_workers", None)
    if shutdown is not None:
        shutdown()


def to_device(batch: dict[str, Any], device: Device, non_blocking: bool) -> dict[str, Any]:
    """``t.to(device)`` for every tensor of the batch: a no-op on the CPU (``.to("cpu")``
    hands back the tensor itself)."""
    tdev = device.torch()
    return {k: v.to(tdev, non_blocking=non_blocking) for k, v in batch.items()}


class Direct:
    """Batches moved where they are used: the copy is queued on the compute stream, between
    the previous step's kernels and this step's (``blocking``: the host waits for it)."""

    def __init__(self, iterator: Any, device: Device, non_blocking: bool) -> None:
        self.iterator, self.device, self.non_blocking = iterator, device, non_blocking

    def next(self) -> dict[str, Any]:
        return to_device(next(self.iterator), self.device, self.non_blocking)

    def after_step(self) -> None:
        pass

    def close(self) -> None:
        close_loader(self.iterator)
        self.iterator = None


class Prefetcher:
    """Batches copied one step ahead on a side stream, while the current step computes.

    ``after_step`` (called once the step's kernels are queued) takes the next batch from the
    loader and queues its copy on ``stream``, then records an event there; ``next`` makes the
    compute stream wait for that event (the host does not wait) and hands the batch out.
    The bookkeeping that makes it safe: the device memory is allocated on the side stream and
    used on the compute stream, so each tensor is marked with ``record_stream`` (without it
    the caching allocator could give the block to the next copy while this step still reads
    it); the pinned host source is freed only once its copy is done (the caching host
    allocator records the copy's event). With ``stream`` None (no side streams: the CPU),
    the next batch is fetched one step ahead on the host, nothing else.
    """

    def __init__(self, iterator: Any, device: Device, stream: Any) -> None:
        self.iterator, self.device, self.stream = iterator, device, stream
        # the stream the step computes on, None on the CPU
        self.compute: Any = current_stream(device) if stream is not None else None
        self.pending: tuple[dict[str, Any], Any] | None = None

    def after_step(self) -> None:
        host = next(self.iterator)
        if self.stream is None:
            self.pending = (to_device(host, self.device, False), None)
            return
        with stream_context(self.device, self.stream):
            moved = to_device(host, self.device, True)
        ready = new_event(self.device, timing=False)
        ready.record(self.stream)
        self.pending = (moved, ready)

    def next(self) -> dict[str, Any]:
        if self.pending is None:  # the first batch of the stream: nothing was fetched ahead
            self.after_step()
        assert self.pending is not None
        moved, ready = self.pending
        self.pending = None
        if ready is not None:
            self.compute.wait_event(ready)
            for t in moved.values():
                t.record_stream(self.compute)
        return moved

    def close(self) -> None:
        close_loader(self.iterator)
        self.iterator = self.pending = None
