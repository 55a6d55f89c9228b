"""Loads the emulated accelerator into every Python process that starts with this folder on
PYTHONPATH and XFERBENCH_EMU=1: the way an emulated run reaches processes it does not
start itself (asv's benchmark processes, the CLI in a subprocess, pytest's children).

    XFERBENCH_EMU=1 PYTHONPATH=tests/emu/autoload .venv/bin/xferbench env

asv drops PYTHONPATH from the processes it starts unless ASV_PYTHONPATH names the path
(asv/environment.py); for ``xferbench run`` set ASV_PYTHONPATH=<abs path>/tests/emu/autoload
as well. Without XFERBENCH_EMU=1 it does nothing (and imports nothing). A failure to build or load
is one line on stderr; the process goes on without emu.
"""

import os
import sys

if os.environ.get("XFERBENCH_EMU") == "1":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    try:
        import emu

        emu.load()
    except Exception as exc:  # start-up must go on: say why in one line
        print(f"emu: not loaded: {type(exc).__name__}: {exc}", file=sys.stderr)
