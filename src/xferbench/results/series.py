"""What a series is: the figures of one machine, one PyTorch build and one way of measuring
them (quick budgets, a thread count, a sweep, a device index, a cap), read from each results
file's params and, for files older than those params, its sidecar.

"How it was measured" is every param a run writes to keep its figures apart (``xferbench run``
writes them from ``RunPlan.series_params``), found generically: every key of a results file's
params that does not describe the machine or the software (``DESCRIPTIVE``, and asv's
requirements) is one, so a key a later run adds makes a series of its own without a change
here. ``MODES`` is the one table that maps a mode key to its label and to whether its figures
may be cited; a key it does not know is labelled ``key=value`` and is never for citation.

What measured it is a series' ``host``: the CPU model, the core count, the GPU and where the
suite came from (a clone or the installed package), each a key only where one machine folder
holds runs that differ in it (``HOSTS``), so a machine measured on one host reads as it
always did. Every command and the page read a series through ``SeriesKey``, narrow with
``Selection`` (the same options everywhere: --machine, --torch, --mode, --host) and choose
one with ``pick``.
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
    """``--mode``'s text: "default", else key=value pairs joined by commas, a bare key
    meaning key=yes ("quick", "threads=2,quick", "sweep=smoke"); one sentence otherwise
    ("full" among them: the default grid or the full sweep?)."""
    words = [w.strip() for w in option.split(",") if w.strip()]
    if not words:
        raise XferbenchError(f"--mode {option!r} is empty: give default, or key=value pairs "
                             "as a series' label shows them (quick, threads=2, sweep=smoke)")
    if words == ["default"]:
        return ()
    if "full" in words:
        raise XferbenchError(f"--mode {option!r}: 'full' could mean the default grid or the "
                             "full sweep: give default, or sweep=full")
    pairs: dict[str, str] = {}
    for word in words:
        key, sep, value = word.partition("=")
        if not key.strip() or (sep and not value.strip()):
            raise XferbenchError(f"--mode {option!r}: {word!r} is not key=value (as threads=2)")
        pairs[key.strip()] = value.strip() if sep else "yes"
    return tuple(sorted((k, v) for k, v in pairs.items() if not mode_key(k).is_default(v)))


#: What measured a series, where one machine folder holds runs that differ in it: key -> its
#: label. The order is the label's.
HOSTS: dict[str, Callable[[str], str]] = {
    "cpu": lambda v: f"CPU {v}",
    "cores": lambda v: f"{v} cores",
    "gpu": lambda v: "no GPU" if v == "none" else f"GPU {v}",
    "suite": lambda v: f"the {v}'s suite",
}
Host = Mode  # (key, value) pairs in HOSTS' order


def host_labels(host: Host) -> str:
    """"CPU AMD EPYC, 2 cores"; "" where the machine name alone says what measured it."""
    return ", ".join(HOSTS[k](v) for k, v in host)


def host_option(host: Host) -> str:
    """``host`` as ``--host`` takes it ("cpu=AMD EPYC,cores=2")."""
    return ",".join(f"{k}={v}" for k, v in host)


def parse_host(option: str) -> Host:
    """``--host``'s text: key=value pairs joined by commas, keys of ``HOSTS``."""
    pairs: dict[str, str] = {}
    for word in (w.strip() for w in option.split(",") if w.strip()):
        key, sep, value = (x.strip() for x in word.partition("="))
        if key not in HOSTS or not sep or not value:
            raise XferbenchError(f"--host {option!r}: {word!r} is not key=value with a key of "
                                 f"{', '.join(HOSTS)} (as a series' label shows them)")
        pairs[key] = value
    if not pairs:
        raise XferbenchError(f"--host {option!r} is empty: give key=value pairs as a series' "
                             "label shows them (cpu=..., cores=2, gpu=..., suite=package)")
    return tuple((k, pairs[k]) for k in HOSTS if k in pairs)


