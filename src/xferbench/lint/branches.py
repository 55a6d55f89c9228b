"""Branches: an ``if`` walked path by path. Each branch starts from what names held before it;
after it, a name holds what both paths agree on, a non_blocking copy is pending and device
work is queued only where both paths leave them so (a branch may synchronise); a test on a
step counter (``step % N``, ``step == K``) guards the reads in its body."""

from __future__ import annotations

import ast
import re

from .facts import COUNTER_TAG, GUARD_TAG, Val, terminal
from .part import Part
from .scopes import joined
from .syncs import branch_device, timing_test

#: What a branch bound: name -> (its value before, after).
Journal = dict[str, tuple[Val | None, Val | None]]


def ends_the_path(body: list[ast.stmt]) -> bool:
    """Whether a branch ends by leaving: raise, return, break, sys.exit(), or by skipping the
    step (continue: a batch whose loss is NaN, or empty)."""
    last = body[-1] if body else None
    if isinstance(last, (ast.Raise, ast.Return, ast.Break, ast.Continue)):
        return True
    return isinstance(last, ast.Expr) and isinstance(last.value, ast.Call) and (
        terminal(last.value.func) in ("exit", "_exit", "quit", "abort"))


def not_tensors(test: ast.expr | None) -> list[str]:
    """The names ``test`` proves are no tensors: isinstance(x, T) of a T not named *Tensor."""
    out = []
    for node in [test] if isinstance(test, ast.Call) else (
            test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And)
            else []):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id == "isinstance" and len(node.args) == 2 and \
                isinstance(node.args[0], ast.Name) and not isinstance(node.args[1], ast.Tuple) \
                and not (terminal(node.args[1]) or "Tensor").endswith("Tensor"):
            out.append(node.args[0].id)
    return out


#: A flag that says "log on this step": should_log, do_print, log_now, is_log_step.
_LOG_FLAG = re.compile(r"^_*(?:should|do|need|time_to|is|will)_(?:log|print|report|display|"
                       r"record|summar)|^_*log_(?:now|step|this_step|iter|it)$|_log_step$")
#: A period: log_interval, print_every, summary_freq, eval_period.
_PERIOD = re.compile(r"interval|every|freq|period|_log_t$|last_log|log_step|next_log")


def periodic(test: ast.expr) -> bool:
    """``t - last_log_t >= log_interval``, ``step >= next_log``: a comparison with a period
    or with the time of the last log."""
    if not isinstance(test, ast.Compare) or not all(
            isinstance(op, (ast.Gt, ast.GtE, ast.Lt, ast.LtE)) for op in test.ops):
        return False
    for side in (test.left, *test.comparators):
        for node in ast.walk(side):
            name = terminal(node) if isinstance(node, (ast.Name, ast.Attribute)) else None
            if name and _PERIOD.search(name.lower()):
                return True
    return False


def device_test(test: ast.expr) -> bool:
    """A test of whether there is an accelerator: torch.cuda.is_available(), use_cuda,
    device.type == "cuda"."""
    for node in ast.walk(test):
        name = terminal(node) if isinstance(node, (ast.Name, ast.Attribute)) else None
        if name and ("cuda" in name.lower() or "gpu" in name.lower() or name == "is_available"):
            return True
        if isinstance(node, ast.Constant) and node.value in ("cuda", "mps", "xpu"):
            return True
    return False


