"""Every "X vs Y" comparison xferbench reports, declared once: a practice's figure against its
baseline's, each one benchmark at one full parameter combination. The headlines
(``headline.py``), the prices lint and audit quote (``prices.py``) and the claims
(``data/claims.toml``) name a comparison by its id and read its figures from here."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import XferbenchError
from ..practices import HEADLINE_NBYTES
from ..practices.pipeline import INPUT_BOUND
from ..practices.queued import QUEUED_NBYTES, SMOKE_QUEUED_MS
from ..units import size_label

H = size_label(HEADLINE_NBYTES)


@dataclass(frozen=True)
class Figure:
    """One benchmark at one full parameter combination, as ``xferbench list`` shows it."""

    name: str  # what it is, in words ("pinned")
    benchmark: str
    params: tuple[tuple[str, str], ...]

    @property
    def param_dict(self) -> dict[str, str]:
        return dict(self.params)

    def label(self) -> str:
        return f"{self.benchmark} ({', '.join(f'{k}={v}' for k, v in self.params)})"


@dataclass(frozen=True)
class ComparisonSpec:
    """``practice`` against ``baseline``: baseline / practice above 1 means the practice is
    faster (or lower, for a unit other than time)."""

    id: str
    practice: Figure
    baseline: Figure
    nbytes: int | None = None  # bytes per call, where GB/s means something
    counts: str | None = None  # a benchmark counting events per call at the same params
    counts_unit: str = ""


def _figure(name: str, benchmark: str, **params: str) -> Figure:
    return Figure(name, benchmark, tuple(params.items()))


COPY = "bench_copies.Copy.track_completion_s"
STEP = "bench_pipeline.Pipeline.track_step_s"
QUEUED = "bench_queued.QueuedCopy.track_enqueue_s"
#: The largest queue every sweep measures a copy behind (practices/queued.py), in ms.
LONGEST_QUEUE = str(SMOKE_QUEUED_MS[-1])


def _h2d(host_memory: str, sync: str, layout: str) -> dict[str, str]:
    return {"direction": "h2d", "host_memory": host_memory, "sync": sync, "layout": layout,
            "size": H}


def _behind(host_memory: str, queued: str) -> dict[str, str]:
    """An h2d non_blocking copy of QueuedCopy behind ``queued`` ms of work."""
    return {"direction": "h2d", "host_memory": host_memory, "sync": "non_blocking",
            "queued": queued, "size": size_label(QUEUED_NBYTES)}


def _queue_pair(cid: str, host_memory: str, words: str) -> ComparisonSpec:
    """The host hold of an h2d non_blocking copy from ``host_memory`` behind the longest
    queue, against the same copy from an idle stream."""
    return ComparisonSpec(cid,
                          _figure(f"{words}, behind {LONGEST_QUEUE} ms of queued work", QUEUED,
                                  **_behind(host_memory, LONGEST_QUEUE)),
                          _figure(f"{words}, from an idle stream", QUEUED,
                                  **_behind(host_memory, "0")))


def _step(size: str, host_memory: str, workers: str, move: str, precision: str = "amp",
          compile: str = "eager") -> dict[str, str]:
    return {"size": size, "host_memory": host_memory, "workers": workers, "move": move,
            "precision": precision, "compile": compile}


#: The pipeline's plain loop, where model.to(device) every step is measured
#: (benchmarks/bench_pipeline.py MODEL_TO), at the input-bound size.
PLAIN_LOOP = _step(INPUT_BOUND, "pageable", "0", "blocking")
#: A compute-bound step, where precision and compilation show.
LARGE = {"size": "large", "host_memory": "pageable", "workers": "0", "move": "blocking"}

COMPARISONS: tuple[ComparisonSpec, ...] = (
    ComparisonSpec("pinned_vs_pageable",
                   _figure("pinned", COPY, **_h2d("pinned", "blocking", "one")),
                   _figure("pageable", COPY, **_h2d("pageable", "blocking", "one")),
                   nbytes=HEADLINE_NBYTES),
    ComparisonSpec("non_blocking_many",
                   _figure("1,000 pinned tensors, non_blocking", COPY,
                           **_h2d("pinned", "non_blocking", "many")),
                   _figure("1,000 pinned tensors, blocking", COPY,
                           **_h2d("pinned", "blocking", "many")),
                   nbytes=HEADLINE_NBYTES),
    ComparisonSpec("non_blocking_many_pageable",
                   _figure("1,000 pageable tensors, non_blocking", COPY,
                           **_h2d("pageable", "non_blocking", "many")),
                   _figure("1,000 pageable tensors, blocking", COPY,
                           **_h2d("pageable", "blocking", "many")),
                   nbytes=HEADLINE_NBYTES),
    # per batch the caching host allocator is warm: each pin reuses a cached block
    ComparisonSpec("pin_then_copy",
                   _figure("t.to(dev)", COPY, **_h2d("pageable", "blocking", "one")),
                   _figure("t.pin_memory().to(dev, non_blocking=True)",
                           "bench_copies.PinThenCopy.track_completion_s",
                           cache="warm", layout="one", size=H),
                   nbytes=HEADLINE_NBYTES),
    ComparisonSpec("async_call",
                   _figure("the call returns (enqueue clock)", "bench_copies.Copy.track_enqueue_s",
                           **_h2d("pinned", "non_blocking", "one")),
                   _figure("the copy is done (completion clock)", COPY,
                           **_h2d("pinned", "non_blocking", "one"))),
    # the host hold behind queued work: pageable and strided copies are staged after it
    _queue_pair("pageable_behind_queue", "pageable", "non_blocking from pageable memory"),
    _queue_pair("strided_pinned_behind_queue", "pinned_strided",
                "non_blocking from a strided view of a pinned buffer"),
    ComparisonSpec("create_on_device",
                   _figure("torch.zeros(n, device=dev)", "bench_creation.Creation.track_ready_s",
                           factory="zeros", variant="on_device", size=H),
                   _figure("torch.zeros(n).to(dev)", "bench_creation.Creation.track_ready_s",
                           factory="zeros", variant="to", size=H)),
    ComparisonSpec("forward_device_arg",
                   _figure("made with device=x.device",
                           "bench_creation.CreatedInForward.track_forward_s",
                           mode="device_arg", seq="512"),
                   _figure("made on the host, then moved",
                           "bench_creation.CreatedInForward.track_forward_s",
                           mode="host_then_move", seq="512")),
    ComparisonSpec("sync_before_timing",
                   _figure("unsynchronised timer (8 matmuls of 4096)",
                           "bench_timer.UnsyncedTimer.track_unsynced_s", n="4096"),
                   _figure("real time (synchronised)", "bench_timer.UnsyncedTimer.track_synced_s",
                           n="4096")),
    ComparisonSpec("item_per_epoch",
                   _figure("loss summed on the device, read once per epoch",
                           "bench_sync.Loop.track_step_s", read="device_accumulate", width="256"),
                   _figure(".item() every batch", "bench_sync.Loop.track_step_s",
                           read="item_every_batch", width="256"),
                   counts="bench_sync.Loop.track_syncs_per_step", counts_unit="syncs/step"),
    # the fix teams ship for the per-batch read: the loss read a step late, from pinned memory
    ComparisonSpec("lagged_read",
                   _figure("loss copied non_blocking into pinned memory, read a step later",
                           "bench_sync.Loop.track_step_s", read="lagged", width="256"),
                   _figure(".item() every batch", "bench_sync.Loop.track_step_s",
                           read="item_every_batch", width="256"),
                   counts="bench_sync.Loop.track_syncs_per_step", counts_unit="syncs/step"),
    # an explicit synchronise every step (lint's XB109) against the loop that reads once
    ComparisonSpec("sync_per_step",
                   _figure("no synchronise in the step, loss read once per epoch",
                           "bench_sync.Loop.track_step_s", read="device_accumulate", width="256"),
                   _figure("torch.cuda.synchronize() every step", "bench_sync.Loop.track_step_s",
                           read="synchronize", width="256")),
    ComparisonSpec("model_move_in_loop",
                   _figure("model moved once", STEP, **PLAIN_LOOP),
                   _figure("model.to(device) every step",
                           "bench_pipeline.Pipeline.track_step_model_to_s", **PLAIN_LOOP)),
    ComparisonSpec("pinned_prefetch",
                   _figure("pinned + prefetch", STEP,
                           **_step(INPUT_BOUND, "pinned", "2", "prefetch")),
                   _figure("pageable + blocking", STEP,
                           **_step(INPUT_BOUND, "pageable", "2", "blocking"))),
    ComparisonSpec("pinned_prefetch_starvation",
                   _figure("pinned + prefetch", "bench_pipeline.Pipeline.track_starvation_share",
                           **_step(INPUT_BOUND, "pinned", "2", "prefetch")),
                   _figure("pageable + blocking", "bench_pipeline.Pipeline.track_starvation_share",
                           **_step(INPUT_BOUND, "pageable", "2", "blocking"))),
    ComparisonSpec("amp",
                   _figure("autocast", STEP, **LARGE, precision="amp", compile="eager"),
                   _figure("float32", STEP, **LARGE, precision="fp32", compile="eager")),
    ComparisonSpec("compile",
                   _figure("compiled", STEP, **LARGE, precision="amp", compile="compiled"),
                   _figure("eager", STEP, **LARGE, precision="amp", compile="eager")),
)


def comparison(comparison_id: str) -> ComparisonSpec:
    """The comparison declared as ``comparison_id``; XferbenchError naming those declared."""
    for c in COMPARISONS:
        if c.id == comparison_id:
            return c
    raise XferbenchError(f"{comparison_id!r} is not a comparison xferbench declares: it has "
                         f"{', '.join(c.id for c in COMPARISONS)}")
