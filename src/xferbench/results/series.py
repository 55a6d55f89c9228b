"""What a series is: the figures of one machine, one PyTorch build and one way of measuring
them (quick budgets, a thread count, a sweep, a device index, a cap), read from each results
file's params and, for files older than those params, its sidecar.

"How it was measured" is every param a run writes to keep its figures apart (``xferbench run``
writes them from ``RunPlan.series_params``), found generically: every key of a results file's
params that does not describe the machine or the software (``DESCRIPTIVE``, and asv's
requirements) is one, so a key a later run adds makes a series of its own without a change
here. ``MODES`` is the one table that maps a mode key to its label and to whether its figures
may be cited; a key it does not know is labelled ``key=value`` and is never for citation.
Every command and the page read a series through ``SeriesKey`` and choose one with ``pick``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import XferbenchError

#: Params that say what measured, not how: asv's machine record, the labels xferbench adds
#: (torch, cuda, python) and asv's own (the branch its graphs add); a requirement asv adds
#: (numpy) is one too.
DESCRIPTIVE = frozenset({"arch", "cpu", "machine", "num_cpu", "os", "ram", "python", "torch",
                         "cuda", "version", "branch"})
#: Values that mean "off" for a key ``MODES`` does not know.
OFF = frozenset({"", "no", "none", "false", "0", "off", "default"})

Mode = tuple[tuple[str, str], ...]  # (key, value) pairs, sorted, the default ones left out


@dataclass(frozen=True)
class ModeKey:
    """One way a run can measure other than the default: when a value is the default, its
    label, and why its figures are not for citation (None: they are full measurements)."""

    key: str
    is_default: Callable[[str], bool]
    label: Callable[[str], str]
    not_for_citation: Callable[[str], str | None]


QUICK = "a quick run (shortened budgets): a smoke test, not a measurement"
SMOKE = ("a smoke sweep (one size, 1 MiB, stands in for every size): an end-to-end check, "
         "not a measurement")
CAPPED = "sampled under a budget cap (--budget --cap): fewer samples than the default spec"


def _index(value: str) -> str:
    return value.partition(":")[2]


#: The one table of modes: key -> its default, label and citability. The cap (``--budget
#: --cap``) is listed under both names it may take (``capped: yes`` or ``budget: 240``).
MODES: dict[str, ModeKey] = {m.key: m for m in (
    ModeKey("quick", lambda v: v in OFF, lambda v: "quick", lambda v: QUICK),
    ModeKey("threads", lambda v: v == "", lambda v: f"{v} thread{'s' if v != '1' else ''}",
            lambda v: None),
    ModeKey("sweep", lambda v: v in ("", "default"), lambda v: f"{v} sweep",
            lambda v: None if v == "full" else SMOKE),
    ModeKey("device", lambda v: _index(v) in ("", "0"), lambda v: f"on {v}", lambda v: None),
    ModeKey("capped", lambda v: v in OFF, lambda v: "capped", lambda v: CAPPED),
    ModeKey("budget", lambda v: v in OFF, lambda v: f"--budget {v} s", lambda v: CAPPED),
)}


def _unknown(key: str) -> ModeKey:
    return ModeKey(key, lambda v: v in OFF, lambda v: f"{key}={v}",
                   lambda v: f"measured with {key}={v}, a mode this xferbench does not know: "
                             "not a measurement it can vouch for")


def mode_key(key: str) -> ModeKey:
    """The table's entry for ``key``, or the one every unknown key gets."""
    return MODES.get(key) or _unknown(key)