class Branches(Part):
    """If-statement handlers."""

    def s_if(self, node: ast.If) -> None:
        self.an.exprs.test(node.test)
        frame = self.st.frame
        pending, work = dict(frame.d2h), frame.work
        guard = (bool(frame.loops) or self.an.steps.function_name() is not None) and \
            self.step_guard(node.test)
        if guard:
            frame.guards.append(len(frame.loops))
        once = ends_the_path(node.body)
        self.st.once += once  # a branch that raises, exits, breaks or returns: not every step
        syncs = self.st.sync_count
        on_body, on_else = branch_device(node.test)
        self.st.branch_devices.append(on_body)
        timed = timing_test(node.test)  # if profiling_enabled: a measurement's synchronise
        self.st.timing_scopes += timed
        body = self.branch(node.body, node.test)
        self.st.timing_scopes -= timed
        self.st.branch_devices[-1] = on_else
        self.st.once -= once
        if guard:
            frame.guards.pop()
        after_body, work_body = frame.d2h, frame.work
        frame.d2h, frame.work = dict(pending), work
        orelse = self.branch(node.orelse)
        self.st.branch_devices.pop()
        synced_in = self.st.sync_count != syncs  # a branch synchronised
        self.join(body, orelse)
        # pending after the if only where pending on both paths: a branch may synchronise
        after_else = frame.d2h
        frame.d2h = {k: rec for k, rec in after_else.items() if k in after_body}
        for rec in {*after_body.values(), *after_else.values(), *pending.values()} - set(
                frame.d2h.values()):
            rec.live = False
        # work is queued after the if where both paths queue it, or, where neither branch
        # synchronised, where either does
        frame.work = work_body and frame.work if synced_in else work_body or frame.work
        if not node.orelse and not work_body and work and device_test(node.test):
            frame.work = False  # if torch.cuda.is_available(): synchronize(): the other path
            # has no device to wait for
        if once and not node.orelse and self.skips_unless_guarded(node.test):
            frame.guards.append(len(frame.loops))  # if not should_log: return; the rest is
            # guarded (the block that holds it pops it when it ends)

    def skips_unless_guarded(self, test: ast.expr) -> bool:
        """Whether ``if test: return`` (or continue) leaves every step but the guarded ones:
        ``not should_log``, ``step % N != 0``, ``step % N``."""
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return self.step_guard(test.operand)
        if isinstance(test, ast.BinOp) and isinstance(test.op, ast.Mod):
            return True
        return isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(
            test.ops[0], ast.NotEq) and self.step_guard(test)

    def step_guard(self, test: ast.expr) -> bool:
        """``if step % N == 0``, ``if step == K`` with a step counter, ``if should_log:``, ``if
        t - last_log >= log_interval:``: some steps only."""
        if periodic(test):
            return True
        for node in ast.walk(test):
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) and not (
                    isinstance(node.left, (ast.Constant, ast.JoinedStr))):
                return True  # x % n, not "%d" % x
            if isinstance(node, ast.Compare) and any(isinstance(op, ast.Eq) for op in node.ops):
                for side in (node.left, *node.comparators):
                    v = self.an.members.lookup(side.id) if isinstance(side, ast.Name) else None
                    if v is not None and v.tag is COUNTER_TAG:
                        return True
            if isinstance(node, ast.Name):  # should_log = step % every == 0; if should_log:
                v = self.an.members.lookup(node.id)
                if v is not None and v.tag is GUARD_TAG:
                    return True
            if isinstance(node, (ast.Name, ast.Attribute)) and _LOG_FLAG.search(
                    (terminal(node) or "").lower()):
                return True  # a flag named for logging: should_log, self.log_now
        return False

    def branch(self, body: list[ast.stmt], test: ast.expr | None = None) -> Journal:
        """Walk one branch of an if; the names it bound as (before, after), and the
        environment put back as it was before. Under ``if isinstance(x, Graph):`` x is no
        tensor (a graph, a batch object moves in place)."""
        frame = self.st.frame
        frame.journals.append({})
        shown = not_tensors(test)
        self.st.not_tensor_names.extend(shown)
        self.an.walker.block(body)
        del self.st.not_tensor_names[len(self.st.not_tensor_names) - len(shown):]
        journal = frame.journals.pop()
        out = {k: (old, frame.env.get(k)) for k, old in journal.items()}
        for k, old in journal.items():
            if old is None:
                frame.env.pop(k, None)
            else:
                frame.env[k] = old
        return out

    def join(self, body: Journal, orelse: Journal) -> None:
        """After an if: a name bound in a branch holds what both paths agree on."""
        env = self.st.frame.env
        for k in body.keys() | orelse.keys():
            old = (body[k] if k in body else orelse[k])[0]
            a = body[k][1] if k in body else old
            b = orelse[k][1] if k in orelse else old
            v = b if a is None else a if b is None else joined(a, b)
            if v is None:
                env.pop(k, None)
            else:
                env[k] = v
