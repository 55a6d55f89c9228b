"""The records a run makes, typed: what a suite class's process reports as it measures
(``ProgressLine``, one JSON line each), every combination left without a number and why
(``Outcome``), what a combination saw beside its number (``Observation``), how its figure
was read (``Diagnostics``), and each run that wrote into a results file (``RunRecord``, with
one ``AsvCall`` per asv call). Each has
``to_dict`` (what is written) and ``from_dict`` (what is read; old versions of the sidecar
are upgraded before, in ``sidecar.py``, in one place)."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any

from ..measurement import BATCH_KINDS

#: An Outcome's status: skipped (at discovery, or did not fit) or failed while measuring.
SKIPPED = "skipped"
FAILED = "failed"
#: The status of a combination that has a number, sampled under a budget cap (``--budget
#: --cap``): kept apart from the outcomes (sidecar ``capped``), never a default figure.
CAPPED = "capped"
#: A ProgressLine's status for a combination with its numbers.
MEASURED = "measured"


#: How a run record writes its times: ISO 8601, UTC, to the second.
ISO_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


def iso_now() -> str:
    return time.strftime(ISO_FORMAT, time.gmtime())


def _float_or_none(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) \
        else None


def _str_or_none(value: Any) -> str | None:
    return None if value is None else str(value)


@dataclass(frozen=True)
class Outcome:
    """One combination of one benchmark without a number, and why."""

    params: tuple[tuple[str, str], ...]  # (name, value as text), in declared order
    status: str  # SKIPPED or FAILED
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"params": dict(self.params), "status": self.status, "reason": self.reason}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Outcome:
        params = data.get("params") or {}
        return cls(tuple((str(k), str(v)) for k, v in params.items()),
                   str(data.get("status") or SKIPPED), str(data.get("reason") or ""))


@dataclass(frozen=True)
class Observation:
    """What one combination of one benchmark saw beside its number, in one line: a behaviour
    check's observation (an error's first line in the release's own words). asv stores
    numbers only; the sidecar keeps these with the run that measured them."""

    params: tuple[tuple[str, str], ...]  # (name, value as text), in declared order
    text: str

    def to_dict(self) -> dict[str, Any]:
        return {"params": dict(self.params), "text": self.text}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Observation:
        params = data.get("params") or {}
        return cls(tuple((str(k), str(v)) for k, v in params.items()), str(data.get("text", "")))


@dataclass(frozen=True)
class Diagnostics:
    """How one benchmark's figure at one combination was read: the clock, and for device
    time how its event batches went, whether every one was discarded, and the SM clock
    (MHz) each sample ran at (one per sample, in the order asv files them); the
    measurement's warnings. asv stores numbers only; the sidecar keeps these."""

    params: tuple[tuple[str, str], ...]  # (name, value as text), in declared order
    clock: str  # "device_s", "completion_s", "enqueue_s"
    device_clock: str = ""  # the batches' kind: "held", "held, batched", "host-inclusive"...
    batches: tuple[tuple[str, int], ...] = ()  # (BATCH_KINDS entry, count), counted ones
    all_discarded: bool = False  # every batch was taken on a slowed device: not citable
    warnings: tuple[str, ...] = ()
    sm_mhz: tuple[float, ...] = ()

    @property
    def not_citable(self) -> str | None:
        """Why the figure is no ordinary one, or None."""
        if not self.all_discarded:
            return None
        return ("every event batch was discarded: its samples were all taken on a slowed "
                "device")

    def text(self) -> str:
        """One line: the clock and its batches ("device time, held: 12 held, 1 redone
        batches; SM clock 1755 to 1980 MHz")."""
        clock = {"device_s": "device time", "completion_s": "completion clock",
                 "enqueue_s": "enqueue clock"}.get(self.clock, self.clock)
        out = f"{clock}, {self.device_clock}" if self.device_clock else clock
        counts = ", ".join(f"{n} {kind}" for kind, n in self.batches if n)
        if counts:
            out += f": {counts} batches"
        if self.sm_mhz:
            out += f"; SM clock {min(self.sm_mhz):.0f} to {max(self.sm_mhz):.0f} MHz"
        return out + (" (all discarded)" if self.all_discarded else "")

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"params": dict(self.params), "clock": self.clock}
        if self.device_clock:
            out.update(device_clock=self.device_clock, batches=dict(self.batches),
                       all_discarded=self.all_discarded)
        if self.warnings:
            out["warnings"] = list(self.warnings)
        if self.sm_mhz:
            out["sm_mhz"] = list(self.sm_mhz)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Diagnostics:
        params, batches = data.get("params") or {}, data.get("batches") or {}
        return cls(tuple((str(k), str(v)) for k, v in params.items()),
                   str(data.get("clock", "")), str(data.get("device_clock") or ""),
                   tuple((k, int(batches[k])) for k in BATCH_KINDS if k in batches),
                   data.get("all_discarded") is True,
                   tuple(str(w) for w in data.get("warnings") or ()),
                   tuple(float(x) for x in data.get("sm_mhz") or ()))


@dataclass(frozen=True)
class AsvCall:
    """One asv call of a run: the --bench regexes it was given and asv's exit status."""

    bench: str  # the regexes, joined by " | "
    asv_exit: int

    def to_dict(self) -> dict[str, Any]:
        return {"bench": self.bench, "asv_exit": self.asv_exit}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AsvCall:
        return cls(str(data.get("bench", "")), int(data.get("asv_exit", -1)))