def text(value: Any) -> str:
    """A param's value as the table reads it ("yes" for True)."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    return "" if value is None else str(value)


def mode_of(params: Mapping[str, Any], requirements: Iterable[str] = (),
            fallback: Mapping[str, Any] | None = None) -> Mode:
    """The mode of a results file: each of its params that is not ``DESCRIPTIVE`` nor one of
    asv's ``requirements``, at a value other than its default; ``fallback`` (from the sidecar,
    for files written before a param existed) fills the keys the params do not hold."""
    skip = DESCRIPTIVE | (set(requirements) - set(MODES))  # stock asv labels modes there
    merged = {k: text(v) for k, v in (fallback or {}).items() if k not in params}
    merged.update({str(k): text(v) for k, v in params.items() if k not in skip})
    if "capped" in params or "budget" in params:  # the cap's own params say what it was
        for key in ("capped", "budget"):
            if key not in params:
                merged.pop(key, None)
    return tuple(sorted((k, v) for k, v in merged.items()
                        if not mode_key(k).is_default(v)))


def labels(mode: Mode) -> str:
    """"quick, 2 threads"; "" for the default mode."""
    return ", ".join(mode_key(k).label(v) for k, v in mode)


def reasons(mode: Mode) -> list[str]:
    """Why figures measured in ``mode`` are not for citation (empty: they may be cited)."""
    out: list[str] = []
    for k, v in mode:
        why = mode_key(k).not_for_citation(v)
        if why and why not in out:
            out.append(why)
    return out


def mode_option(mode: Mode) -> str:
    """``mode`` as ``--mode`` takes it ("quick,threads=2"; "default")."""
    return ",".join(k if (k, v) == ("quick", "yes") else f"{k}={v}" for k, v in mode) \
        or "default"


def parse_mode(option: str) -> Mode:
    """``--mode``'s text: "default" (or "full"), else key=value pairs joined by commas, a bare
    key meaning key=yes ("quick", "threads=2,quick", "sweep=smoke"); one sentence otherwise."""
    words = [w.strip() for w in option.split(",") if w.strip()]
    if not words:
        raise XferbenchError(f"--mode {option!r} is empty: give default, or key=value pairs "
                             "as a series' label shows them (quick, threads=2, sweep=smoke)")
    if words in (["default"], ["full"]):
        return ()
    pairs: dict[str, str] = {}
    for word in words:
        key, sep, value = word.partition("=")
        if not key.strip() or (sep and not value.strip()):
            raise XferbenchError(f"--mode {option!r}: {word!r} is not key=value (as threads=2)")
        pairs[key.strip()] = value.strip() if sep else "yes"
    return tuple(sorted((k, v) for k, v in pairs.items() if not mode_key(k).is_default(v)))


@dataclass(frozen=True, order=True)
class SeriesKey:
    """One series: a machine folder, a torch build, and how it was measured."""

    machine: str
    torch: str
    mode: Mode = ()

    @property
    def is_default(self) -> bool:
        return not self.mode

    @property
    def how(self) -> str:
        """"quick, 2 threads", or "default" for the default mode."""
        return labels(self.mode) or "default"

    @property
    def label(self) -> str:
        """"torch 2.13.0+cpu on box", "torch 2.13.0+cpu on box (quick, 2 threads)"."""
        tail = f" ({labels(self.mode)})" if self.mode else ""
        return f"torch {self.torch} on {self.machine}{tail}"

    @property
    def trend(self) -> str:
        """The machine, with the mode for a series not measured the default way ("box
        (quick, 2 threads)"): what the page draws as one line across releases, and names its
        figures and anchors after (slugged: "box-quick-2-threads")."""
        return f"{self.machine} ({labels(self.mode)})" if self.mode else self.machine

    def reasons(self) -> list[str]:
        return reasons(self.mode)


def pick(keys: Iterable[SeriesKey], mode: Mode | None = None, *,
         where: str) -> tuple[SeriesKey, tuple[SeriesKey, ...]]:
    """The series to read among ``keys`` (one machine, one torch: several modes) and the
    others: the one measured in ``mode`` where given; else the default mode's; else the only
    one. A non-default mode is never chosen over the default silently: the others come back
    for the caller to name. One sentence where ``mode`` is not there or nothing decides."""
    found = sorted(set(keys))
    if not found:
        raise XferbenchError(f"{where} has no series")
    if mode is not None:
        chosen = [k for k in found if k.mode == mode]
        if not chosen:
            raise XferbenchError(
                f"{where} has no series measured as --mode {mode_option(mode)}: it has "
                f"{'; '.join(mode_option(k.mode) for k in found)}")
    else:
        chosen = [k for k in found if k.is_default] or (found if len(found) == 1 else [])
        if not chosen:
            raise XferbenchError(
                f"{where} was measured only in modes other than the default "
                f"({'; '.join(k.how for k in found)}): choose one with --mode "
                f"({' or '.join(mode_option(k.mode) for k in found)})")
    return chosen[0], tuple(k for k in found if k != chosen[0])
