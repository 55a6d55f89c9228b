"""Units: byte sizes and their labels, GB/s, and values formatted for people.

In the base layer, beside errors.py (the one module it imports), so that the measurement
core, the practices, the results layer and the commands all format a number the same way. Stored
values are seconds and bytes; conversion happens only where text is made.
"""

from __future__ import annotations

import math

from .errors import XferbenchError

KiB = 1024
MiB = 1024**2
GiB = 1024**3

#: How bandwidth is labelled wherever it is shown.
GBPS = "GB/s (10^9 bytes/s)"
#: What a d2d copy's rate counts, said wherever one is shown: each byte once, as copied; the
#: device's memory moves it twice (read, then written).
D2D_COPIED = "d2d counts bytes copied: its memory traffic (read and write) is twice that"


def share_text(share: float | None) -> str:
    """A share of the PCIe link's theoretical rate as a cell ("85%"); above 100% flagged, for
    no copy outruns its link: the link's maximum was misread."""
    if share is None:
        return "n/a"
    return f"{share:.0%}" + (" (over the link's rate: its maximum is misread)" if share > 1
                             else "")


#: A fraction outside 0 to 1, said beside it: it is no share of anything (``cautions`` says
#: what it measured instead, where a quote carries it).
OUTSIDE_SHARE = " (outside 0 to 1: not a share)"


def fraction_text(value: float) -> str:
    """A fraction as a number ("0.191"), flagged where outside 0 to 1 (``OUTSIDE_SHARE``)."""
    return f"{value:.3g}" + (OUTSIDE_SHARE if not 0.0 <= value <= 1.0 else "")


def rate_text(gbps: float, direction: object = None) -> str:
    """``gbps`` as a table cell ("12.34"), marked "copied" for a d2d copy (D2D_COPIED)."""
    return f"{gbps:.2f}" + (" copied" if direction == "d2d" else "")


def plural(n: int, word: str) -> str:
    """"1 combination", "2 combinations": ``n`` and ``word``, with an s unless n is 1."""
    return f"{n} {word}{'' if n == 1 else 's'}"


def size_label(nbytes: int) -> str:
    """4096 -> "4KiB", 67108864 -> "64MiB" (exact powers of 1024 only; else bytes)."""
    for unit, scale in (("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if nbytes >= scale and nbytes % scale == 0:
            return f"{nbytes // scale}{unit}"
    return f"{nbytes}B"


def parse_size(text: str) -> int:
    """Inverse of size_label; also accepts plain byte counts. Raises XferbenchError."""
    t = str(text).strip().replace(" ", "")
    for unit, scale in (("GiB", GiB), ("MiB", MiB), ("KiB", KiB), ("B", 1)):
        if t.endswith(unit) and t[: -len(unit)].isdigit():
            value = int(t[: -len(unit)]) * scale
            break
    else:
        if not t.isdigit():
            raise XferbenchError(f"size {text!r} is not a size: write it as 4KiB, 64MiB or bytes")
        value = int(t)
    if value <= 0:
        raise XferbenchError(f"size {text!r} is zero: give a positive size")
    return value


def gbps(nbytes: int, seconds: float) -> float:
    """Decimal GB/s (10^9 bytes/s) of ``nbytes`` moved in ``seconds``; inf for no time."""
    return nbytes / seconds / 1e9 if seconds > 0 else math.inf


def format_seconds(seconds: float) -> str:
    """Seconds in the unit that keeps 3-4 significant digits readable."""
    if not math.isfinite(seconds):
        return "n/a"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if abs(seconds) >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def format_value(value: float | None, unit: str) -> str:
    """A stored value with its unit: seconds and bytes scaled, counts and rates as numbers."""
    if value is None or not math.isfinite(value):
        return "n/a"
    if unit == "seconds":
        return format_seconds(value)
    if unit == "bytes":
        for power, name in ((3, "GiB"), (2, "MiB"), (1, "KiB")):
            if abs(value) >= 1024**power:
                return f"{value / 1024**power:.3g} {name}"
    if unit == "fraction" and not 0.0 <= value <= 1.0:
        return f"{value:.3g} {unit}{OUTSIDE_SHARE}"
    if value == int(value) and abs(value) < 1e7:
        return f"{int(value)} {unit}"  # counts and round rates: no exponent, no ".00"
    if 1e-3 <= abs(value) < 1e7:
        digits = max(2 - math.floor(math.log10(abs(value))), 0)
        return f"{value:.{digits}f} {unit}"
    return f"{value:.3g} {unit}"


def confidence(level: float) -> str:
    """An interval's confidence for a two-sided error rate ``level``: "95%", "97.1%"."""
    return f"{100 * (1 - level):.3g}%"
