"""The one exception type xferbench raises for bad input or a missing device."""


class XferbenchError(Exception):
    """Bad input or an absent resource, told in one sentence; the CLI exits 2 on it."""
