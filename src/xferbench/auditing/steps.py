"""Step boundaries: where one training step ends and the next begins.

Marks come from PyTorch's global optimizer-step hook (every optimizer's ``step()``) or from
``Audit.step()``. Once the code marks steps itself, only its marks count. With several
optimizers (a GAN's two, or one per parameter group), a step ends at the optimizer that
steps last in the first round: the round ends where one of them steps a second time.

Work after the optimizer step (``loss.item()`` logged after ``opt.step()``) belongs to the
step it follows. The step's beginning is learnt from the run: the first line of step 1 that
every later step runs too (the batch's copy, say). What runs between an optimizer step and
the next step's beginning counts with the step before; after the last step, so does what
comes before anything new (a line no step ran after its optimizer step is code after the
loop: it stays "after the last step").
"""

from __future__ import annotations

from dataclasses import dataclass

from .events import CallSite, Event, Mark

OPTIMIZER, MANUAL, NONE = "optimizer", "manual", "none"


def _round(marks: list[Mark]) -> tuple[list[int | None], bool]:
    """The optimizers of the first round, in order, and whether the round is closed."""
    seen: list[int | None] = []
    for m in marks:
        if m.optimizer in seen:
            return seen, True
        seen.append(m.optimizer)
    return seen, False


def boundaries(marks: list[Mark]) -> tuple[list[int], str]:
    """The positions where steps end, and how they were found (OPTIMIZER, MANUAL, NONE)."""
    manual = [m.position for m in marks if m.source == MANUAL]
    if manual:
        return manual, MANUAL
    if not marks:
        return [], NONE
    first_round, _closed = _round(marks)
    last = first_round[-1]
    return [m.position for m in marks if m.optimizer == last], OPTIMIZER


def should_stop(marks: list[Mark], limit: int) -> bool:
    """Whether ``limit`` steps are complete and can no longer change. One more step is
    recorded: the work after the last counted optimizer step belongs to it, and only the
    next step's beginning tells where that work ends. With optimizers, the first round must
    be closed too (a second optimizer may still end the step)."""
    ends, how = boundaries(marks)
    if how == OPTIMIZER and not _round(marks)[1]:
        return False
    return len(ends) >= limit + 1


@dataclass(frozen=True)
class Segments:
    """The events of each step, and those after the last one."""

    steps: tuple[tuple[Event, ...], ...]
    after: tuple[Event, ...]  # after the last boundary (empty when no boundary was seen)
    boundary: str  # OPTIMIZER, MANUAL or NONE: with NONE, the whole run is one step
    optimizers: int  # distinct optimizers that stepped


def segment(events: list[Event], marks: list[Mark], limit: int | None = None) -> Segments:
    """Split ``events`` into steps at the boundaries (realigned to where steps begin), at
    most ``limit`` of them: what follows the last one counted is dropped when the limit cut
    the run."""
    ends, how = boundaries(marks)
    optimizers = len({m.optimizer for m in marks if m.source == OPTIMIZER})
    if how == NONE:
        return Segments((tuple(events),), (), NONE, optimizers)
    starts = [0, *ends[:-1]]
    raw = [list(events[a:b]) for a, b in zip(starts, ends)]
    tail = list(events[ends[-1]:])
    steps, after = _realign(raw, tail)
    if limit is not None and len(steps) > limit:
        steps, after = steps[:limit], []
    return Segments(tuple(tuple(s) for s in steps), tuple(after), how, optimizers)


def _realign(raw: list[list[Event]], tail: list[Event]) -> tuple[list[list[Event]], list[Event]]:
    """Move what each step ran before its beginning to the step before (see the module).

    The beginning is the first line of step 1 that every later step runs. Where there is
    none and no line of step 1 recurs at all (step 1 ran only setup, or nothing, before its
    optimizer step), every recurring event runs after the optimizer step: each segment
    belongs to the step before it."""
    if len(raw) == 1:
        return [raw[0] + tail], []  # one step: everything after it is its own
    later = [{e.site for e in s} for s in raw[1:]]
    head = next((e.site for e in raw[0] if all(e.site in sites for sites in later)), None)
    steps: list[list[Event]] = [list(raw[0])]
    post_sites: set[CallSite] = set()
    if head is not None:
        for seg in raw[1:]:
            cut = next(i for i, e in enumerate(seg) if e.site == head)
            steps[-1] += seg[:cut]
            post_sites.update(e.site for e in seg[:cut])
            steps.append(list(seg[cut:]))
    elif not any(e.site in sites for e in raw[0] for sites in later):
        for seg in raw[1:]:
            steps[-1] += seg
            post_sites.update(e.site for e in seg)
            steps.append([])
    else:
        return raw, tail
    cut = next((i for i, e in enumerate(tail) if e.site not in post_sites), len(tail))
    steps[-1] += tail[:cut]
    return steps, tail[cut:]