@dataclass(frozen=True, order=True)
class SeriesKey:
    """One series: a machine folder, a torch build, how it was measured and, where the
    folder holds several, what measured it."""

    machine: str
    torch: str
    mode: Mode = ()
    host: Host = ()

    @property
    def is_default(self) -> bool:
        return not self.mode

    @property
    def how(self) -> str:
        """"quick, 2 threads", or "default" for the default mode."""
        return labels(self.mode) or "default"

    @property
    def where(self) -> str:
        """The machine, with what measured it where its folder holds several ("box [CPU
        AMD EPYC, 2 cores]")."""
        return f"{self.machine} [{host_labels(self.host)}]" if self.host else self.machine

    @property
    def label(self) -> str:
        """"torch 2.13.0+cpu on box", "torch 2.13.0+cpu on box (quick, 2 threads)"."""
        tail = f" ({labels(self.mode)})" if self.mode else ""
        return f"torch {self.torch} on {self.where}{tail}"

    @property
    def trend(self) -> str:
        """The machine (and host), with the mode for a series not measured the default way
        ("box (quick, 2 threads)"): what the page draws as one line across releases, and
        names its figures and anchors after (slugged: "box-quick-2-threads")."""
        return f"{self.where} ({labels(self.mode)})" if self.mode else self.where

    def reasons(self) -> list[str]:
        return reasons(self.mode)


@dataclass(frozen=True)
class Selection:
    """Which series a command reads, as every command takes it: ``--machine``, ``--torch``
    (a release, "2.13.0", or one build), ``--mode`` and ``--host``; None: any."""

    machine: str | None = None
    torch: str | None = None
    mode: Mode | None = None
    host: Host | None = None

    def holds(self, key: SeriesKey) -> bool:
        """``key`` is one of the series this selection leaves (the torch matched as given:
        ``ResultSet.select`` resolves a release to its build first)."""
        return ((self.machine is None or key.machine == self.machine)
                and (self.torch is None or self.torch in (key.torch, key.torch.split("+")[0]))
                and (self.mode is None or key.mode == self.mode)
                and (self.host is None or set(self.host) <= set(key.host)))


def one_mode(found: list[SeriesKey], mode: Mode | None, where: str) -> list[SeriesKey]:
    """The keys of the one mode ``pick`` reads: ``mode``, else the default, else the only."""
    modes = sorted({k.mode for k in found})
    if mode is not None:
        if mode not in modes:
            raise XferbenchError(
                f"{where} has no series measured as --mode {mode_option(mode)}: it has "
                f"{'; '.join(mode_option(m) for m in modes)}")
        return [k for k in found if k.mode == mode]
    if () in modes or len(modes) == 1:
        return [k for k in found if k.mode == (modes[0] if len(modes) == 1 else ())]
    raise XferbenchError(
        f"{where} was measured only in modes other than the default "
        f"({'; '.join(labels(m) for m in modes)}): choose one with --mode "
        f"({' or '.join(mode_option(m) for m in modes)})")


def pick(keys: Iterable[SeriesKey], mode: Mode | None = None, *, where: str,
         host: Host | None = None) -> tuple[SeriesKey, tuple[SeriesKey, ...]]:
    """The series to read among ``keys`` (one machine, one torch: several modes or hosts)
    and the others: the one measured in ``mode`` where given; else the default mode's; else
    the only mode. A non-default mode is never chosen over the default silently: the others
    come back for the caller to name. Two hosts under one machine name are never chosen
    between: ``host`` names one, else one sentence, as where ``mode`` is not there."""
    found = every = sorted(set(keys))
    if not found:
        raise XferbenchError(f"{where} has no series")
    if host is not None:
        hosts = sorted({k.host for k in found})
        found = [k for k in found if set(host) <= set(k.host)]
        if not found:
            raise XferbenchError(
                f"{where} has no series measured on --host {host_option(host)}: it has "
                f"{'; '.join(host_option(h) or 'one host' for h in hosts)}")
    chosen = one_mode(found, mode, where)
    if len(chosen) > 1:
        raise XferbenchError(
            f"{where} was measured by {len(chosen)} hosts under one machine name "
            f"({'; '.join(host_labels(k.host) for k in chosen)}): choose one with --host "
            f"({' or '.join(host_option(k.host) for k in chosen)})")
    return chosen[0], tuple(k for k in every if k != chosen[0])
