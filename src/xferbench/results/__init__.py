"""The results store: asv's results folder and xferbench's sidecars, read, written and kept
whole. The face is ``load`` (a folder into a ``ResultSet`` of ``Result`` records); the rest
is its plumbing, one module per concern:

- ``resultset``: ``ResultSet``, ``load``: the files read into typed records (``result``:
  ``Result``; ``reading``: one file read, its parameter names its own, and every check that
  keeps a number from being read as what it is not);
- ``series``: what a series is (machine, torch, how it was measured), ``MODES`` (each mode's
  label and whether it may be cited) and ``pick`` (which series a command reads);
- ``asvfiles``: asv's own files (``benchmarks.json``, results files): found, read, labelled
  with torch and CUDA, relabelled with the real suite commit, named as asv names them;
- ``sidecar``: the ``.metadata`` beside each results file (typed; old versions upgraded in
  one place); ``runrecords``: the records a run writes into it;
- ``safefiles``: every file written one way (through links, whole or not at all, never over
  a change, checked first), JSON read with one sentence; ``filesystem``: what it needs of
  the file system;
- ``backup``: the backup protocol that keeps a results file whole around one asv call;
- ``lock``: one run per results folder; ``machines``: machine names and asv's machine file;
- ``repo``: the suite's repository, its git state and asv configuration; ``asvconfig``: the
  interpreter wrapper that makes each PyTorch version a series of its own;
- ``merging``: results folders made elsewhere (fleet nodes) filed into one.

It imports the core (metadata) and the base, never an analysis, a practice or a command.
"""

from .resultset import Result, ResultSet, check_folder, load, load_file, version_key

__all__ = ["Result", "ResultSet", "check_folder", "load", "load_file", "version_key"]
