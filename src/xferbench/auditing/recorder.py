"""The audit's state and the two modes' handlers: ``on_function`` (what the user's code
called), ``on_dispatch`` (each aten call it turned into), ``on_synchronize`` (an explicit
synchronise), ``mark`` (a step boundary).

Rules (docs/audit.md says them for users):
- a copy is recorded when its two sides sit on different devices; its host side is pinned
  or pageable; it could be asynchronous only if ``non_blocking`` was asked and the host side
  is pinned (a device-to-device copy never makes the host wait);
- a wait is recorded where the host must wait for device data: a value read
  (``_local_scalar_dense``), a device-to-host copy that is not asynchronous, an op whose
  output size depends on device data, an explicit synchronise. One call of the user's counts
  once however many waits torch makes inside it (the first drains the queue);
- on a CPU-only run (``cpu_mode``) nothing waits, so the reads an accelerator would wait for
  are recorded as not paid: those the user's code makes itself (PyTorch's own host-side
  reads, such as Adam's step count, stay on the host on a GPU too);
- a host factory's tensor (and what is computed from it alone) moved to a device is a
  create-then-move.
"""

from __future__ import annotations

import sys
import weakref
from types import FrameType, MethodWrapperType
from typing import Any

from ..device_watch import is_pinned
from .calls import Call, Move, Origin, is_view, names_device
from .events import (
    D2D,
    D2H,
    H2D,
    PAGEABLE,
    PINNED,
    CallSite,
    CopyEvent,
    Event,
    Mark,
    MoveEvent,
    PinEvent,
    SyncEvent,
)
from .frames import site_of, user_frame
from .mismatch import annotate, is_mismatch
from .ops import (
    CALL_KINDS,
    CATEGORIES,
    COPY,
    DATA_CALLS,
    FACTORY,
    FROM_DATA,
    HOST_READ_CALLS,
    INDEX,
    PIN,
    PRINT_CALLS,
    SYNC,
    SYNC_OPS,
    call_label,
    classify,
    nbytes,
    sync_kind,
)
from .sides import boolean_mask, copy_sides, outputs, same_layout, tensors_in, wait_input
from .steps import should_stop
from .tables import TensorTable

# torch loads inside the functions that need it: the package imports without it.

#: Calls a CPU-only run looks at once they return: host reads, and moves.
CPU_CALLS = HOST_READ_CALLS | {"to", "cuda"}


