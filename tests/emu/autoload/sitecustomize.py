"""Loads the emulated accelerator into every Python process that starts with this folder on
PYTHONPATH and XFERBENCH_EMU=1, as soon as that process imports torch: the way an emulated
run reaches processes it does not start itself (asv's benchmark processes, the CLI in a
subprocess, pytest's children).

    XFERBENCH_EMU=1 PYTHONPATH=tests/emu/autoload .venv/bin/xferbench env

``xferbench run`` hands PYTHONPATH to asv's processes with every folder made absolute (asv
starts them in folders of its own); asv's own virtualenvs take it as ASV_PYTHONPATH. Without
XFERBENCH_EMU=1 it does nothing (and imports nothing).

emu loads right after torch's own import, not at start-up: a process that never imports
torch (asv itself, its discovery, its fork server; the suite keeps torch out of them so that
the processes they fork start clean and fast) stays without it. A failure to build or load
is one line on stderr; the process goes on without emu.
"""

import os
import sys

if os.environ.get("XFERBENCH_EMU") == "1":
    import importlib.abc
    import importlib.util

    def _load_emu() -> None:
        sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
        try:
            import emu

            emu.load()
        except Exception as exc:  # the process must go on: say why in one line
            print(f"emu: not loaded: {type(exc).__name__}: {exc}", file=sys.stderr)

    class _AfterTorch(importlib.abc.MetaPathFinder):
        """Finds torch as the other finders do, and loads emu once torch has executed. It
        stays in place until then: a look-up that does not import (importlib.util.find_spec
        ("torch"), as the suite's probe cache makes) must not use it up."""

        looking = False

        def find_spec(self, name, path=None, target=None):
            if name != "torch" or self.looking:
                return None
            self.looking = True  # the look-up below goes to the other finders
            try:
                spec = importlib.util.find_spec("torch")
            finally:
                self.looking = False
            if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
                return spec
            execute = spec.loader.exec_module

            def exec_module(module):
                execute(module)
                if self in sys.meta_path:
                    sys.meta_path.remove(self)
                _load_emu()

            spec.loader.exec_module = exec_module
            return spec

    if "torch" in sys.modules:  # imported before site ran (not seen, but cheap to cover)
        _load_emu()
    else:
        sys.meta_path.insert(0, _AfterTorch())
