"""Changes a repeat confirms: a regression (or an improvement) between two series counts only
where a second measurement of the same two series shows it too. The significance test sees
the samples within one run; run-to-run noise (another boot, another process on a shared
machine) is not in them, and on the committed data two of three flags between releases did
not survive a second sweep.

A repeat of a series is a series in another machine folder that measured the same thing
again: the same host name, the same hardware (the GPU that measured it and its PCI bus, or
the CPU model for a CPU run), the same device, the same torch build (version and git hash)
and the same mode, as the sidecars record them. A series without a sidecar (the host is not
known) has no repeat. ``scripts/make-dataset`` files its second sweep under a machine name of
its own (``cpu-2core-vm-rerun``); on any machine, ``xferbench run --machine NAME-rerun`` makes
one. A change between series A and B is confirmed when every machine folder that holds a
repeat of both A and B marks it the same way (worse, or better) and at least one does;
otherwise it is suspected. ``compare`` and ``publish`` read it here."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..results import Result, ResultSet
from ..results.series import SeriesKey
from .comparison import BETTER, WORSE, Row, compare_results
from .stats import ON_Q

CONFIRMED = "confirmed"
SUSPECTED = "suspected"
#: The marks a repeat confirms or leaves suspected.
CHANGES = (WORSE, BETTER)

Key = tuple[str, tuple[tuple[str, Any], ...]]  # (benchmark, params)


Identities = dict[SeriesKey, tuple[Any, ...] | None]
Commits = tuple[str, str]  # A's suite commit, B's


def identities(rs: ResultSet) -> Identities:
    """Every series of ``rs`` -> what a repeat of it must share with it, read from its newest
    sidecar (one pass): the host, the hardware that measured it (the GPU and its PCI bus, or
    the CPU model), the device, the torch build and its git hash, the mode; None where the
    host is not recorded (no sidecar: nothing can be said to be measured again)."""
    newest: dict[SeriesKey, Any] = {}
    for r in rs:
        old = newest.get(r.series)
        if old is None or (r.date_ms, r.started_ms or 0) > (old.date_ms, old.started_ms or 0):
            newest[r.series] = r
    out: Identities = {}
    for key, r in newest.items():
        host = host_of(rs, r)
        out[key] = None if host is None else (
            *host, r.device, key.torch, rs.metadata_for(r).torch_git, key.mode)
    return out


def host_of(rs: ResultSet, r: Result) -> tuple[Any, ...] | None:
    """The host that measured ``r``, as its sidecar records it: its name and the hardware
    that measured (the GPU and its PCI bus, or the CPU model for a CPU run); None where the
    host is not recorded. The one rule of "the same host" for the page's charts and for
    repeats alike."""
    meta = rs.metadata_for(r)
    if not meta.hostname or meta.hostname == "unknown":
        return None
    gpu = rs.gpu_for(r)
    return (meta.hostname, (gpu, meta.pci_bus_id) if gpu else (None, meta.cpu_model))


def chart_machines(rs: ResultSet) -> dict[str, str]:
    """{machine name: the machine whose charts draw it}: names whose every run was measured
    on one host (``host_of``: a second sweep of one VM filed as ``cpu-2core-vm-rerun``) share
    the charts of the first of them by name, each drawn as a line of its own, so that
    run-to-run noise is seen beside a release's change; every other machine maps to itself.
    Machines without metadata are never joined."""
    hosts: dict[str, set[tuple[Any, ...] | None]] = {}
    for r in rs:
        hosts.setdefault(r.machine, set()).add(host_of(rs, r))
    first: dict[tuple[Any, ...], str] = {}
    out = {}
    for machine in rs.machines():
        seen = hosts.get(machine, set())
        key = next(iter(seen)) if len(seen) == 1 else None  # one host, recorded: joinable
        out[machine] = machine if key is None else first.setdefault(key, machine)
    return out


def chart_trend(charts: dict[str, str], key: SeriesKey) -> str:
    """The trend a series is drawn in: its chart's machine (``chart_machines``), with how it
    was measured where not the default (a quick run never joins a full run's chart)."""
    return SeriesKey(charts.get(key.machine, key.machine), key.torch, key.mode, key.host).trend


def repeats_of(rs: ResultSet, key: SeriesKey,
               ids: Identities | None = None) -> list[SeriesKey]:
    """The series of other machine folders that repeat ``key`` (see the module's text);
    ``ids``: ``identities(rs)``, where the caller asks for many."""
    ids = identities(rs) if ids is None else ids
    mine = ids.get(key)
    if mine is None:
        return []
    return sorted(s for s, ident in ids.items() if s.machine != key.machine and ident == mine)


@dataclass(frozen=True)
class Repeat:
    """One machine folder's comparison of the repeats of A and B, row by row."""

    machine: str
    marks: dict[Key, str]


def repeat_comparisons(rs: ResultSet, a: SeriesKey, b: SeriesKey, *, threshold: float,
                       alpha: float, ids: Identities | None = None, decide_on: str = ON_Q,
                       commits: Commits | None = None) -> list[Repeat]:
    """For every machine folder holding a repeat of both ``a`` and ``b``, its own comparison
    of the two (the test ``compare`` runs, at the same threshold and alpha, decided on the
    same q or p).

    Args:
        commits: A's and B's suite commits where the two are one series measured at two
            commits (``commits_apart``): each repeat is then read at the same two commits.
    """
    out = []
    ids = identities(rs) if ids is None else ids
    b_repeats = {s.machine: s for s in repeats_of(rs, b, ids)}
    for ra in repeats_of(rs, a, ids):
        rb = b_repeats.get(ra.machine)
        if rb is not None:
            out.append(between(rs, ra, rb, threshold=threshold, alpha=alpha,
                               decide_on=decide_on, commits=commits))
    return out


def between(rs: ResultSet, a: SeriesKey, b: SeriesKey, *, threshold: float,
            alpha: float, decide_on: str = ON_Q, commits: Commits | None = None) -> Repeat:
    """``b`` against ``a`` (one machine folder), as marks per (benchmark, params); each side
    at its own suite commit where ``commits`` names them."""
    side_a, side_b = rs.filter(series=a), rs.filter(series=b)
    if commits is not None:
        side_a, side_b = side_a.filter(commit=commits[0]), side_b.filter(commit=commits[1])
    rows, _ = compare_results(side_a.newest(), side_b.newest(),
                              threshold=threshold, alpha=alpha, decide_on=decide_on)
    return Repeat(a.machine, {(r.benchmark, r.params): r.mark for r in rows})


def commits_apart(a: ResultSet, b: ResultSet) -> Commits | None:
    """A's and B's one suite commit each, where the two sides are the same series at two
    commits (a change of the suite measured on one machine, torch and mode); None otherwise.
    A repeat of such a series holds both commits, and only reading each at its own commit
    compares the change rather than the series with itself."""
    ca, cb = a.commits(), b.commits()
    if len(ca) == len(cb) == 1 and ca != cb and set(a.series()) == set(b.series()):
        return ca[0], cb[0]
    return None


@dataclass(frozen=True)
class Confirmation:
    """Whether a repeat confirmed one change, and which machine folders did."""

    status: str  # CONFIRMED or SUSPECTED
    by: tuple[str, ...] = ()  # the repeats' machine folders that marked it the same way
    why: str = ""  # for a suspected one: no repeat, or what the repeat marked it

    @property
    def confirmed(self) -> bool:
        return self.status == CONFIRMED


def confirm(row: Row, repeats: list[Repeat]) -> Confirmation | None:
    """The confirmation of ``row`` by ``repeats``; None for a row that is no change."""
    if row.mark not in CHANGES:
        return None
    marks = [(rep.machine, rep.marks.get((row.benchmark, row.params))) for rep in repeats]
    seen = [(machine, mark) for machine, mark in marks if mark is not None]
    if not seen:
        why = "no repeat measured it" if repeats else "no repeat of both series was measured"
        return Confirmation(SUSPECTED, why=why)
    agree = tuple(machine for machine, mark in seen if mark == row.mark)
    if len(agree) == len(seen):
        return Confirmation(CONFIRMED, agree)
    others = "; ".join(f"{machine}: {mark}" for machine, mark in seen if mark != row.mark)
    return Confirmation(SUSPECTED, agree, f"the repeat marked it otherwise ({others})")


def confirmations(rows: list[Row], repeats: list[Repeat]) -> dict[int, Confirmation]:
    """index in ``rows`` -> its confirmation, for every row that is a change."""
    out = {}
    for i, row in enumerate(rows):
        c = confirm(row, repeats)
        if c is not None:
            out[i] = c
    return out


def confirm_pairs(rs: ResultSet | None, rows: list[Row], a: list[SeriesKey],
                  b: list[SeriesKey], *, threshold: float, alpha: float,
                  decide_on: str = ON_Q, commits: Commits | None = None
                  ) -> dict[int, Confirmation]:
    """Each change of ``rows`` (B's series ``b`` against A's ``a``, one per machine; or one
    each, compared across machines) confirmed or left suspected by their repeats in ``rs``
    (None: no folder to look in, every change suspected); ``commits``: as
    ``repeat_comparisons`` takes them."""
    pairs: dict[str, tuple[SeriesKey, SeriesKey]] = {}
    for ka in a:
        for kb in b:
            if ka.machine == kb.machine:
                pairs[ka.machine] = (ka, kb)
            elif len(a) == len(b) == 1:
                pairs[""] = (ka, kb)  # two files of two machines: every row is theirs
    out: dict[int, Confirmation] = {}
    ids = identities(rs) if rs is not None and pairs else {}
    for machine, (ka, kb) in pairs.items():
        repeats = (repeat_comparisons(rs, ka, kb, threshold=threshold, alpha=alpha, ids=ids,
                                      decide_on=decide_on, commits=commits)
                   if rs is not None else [])
        mine = [i for i, r in enumerate(rows) if not machine or r.machine == machine]
        found = confirmations([rows[i] for i in mine], repeats)
        out.update({mine[j]: c for j, c in found.items()})
    return out