class Recorder:
    """Everything the audit saw in one run; the modes call its ``on_*`` methods."""

    def __init__(self, *, cpu_mode: bool, limit: int | None = None) -> None:
        self.cpu_mode = cpu_mode
        self.limit = limit  # stop after this many steps
        self.events: list[Event] = []
        self.marks: list[Mark] = []
        self.notes: list[str] = []
        self.recording = True
        self.stopped = False  # by the step limit
        self.on_stop: Any = None  # called once the limit is reached
        self.calls: list[Call] = []
        self.origins: TensorTable[Origin] = TensorTable()
        self.moves: TensorTable[Move] = TensorTable()
        self.host_reads: dict[int, tuple[Any, int]] = {}  # CPU mode: storage -> (ref, version)
        self.sync_depth = 0
        self.aten_calls = 0

    # -- the function mode ----------------------------------------------------------------

    def on_function(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if not self.recording or type(func) is MethodWrapperType:  # attribute reads
            return func(*args, **kwargs)
        name, label = call_label(func)
        call = Call(func, name, label, sys._getframe(2), "device" in kwargs)
        self.calls.append(call)
        try:
            out = func(*args, **kwargs)
        finally:
            self.calls.pop()
        if not self.recording:
            return out
        if self.cpu_mode:
            if name in CPU_CALLS:
                self._cpu_call_done(call, args, kwargs, out)
        elif name in DATA_CALLS and not call.copied:
            self._data_call_done(call, args, out)
        elif name in PRINT_CALLS and not call.waited:
            self._print_done(call, args)
        return out

    def _cpu_call_done(self, call: Call, args: tuple[Any, ...], kwargs: dict[str, Any],
                       out: Any) -> None:
        """On a CPU-only run the dispatcher sees no copy: a host read (``.cpu()``,
        ``.tolist()``, ``.numpy()``, printing) counts from the call, and a host factory's
        tensor ``.to(device)`` is the move it would be on an accelerator."""
        import torch

        with torch._C.DisableTorchFunction():
            first = args[0] if args and isinstance(args[0], torch.Tensor) else None
            if first is None:
                return
            if call.name in HOST_READ_CALLS and call.by_user and not call.waited \
                    and self._would_wait(first):
                self._wait(call, CALL_KINDS[call.name], "cpu", False, f"Tensor.{call.name}")
            if call.name == "cpu" and isinstance(out, torch.Tensor):
                self._note_read(out)
            if call.name in ("to", "cuda") and out is first and call.by_user \
                    and names_device(args[1:], kwargs):
                origin = self.origin_of(first)
                if origin is not None and not origin.from_data:
                    self.events.append(MoveEvent(origin.factory, origin.factory_site,
                                                 nbytes(first), "cpu", False, self._site()))
                    self.origins.discard(first)  # "on the device" from here on

    def _data_call_done(self, call: Call, args: tuple[Any, ...], out: Any) -> None:
        """``torch.tensor(data, device=dev)``: the copy to the device happens below the
        dispatcher, so it is recorded from the call (pageable, blocking: torch stages the
        data in a fresh host tensor)."""
        import torch

        with torch._C.DisableTorchFunction():
            data = args[1] if call.name == "new_tensor" and len(args) > 1 else (
                args[0] if args else None)
            if not isinstance(out, torch.Tensor) or out.device.type == "cpu" \
                    or isinstance(data, torch.Tensor):
                return
            self.events.append(CopyEvent(H2D, nbytes(out), PAGEABLE, False, False, "cpu",
                                         str(out.device), call.label, self._site()))

    def _print_done(self, call: Call, args: tuple[Any, ...]) -> None:
        """Printing a device tensor copies it to the host, below the dispatcher (torch's
        formatter turns the modes off): one wait, recorded from the call."""
        import torch

        with torch._C.DisableTorchFunction():
            first = args[0] if args and isinstance(args[0], torch.Tensor) else None
            if first is not None and first.device.type != "cpu":
                self._wait(call, "print", str(first.device), True, f"Tensor.{call.name}")

    # -- the dispatch mode ----------------------------------------------------------------

    def on_dispatch(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        self.aten_calls += 1
        category, name = CATEGORIES.get(func) or classify(func)
        if category is None and not self.origins.entries or not self.recording:
            return self._run(func, args, kwargs)
        out = self._run(func, args, kwargs)
        import torch

        with torch._C.DisableTorchFunction():
            moved = False
            if category == COPY:
                moved = self._on_copy(func, name, args, kwargs, out)
            elif category == SYNC:
                self._on_sync_op(func, name, args, kwargs)
            elif category == INDEX:
                mask = boolean_mask(func, args, kwargs)
                if mask is not None:
                    self._on_wait_input(mask, "boolean_mask", f"aten::{name}")
            elif category in (FACTORY, FROM_DATA):
                self._on_factory(category, name, args, kwargs, out)
            elif category == PIN:
                self.events.append(PinEvent(nbytes(args[0]), self._site()))
            if not moved and category not in (FACTORY, FROM_DATA) and self.origins:
                self._propagate(func, name, args, kwargs, out)
        return out

    def _run(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        try:
            return func(*args, **kwargs)
        except RuntimeError as exc:
            if is_mismatch(exc):
                note = annotate(exc, func, args, kwargs, self)
                if note and note not in self.notes:
                    self.notes.append(note)
            raise

    def _on_copy(self, func: Any, name: str, args: tuple[Any, ...], kwargs: dict[str, Any],
                 out: Any) -> bool:
        sides = copy_sides(func, name, args, kwargs, out)
        if sides is None:
            return False
        src, dst, non_blocking = sides
        if src.device == dst.device or "meta" in (src.device.type, dst.device.type):
            return False  # no transfer (a meta tensor has no data to move)
        call = self.calls[-1] if self.calls else None
        key = (src.data_ptr(), str(dst.device))
        if call is not None:
            if call.copied is None:
                call.copied = set()
            elif key in call.copied:
                return True  # the same copy seen again through another layer
            call.copied.add(key)
        direction = H2D if src.device.type == "cpu" else D2H if dst.device.type == "cpu" \
            else D2D
        host = src if direction == H2D else dst if direction == D2H else None
        if host is not None and "mps" in (src.device.type, dst.device.type):
            host = None  # unified memory: no pinned or pageable side to speak of
        memory = None if host is None else PINNED if is_pinned(host) else PAGEABLE
        asynchronous = direction == D2D or (non_blocking and (
            memory is None or memory == PINNED and same_layout(src, dst)))
        frame, module_move = user_frame(sys._getframe(1))
        site = self._site(frame)
        label = call.label if call is not None else f"aten::{name}"
        origin = self.origin_of(src) if direction == H2D else None
        made = origin is not None and not origin.from_data
        self.events.append(CopyEvent(direction, nbytes(dst), memory, non_blocking, asynchronous,
                                     str(src.device), str(dst.device), label, site,
                                     module_move, made))
        if direction == H2D:
            self.moves[src] = Move(site, str(dst.device), weakref.ref(dst))
            if made and not module_move:  # a module's tensors are made on the host by design
                assert origin is not None
                self.events.append(MoveEvent(origin.factory, origin.factory_site, nbytes(dst),
                                             str(dst.device), True, site))
        elif direction == D2H and not asynchronous:
            self._wait(call, sync_kind("to_host", call.name if call else None),
                       str(src.device), True, f"aten::{name}", site)
        return True

    def _on_sync_op(self, func: Any, name: str, args: tuple[Any, ...],
                    kwargs: dict[str, Any]) -> None:
        tensor = wait_input(func, name, args, kwargs)
        if tensor is not None:
            self._on_wait_input(tensor, SYNC_OPS[name], f"aten::{name}")

    def _on_wait_input(self, tensor: Any, op_kind: str, op: str) -> None:
        """A wait-prone op read ``tensor``: a wait if it is on a device; on a CPU-only run, a
        wait not paid if the user's code asked for it."""
        call = self.calls[-1] if self.calls else None
        kind = sync_kind(op_kind, call.name if call else None)
        if tensor.device.type != "cpu":
            self._wait(call, kind, str(tensor.device), True, op)
        elif self.cpu_mode and call is not None and call.by_user and self._would_wait(tensor):
            self._wait(call, kind, "cpu", False, op)

    def _wait(self, call: Call | None, kind: str, device: str, paid: bool, op: str,
              site: CallSite | None = None) -> None:
        if call is not None:
            if call.waited:
                return  # one wait per user call: the first drained the queue
            call.waited = True
        label = call.label if call is not None else op
        self.events.append(SyncEvent(kind, device, paid, label, op, site or self._site()))

    def _on_factory(self, category: str, name: str, args: tuple[Any, ...],
                    kwargs: dict[str, Any], out: Any) -> None:
        import torch

        if not isinstance(out, torch.Tensor) or out.device.type != "cpu" or out.is_pinned():
            return
        call = self.calls[-1] if self.calls else None
        if call is None or not call.by_user or out.dim() == 0:
            # PyTorch's own (autograd's gradient seed, an optimizer's state) is not the
            # user's to place; a 0-dim host tensor is a scalar to every kernel
            return
        if self.cpu_mode and call.device_given:
            return  # made with device=: on an accelerator it would be made there
        site = self._site()
        factory = "torch.tensor" if category == FROM_DATA else f"torch.{name}"
        self.origins[out] = Origin(factory, category == FROM_DATA, site, site)

    def _propagate(self, func: Any, name: str, args: tuple[Any, ...], kwargs: dict[str, Any],
                   out: Any) -> None:
        """What is computed from host-made tensors alone is host-made too (``torch.rand(n)
        > 0.5``), made from data where data went in; an in-place op that mixes in a tensor
        from outside the audit ends it."""
        results = [t for t in outputs(out) if t.device.type == "cpu"]
        if not results:
            return
        inputs = tensors_in((*args, *kwargs.values()))
        origins = [self.origin_of(t) for t in inputs]
        if inputs and all(o is not None for o in origins):
            # data mixed in (torch.tensor, from_numpy) makes it data: no create-then-move
            first = next((o for o in origins if o is not None and o.from_data), origins[0])
            assert first is not None
            # a view is no new tensor: it keeps the line that made its base
            made = first.made_site if is_view(func) else self._site()
            for t in results:
                self.origins[t] = Origin(first.factory, first.from_data, first.factory_site,
                                         made)
        elif name.endswith("_") and inputs:
            self.origins.discard(inputs[0])

    # -- explicit synchronise, step boundaries ----------------------------------------------

    def on_synchronize(self, label: str) -> None:
        if self.recording and self.sync_depth == 0:
            device = label.split(".")[1] if label.count(".") > 1 else "accelerator"
            self.events.append(SyncEvent("synchronize", device, not self.cpu_mode, label,
                                         label, self._site()))

    def mark(self, source: str, optimizer: int | None = None) -> None:
        """A step boundary; stops recording once the step limit is reached."""
        if not self.recording:
            return
        self.marks.append(Mark(len(self.events), source, optimizer))
        if self.limit is not None and should_stop(self.marks, self.limit):
            self.recording = False
            self.stopped = True
            if self.on_stop is not None:
                self.on_stop()

    # -- helpers --------------------------------------------------------------------------

    def _site(self, frame: FrameType | None = None) -> CallSite:
        if frame is None:
            frame, _ = user_frame(sys._getframe(1))
        if frame is None and self.calls:  # work on torch's own threads (backward)
            frame, _ = user_frame(self.calls[0].frame)
        return site_of(frame)

    def origin_of(self, tensor: Any) -> Origin | None:
        found = self.origins.get(tensor)
        if found is None and tensor._base is not None:
            found = self.origins.get(tensor._base)
        return found

    def _note_read(self, tensor: Any) -> None:
        key = tensor.untyped_storage().data_ptr()
        self.host_reads[key] = (weakref.ref(tensor), tensor._version)

    def _would_wait(self, tensor: Any) -> bool:
        """On a CPU-only run, whether reading ``tensor`` would wait on an accelerator: not if
        a host factory made it without ``device=`` (it would be a host tensor there too),
        nor if it is what a host read returned (``x.cpu()``) and has not changed since."""
        if self.origin_of(tensor) is not None:
            return False
        found = self.host_reads.get(tensor.untyped_storage().data_ptr())
        return not (found is not None and found[0]() is not None and found[1] == tensor._version)
