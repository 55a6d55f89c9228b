"""What a script can see of how it runs, printed line by line (each line starts "probe ")."""
import os
import pickle
import sys
import warnings

import torch
from torch.utils.data import DataLoader, Dataset


class Squares(Dataset):
    """Defined here: a spawned DataLoader worker unpickles it from __main__."""

    def __len__(self):
        return 3

    def __getitem__(self, i):
        return torch.tensor(i * i)


def show(key, value):
    print(f"probe {key}: {value!r}")


if __name__ == "__main__":  # a spawned worker runs this file as __mp_main__
    show("name", __name__)
    show("file", __file__)
    show("argv", sys.argv)
    show("path", sys.path)
    show("spec", __spec__)
    show("loader", (type(__loader__).__name__, __loader__.name, __loader__.path))
    show("package", (__package__, __cached__, type(__builtins__).__name__))
    show("globals", sorted(k for k in globals() if k.startswith("__")))
    show("main", sys.modules["__main__"] is sys.modules[__name__])
    show("code", sys._getframe().f_code.co_filename)
    show("cwd", os.getcwd())
    show("filters", [(a, getattr(m, "pattern", m), c.__name__, getattr(mod, "pattern", mod), n)
                     for a, m, c, mod, n in warnings.filters])
    show("streams", (sys.stdout.errors, sys.stderr.errors))
    show("stdin", sys.stdin.read())
    show("pickled", pickle.loads(pickle.dumps(Squares())).__class__.__module__)
    warnings.warn("a deprecation the script raises", DeprecationWarning, stacklevel=1)
    loader = DataLoader(Squares(), batch_size=3, num_workers=1,
                        multiprocessing_context="spawn")
    show("workers", [b.tolist() for b in loader])
    how = sys.argv[1] if len(sys.argv) > 1 else ""
    if how == "exit":
        sys.exit(3)
    if how == "message":
        sys.exit("stopped: a message")
    if how == "raise":
        def deeper():
            return torch.zeros(2) @ torch.zeros(3)  # a shape error, raised in torch

        deeper()
