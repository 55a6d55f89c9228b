"""Installing the audit: the two modes, the global optimizer-step hook, and wrappers around
the explicit synchronise calls; all of it undone by ``Watch.stop()``."""

from __future__ import annotations

import functools
from typing import Any

from ..device_watch import synchronize_calls
from .recorder import Recorder

# torch loads inside the functions that need it: the package imports without it.


@functools.cache
def _mode_classes() -> tuple[type, type]:
    """The two mode classes, made on first use (their bases are torch's)."""
    from torch.overrides import TorchFunctionMode
    from torch.utils._python_dispatch import TorchDispatchMode

    class FunctionWatch(TorchFunctionMode):
        """Hands each torch function the user's code calls to the recorder."""

        def __init__(self, recorder: Recorder) -> None:
            super().__init__()
            self.recorder = recorder

        def __torch_function__(self, func: Any, types: Any, args: tuple[Any, ...] = (),
                               kwargs: dict[str, Any] | None = None) -> Any:
            return self.recorder.on_function(func, args, kwargs or {})

    class DispatchWatch(TorchDispatchMode):
        """Hands each aten call to the recorder."""

        def __init__(self, recorder: Recorder) -> None:
            super().__init__()
            self.recorder = recorder

        def __torch_dispatch__(self, func: Any, types: Any, args: tuple[Any, ...] = (),
                               kwargs: dict[str, Any] | None = None) -> Any:
            return self.recorder.on_dispatch(func, args, kwargs or {})

    return FunctionWatch, DispatchWatch


class Watch:
    """What ``start()`` installs for one recorder, and ``stop()`` removes again."""

    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder
        self._modes: list[Any] = []
        self._hook: Any = None
        self._wrapped: list[tuple[Any, str, Any, bool]] = []  # owner, attr, original, own

    def start(self) -> None:
        from torch.optim.optimizer import register_optimizer_step_post_hook

        function_cls, dispatch_cls = _mode_classes()
        self._wrap_synchronize()
        self._hook = register_optimizer_step_post_hook(
            lambda opt, *_: self.recorder.mark("optimizer", id(opt)))
        for mode in (function_cls(self.recorder), dispatch_cls(self.recorder)):
            mode.__enter__()
            self._modes.append(mode)

    def release_modes(self) -> None:
        """Take the modes off now if nothing was pushed above them (after the step limit,
        so the rest of the run goes at full speed); else they stay, passing calls through."""
        from torch.overrides import _get_current_function_mode
        from torch.utils._python_dispatch import _get_current_dispatch_mode

        if len(self._modes) == 2 and _get_current_dispatch_mode() is self._modes[1] \
                and _get_current_function_mode() is self._modes[0]:
            self._pop_modes()

    def stop(self) -> None:
        self._pop_modes()
        if self._hook is not None:
            self._hook.remove()
            self._hook = None
        for owner, attr, original, own in reversed(self._wrapped):
            if own:
                setattr(owner, attr, original)
            else:
                delattr(owner, attr)
        self._wrapped.clear()

    def _pop_modes(self) -> None:
        while self._modes:
            self._modes.pop().__exit__(None, None, None)

    def _wrap_synchronize(self) -> None:
        """Explicit synchronise calls never reach the dispatcher: each one this torch has is
        wrapped for the audit's lifetime (a nested one, such as ``torch.emu.synchronize``
        calling ``torch.accelerator.synchronize``, counts once)."""
        recorder = self.recorder
        for owner, attr, label in synchronize_calls():
            own = attr in vars(owner)
            original = vars(owner)[attr] if own else getattr(owner, attr)
            target = getattr(owner, attr)

            def wrapper(*args: Any, _target: Any = target, _label: str = label,
                        **kwargs: Any) -> Any:
                recorder.on_synchronize(_label)
                recorder.sync_depth += 1
                try:
                    return _target(*args, **kwargs)
                finally:
                    recorder.sync_depth -= 1

            functools.update_wrapper(wrapper, target)
            setattr(owner, attr, wrapper)
            self._wrapped.append((owner, attr, original, own))
