"""What a training step copies and waits for, counted while it runs (the machinery behind
``xferbench audit``; the priced report and the ``Audit`` context manager are
``auditing.auditor``'s).

Two PyTorch modes watch the thread that starts the audit (and the autograd threads it
hands work to). A ``TorchDispatchMode`` sees every aten call with its tensors: the copies
between host and device (``aten::_to_copy``, ``aten::copy_``, ...), whether a host side is
pinned, the reads that make the host wait (``aten::_local_scalar_dense``, ``nonzero``,
boolean masks, device-to-host copies), and the tensors host factories make. A
``TorchFunctionMode`` sees what the user's code called (``.item()``, ``bool()``,
``.tolist()``, ``.cpu()``...), so a user's one call counts once however the dispatcher
decomposes it, and names the kind of each wait. Explicit synchronise calls, which the
dispatcher never sees, are wrapped while the audit runs (``device_watch.synchronize_calls``).

Modules: ``events`` (what is recorded), ``frames`` (the user's line), ``ops`` (which aten
call is what), ``sides`` (an aten call's tensors by role), ``tables`` (tensors by identity,
held weakly), ``calls`` (what is kept about a call and a host tensor), ``recorder`` (the two
modes' handlers), ``modes`` (installing them), ``mismatch`` (the note on a device-mismatch
error), ``steps`` (step boundaries), ``counts`` (per-step figures) and ``overhead`` (the
audit's own cost, measured: ``scripts/audit-overhead``).
"""

from .counts import Counts
from .events import CallSite, CopyEvent, Event, MoveEvent, PinEvent, SyncEvent
from .recorder import Recorder
from .steps import Segments, segment

__all__ = ["CopyEvent", "Counts", "Event", "MoveEvent", "PinEvent", "Recorder", "Segments",
           "CallSite", "SyncEvent", "segment"]
