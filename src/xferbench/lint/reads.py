"""Reads the host makes of a value by formatting it: ``"%g" % (*mloss,)``, ``"{:.4f}".format(t)``,
``pbar.set_postfix(loss=t)``, ``writer.add_scalar(tag, t, step)`` (TensorBoard calls .item()),
``logger.info("%s", t)``, and ``math.isnan(t)``/``math.exp(t)`` (a float conversion)."""

from __future__ import annotations

import ast

from .facts import HOST_OTHER, OTHER, SEQ, TEXT, Val, terminal
from .part import Part
from .records import DictOf

#: Methods of a progress bar or a writer that format the values given them.
SINKS = {"set_postfix": "`set_postfix()`", "set_description": "`set_description()`",
         "set_postfix_str": "`set_postfix_str()`", "add_scalar": "`add_scalar()`",
         "add_scalars": "`add_scalars()`"}
#: A logger's methods: their arguments after the message are formatted into it.
LOG_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "critical", "log",
                         "exception"})
#: A tracker's methods given a dict of values (wandb's run.log, accelerate's log): each value
#: is read on the host (not a LightningModule's self.log_dict, which keeps them for later).
DICT_LOGS = frozenset({"log", "log_dict", "log_metrics"})


class Reads(Part):
    """Formatting reads."""

    def is_text(self, node: ast.expr, v: Val | None = None) -> bool:
        """Whether ``node`` (valued ``v``) is a string, as far as the analysis can tell."""
        if v is not None and v.kind == OTHER and isinstance(v.tag, str):
            return True
        if isinstance(node, ast.Constant):
            return isinstance(node.value, str)
        if isinstance(node, ast.JoinedStr):
            return True
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mult, ast.Mod)):
            return self.is_text(node.left) or (
                not isinstance(node.op, ast.Mod) and self.is_text(node.right))
        return False

    def text(self) -> Val:
        return Val(OTHER, tag=TEXT)

    def format_read(self, node: ast.BinOp, right: Val) -> None:
        """``text % values``: each value is formatted on the host."""
        parts = node.right.elts if isinstance(node.right, ast.Tuple) else [node.right]
        if right.kind == SEQ and right.items is not None and isinstance(node.right, ast.Tuple):
            values = list(right.items)
        else:
            values = [right] * len(parts)
        for part, v in zip(parts, values):
            if isinstance(part, ast.Starred) or v.tensorish:
                self.an.exprs.host_read(part, right if isinstance(part, ast.Starred) else v,
                               "`%` formatting", at=node)

    def sink_call(self, node: ast.Call, func: ast.Attribute, recv: Val, args: list[Val],
                  kws: list[Val]) -> bool:
        """A method that formats its arguments; True where it was one."""
        name = func.attr
        if name == "format" and self.is_text(func.value, recv):
            what = "`.format()`"
            values = [*args, *kws]
        elif name in SINKS:
            what = SINKS[name]
            values = args[1:2] + [v for k, v in zip(node.keywords, kws)
                                  if k.arg in ("scalar_value", "tag_scalar_dict")] if \
                name.startswith("add_scalar") else [*args, *kws]
            values = [v.tag.value if isinstance(v.tag, DictOf) else v for v in values]
        elif name in DICT_LOGS and node.args and isinstance(node.args[0], ast.Dict) and not (
                isinstance(func.value, ast.Name) and func.value.id == "self"):
            what = f"`{name}()`"  # wandb_run.log({"loss": loss}): the tracker reads each value
            values = args[:1]
        elif name in LOG_METHODS and "log" in (terminal(func.value) or "").lower():
            what = f"`{name}()`"
            values = args[1:]
        else:
            return False
        for v in values:
            if v.tensorish:
                self.an.exprs.host_read(node, v, what)
                break
        return True

    def math_read(self, node: ast.Call, qual: str, args: list[Val]) -> Val:
        """``math.isnan(t)``, ``math.exp(t)``: the tensor converted to a float on the host."""
        for v in args[:1]:
            self.an.exprs.host_read(node, v, f"`{qual}()`", strong=True)
        return HOST_OTHER