@dataclass(frozen=True)
class RunRecord:
    """One ``xferbench run`` that wrote into a results file. Times are ISO 8601 UTC; a run is
    known by its ``started_at``."""

    commit: str
    machine: str
    device: str | None
    sweep: str | None
    quick: bool
    bench: str | None  # the user's --bench, None for the whole suite
    started_at: str | None
    complete: bool | None = False  # None: not recorded (never in files this version writes)
    files: tuple[AsvCall, ...] = ()
    finished_at: str | None = None  # set once the run is over, if it saved anything
    snapshot_commit: str | None = None  # set by relabel: the commit the run was filed under
    budget_s: float | None = None  # --budget, where the run had one
    #: the suite it ran: "clone", or "package 0.1.0" (the installed package's, suite.py)
    suite: str | None = None
    capped: bool = False  # --budget --cap: its combinations may be sampled under a cap

    def with_call(self, call: AsvCall) -> RunRecord:
        return replace(self, files=(*self.files, call))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "commit": self.commit, "machine": self.machine, "device": self.device,
            "sweep": self.sweep, "quick": self.quick, "bench": self.bench,
            "started_at": self.started_at, "complete": self.complete,
            "files": [f.to_dict() for f in self.files]}
        for key in ("finished_at", "snapshot_commit", "budget_s", "suite"):  # only when known
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        if self.capped:
            out["capped"] = True
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunRecord:
        complete = data.get("complete")
        return cls(
            commit=str(data.get("commit", "")), machine=str(data.get("machine", "")),
            device=_str_or_none(data.get("device")), sweep=_str_or_none(data.get("sweep")),
            quick=bool(data.get("quick")), bench=_str_or_none(data.get("bench")),
            started_at=_str_or_none(data.get("started_at")),
            complete=complete if isinstance(complete, bool) else None,
            files=tuple(AsvCall.from_dict(f) for f in data.get("files") or ()
                        if isinstance(f, dict)),
            finished_at=_str_or_none(data.get("finished_at")),
            snapshot_commit=_str_or_none(data.get("snapshot_commit")),
            budget_s=_float_or_none(data.get("budget_s")),
            suite=_str_or_none(data.get("suite")), capped=data.get("capped") is True)


@dataclass(frozen=True)
class ProgressLine:
    """One line of the progress protocol (XFERBENCH_PROGRESS): a class's process says it
    started (``event`` "start", with the interpreter and torch it runs), then reports each
    combination it measured, skipped or failed (``event`` "combination")."""

    event: str  # "start" or "combination"
    class_name: str  # "bench_copies.Copy"
    done: int
    total: int
    params: tuple[str, ...] = ()
    status: str = ""  # MEASURED, SKIPPED or FAILED
    seconds: float = 0.0
    why: str = ""  # the first line of the reason a combination has no number
    values: tuple[tuple[str, float], ...] = ()  # (track method, median)
    executable: str | None = None  # the start line's
    torch: str | None = None  # the start line's
    texts: tuple[tuple[str, str], ...] = ()  # (track method, what it saw), where it says
    #: (track method, why it has no value) for methods of a measured combination without one
    skips: tuple[tuple[str, str], ...] = ()
    capped: str = ""  # why its values were sampled under a budget cap, "" where they were not
    measuring_s: float = 0.0  # of its seconds, those spent inside measure()
    #: (track method, how its figure was read: Diagnostics.to_dict() without params)
    diagnostics: tuple[tuple[str, dict[str, Any]], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"event": self.event, "class": self.class_name,
                               "done": self.done, "total": self.total}
        if self.event == "start":
            out.update({k: v for k, v in (("executable", self.executable),
                                          ("torch", self.torch)) if v is not None})
        else:
            out.update({"params": list(self.params), "status": self.status,
                        "seconds": self.seconds, "why": self.why,
                        "values": dict(self.values), "measuring_s": self.measuring_s})
            if self.texts:
                out["texts"] = dict(self.texts)
            if self.skips:
                out["skips"] = dict(self.skips)
            if self.capped:
                out["capped"] = self.capped
            if self.diagnostics:
                out["diagnostics"] = dict(self.diagnostics)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ProgressLine:
        values = data.get("values") or {}
        return cls(
            event=str(data.get("event", "combination")),
            class_name=str(data.get("class", "?")),
            done=int(data.get("done", 0)), total=int(data.get("total", 0)),
            params=tuple(str(p) for p in data.get("params") or ()),
            status=str(data.get("status", "")), seconds=float(data.get("seconds", 0)),
            why=str(data.get("why", "")),
            values=tuple((str(k), float(v)) for k, v in sorted(values.items())),
            executable=_str_or_none(data.get("executable")),
            torch=_str_or_none(data.get("torch")),
            texts=tuple((str(k), str(v)) for k, v in sorted((data.get("texts") or {}).items())),
            skips=tuple((str(k), str(v)) for k, v in sorted((data.get("skips") or {}).items())),
            capped=str(data.get("capped") or ""),
            measuring_s=float(data.get("measuring_s") or 0.0),
            diagnostics=tuple((str(k), dict(v)) for k, v in sorted(
                (data.get("diagnostics") or {}).items()) if isinstance(v, dict)))
