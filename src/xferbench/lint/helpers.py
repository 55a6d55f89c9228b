"""Calls into the project's other modules (``project.Project``, when lint is given a folder
or several files): a call of a function imported from one, of a method a base class there
defines, or of a method by a name only the project's classes give, is noted where it runs
(its loops, its guards, which arguments are device values). At the module's end, a helper
that runs a whole training step makes the loop that calls it a training loop, and a call
that runs every training step is reported where its helper reads a device value on the host
(``log_metrics()`` reads ``loss.item()`` at ``utils/log.py:42``)."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from fnmatch import fnmatchcase

from .facts import NOWHERE, UNKNOWN, Val, device_parameters, dotted, purpose
from .modules import Callee, Read, absolute
from .part import Part
from .scopes import Loop
from .steps import SOME_STEPS, step_name

#: Reads a message names at most; more are counted.
SHOWN = 1
#: Helpers of other modules (with the arguments on the device) one module follows at most:
#: the module linted, and a helper's (only into functions it names, not methods by name).
FOLLOWED, FOLLOWED_INSIDE = 24, 8


@dataclass(frozen=True)
class HelperCall:
    """A call of a helper another module may define.

    Args:
        how: "function" (``name`` is what an import names: ``pkg.mod.fn``), "self" (a method
            of the class being walked, ``name``, defined by a base) or "named" (a method
            ``name`` of an object of unknown class).
        cls: the class the call is in ("self").
        hints: the parameters handed device values (as ``steps.note_call`` gives them).
    """

    how: str
    name: str
    cls: str | None
    hints: frozenset[object]
    node: ast.expr
    loops: tuple[Loop, ...]
    guards: tuple[int, ...]
    fn: str | None


class Helpers(Part):
    """Calls of the project's helpers: noted during the walk, decided at the module's end."""

    # -- the walk --------------------------------------------------------------------------------

    def imported(self, node: ast.ImportFrom) -> None:
        """``from .utils import log`` (a relative import): what ``log`` names."""
        project = self.inp.project
        module = project.module_of(self.inp.path) if project is not None else None
        base = absolute(module, self.inp.path, node) if module else None
        if base is not None:
            for a in node.names:
                self.st.project_imports[a.asname or a.name] = f"{base}.{a.name}"

    def function(self, node: ast.Call, qual: str, values: list[Val]) -> None:
        """A call of ``qual`` (``pkg.mod.fn``), imported."""
        self.note(node, "function", qual, None, values)

    def method(self, node: ast.Call, func: ast.Attribute, recv: Val,
               values: list[Val]) -> None:
        """``self.name(...)`` not defined in this module, ``obj.name(...)`` of an object of
        unknown class, or ``mod.fn(...)`` of a module imported relatively."""
        owner = func.value
        if isinstance(owner, ast.Name) and owner.id in ("self", "cls"):
            if func.attr not in self.st.functions_seen and self.st.classes:
                self.note(node, "self", func.attr, self.st.classes[-1], values)
        elif isinstance(owner, ast.Name) and owner.id in self.st.project_imports:
            self.note(node, "function", f"{self.st.project_imports[owner.id]}.{func.attr}",
                      None, values)
        elif recv.kind == UNKNOWN and recv.where == NOWHERE:
            self.note(node, "named", func.attr, None, values)

    def note(self, node: ast.Call, how: str, name: str, cls: str | None,
             values: list[Val]) -> None:
        st, frame = self.st, self.st.frame
        fn = self.an.steps.function_name()
        if frame.fresh_sync or st.acting or st.once or not (frame.loops or fn) or purpose(
                dotted(node.func) or ""):
            return  # validate.run(...), self.evaluator.step(): evaluation's reads are meant
        count = len(node.args)
        hints = device_parameters(values[:count], [
            (k.arg, v) for k, v in zip(node.keywords, values[count:])])
        st.helper_sites.append(HelperCall(how, name, cls, frozenset(hints), node,
                                          tuple(frame.loops), tuple(frame.guards), fn))

    def inherited_result(self, name: str, device: bool, hints: frozenset[object]) -> Val | None:
        """What ``self.name(...)`` gives where a base class in another module of the project
        defines the method (its returns there, with the parameters ``hints`` on the device;
        ``device``: the call hands device values); None where that says nothing. Only the
        module linted asks, not a helper's, and only in a function that runs a backward
        itself (a training step: what it is handed back may be a loss)."""
        project, frame = self.inp.project, self.st.frame
        while frame.parent is not None and frame.kind != "function":
            frame = frame.parent
        if project is None or self.inp.helper or not self.st.classes or not frame.lossy:
            return None
        target = project.inherited(self.inp.path, self.st.classes[-1], name)
        found = project.outline(target.path) if target is not None else None
        if target is None or found is None or not found.may_train:
            return None  # a module that never trains returns no loss
        done = project.analysed(target.path, {target.key: hints})
        return None if done is None else done.returns.call_result(target.key, device)

    # -- the module's end ------------------------------------------------------------------------

    def targets(self, site: HelperCall) -> list[Callee]:
        project = self.inp.project
        if project is None:
            return []
        if site.how == "function":
            found = project.function(site.name, self.inp.path)
            return [found] if found is not None else []
        if site.how == "self" and site.cls is not None:
            found = project.inherited(self.inp.path, site.cls, site.name)
            return [found] if found is not None else []
        return project.named(site.name) or []

    def followed(self, site: HelperCall) -> list[Callee]:
        """The targets of ``site`` worth following: none where one is named for evaluation or
        the configuration says its reads are meant, or past the ``FOLLOWED`` first."""
        inside = self.inp.helper
        found = [] if inside and site.how == "named" else self.targets(site)
        if any(purpose(t.key.rsplit(".", 1)[-1]) or self.intended(t) for t in found):
            return []
        asked = self.st.helpers_asked
        most = FOLLOWED_INSIDE if inside else FOLLOWED
        asked.update((t, site.hints) for t in found if len(asked) < most)
        return found if all((t, site.hints) in asked for t in found) else []

    def reads(self, site: HelperCall, depth: int = 0) -> tuple[tuple[Read, ...], str]:
        """The host reads the call makes (where each of its targets reads: a method by its
        name may be any of them), and how a message names it; ``depth``: how many helpers
        deep the call is."""
        project = self.inp.project
        found = self.followed(site)
        if project is None or not found:
            return (), ""
        done = [project.reads(t, site.hints, depth) for t in found]
        label = f"`{found[0].label}()`" if len(found) == 1 else \
            f"`{site.name}()` (any of the project's {len(found)} methods of that name)"
        return (done[0] if all(done) else ()), label

    def intended(self, target: Callee) -> bool:
        """Whether the configuration says ``target``'s reads are meant."""
        names = (target.key, target.key.rsplit(".", 1)[-1], target.label)
        return any(fnmatchcase(n, p) for n in names for p in self.inp.intended)

    def mark_steps(self) -> None:
        """A helper that runs a whole training step (a backward and an optimiser step) makes
        the loop around its call train, or the function that calls it outside loops."""
        facts, project = self.st.facts, self.inp.project
        for site in self.st.helper_sites:
            # a helper that trains is named for it (train_ops, fit_batch, update_step): only
            # those are asked
            if project is None or not step_name(site.name.rsplit(".", 1)[-1]) or \
                    not self.could_matter(site):
                continue
            found = self.followed(site)
            if not found or not all(project.trains(t) for t in found):
                continue
            loops = [loop for loop in site.loops if not loop.comprehension]
            if loops:
                loops[-1].step = loops[-1].train = loops[-1].optimise = True
                for outer in loops[:-1]:
                    outer.inner_train = True
            elif site.fn in facts:
                found_fn = facts[site.fn]
                found_fn.forward = found_fn.backward = found_fn.optimise = True

    def could_matter(self, site: HelperCall) -> bool:
        """Whether the loop around ``site`` (or its function) running a training step could
        change a finding: a read or a helper's call in that loop (or in the module)."""
        loops = [loop for loop in site.loops if not loop.comprehension]
        inner = loops[-1] if loops else None
        if inner is not None and inner.train:
            return False  # a training loop already
        codes = ("XB101", "XB104", "XB109")
        return any(c[0] in codes and (inner is None or inner in c[3])
                   for c in self.st.candidates) or any(
            other is not site and (inner is None or inner in other.loops)
            for other in self.st.helper_sites)

    def report_reads(self, trains: set[str], whole: set[str], steps: dict[str, str]) -> None:
        """Each call that runs every training step (or some) whose helper reads."""
        for site in self.st.helper_sites:
            inner = self.an.steps.batch_loop(site.loops, trains)
            if inner is not None:
                guarded, fn = any(g > inner for g in site.guards), None
            elif site.fn in steps and not any(loop.train for loop in site.loops) and not \
                    purpose(site.fn):
                guarded, fn = bool(site.guards) or steps[site.fn] == SOME_STEPS, site.fn
            else:
                continue
            reads, label = self.reads(site)
            if reads:
                self.an.report_step("XB101", site.node, self.what(label, reads), guarded, fn,
                                    whole)

    def what(self, label: str, reads: tuple[Read, ...]) -> str:
        """How a finding names the helper (``label``) and its read: "`log()`, through
        `.item()` at utils/log.py:42,"."""
        project = self.inp.project
        path, line, read = reads[0]
        where = f"{project.shown(path) if project else path}:{line}"
        more = len(reads) - SHOWN
        return (f"{label}, through {read} at {where}" +
                (f" and {more} more read{'s' * (more > 1)}" if more > 0 else "") + ",")

    # -- what this module's functions read, for a caller in another module ----------------------

    def reads_of(self, key: str, depth: int) -> list[Read]:
        """The host reads of device values a call of ``key`` makes: in it, in the functions
        of this module it calls unguarded, and in their helpers of other modules."""
        reach = self.reach(key)
        out = [(self.inp.path, node.lineno, message)
               for code, node, message, _loops, guards, _extra, fn in self.st.candidates
               if code == "XB101" and fn in reach and not guards]
        for site in self.st.helper_sites:
            if site.fn in reach and not site.guards:
                out += self.reads(site, depth)[0]
        return out

    def reach(self, key: str) -> set[str]:
        """``key`` and the functions of this module it calls, outside step guards."""
        reach = {key}
        changed = True
        while changed:
            changed = False
            for site in self.st.sites:
                if site.caller in reach and site.callee not in reach and not site.guards \
                        and site.callee in self.st.facts and not purpose(site.callee):
                    reach.add(site.callee)
                    changed = True
        return reach
