"""``python -m xferbench`` and the ``xferbench`` command (pyproject's entry point): the command
line loads inside ``entry``, so that a Ctrl-C while it loads is an exit 130 with one line, as
a Ctrl-C at any later point is, never a traceback of the imports."""

import importlib
import sys


def entry() -> int:
    try:
        # the commands, and everything they import, load here: inside the try
        importlib.import_module("xferbench.errors").tolerant_streams()
        cli = importlib.import_module("xferbench.cli")
        return int(cli.main())
    except KeyboardInterrupt:
        print("xferbench: interrupted", file=sys.stderr)
        return 130  # ExitCode.INTERRUPTED, which loads with the rest


if __name__ == "__main__":
    sys.exit(entry())
