"""The package's layers, read from its imports (ast): arrows point one way, commands stand side
by side, no private name crosses a module, and function-local imports exist only to keep
torch, numpy, asv and matplotlib out of ``import xferbench``. ARCHITECTURE.md draws the same.

Each check returns the problems it finds as sentences; a test passes when there are none, and
``test_each_check_finds_a_planted_problem`` shows that every check can fail.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "xferbench"

#: Bottom to top; a module may import its own layer and those below it, never above. The
#: results layer is three folders, in this order: the store, what is computed from it, and
#: the two tools over both (the audit and lint).
BASE, CORE, PRACTICES, STORE, ANALYSIS, TOOLS, COMMANDS, ENTRY = range(8)
LAYER_NAMES = ("base", "core", "practices", "results layer: the store",
               "results layer: analysis", "results layer: audit and lint", "commands",
               "entry points")
#: Every top-level module and folder, by layer: a module's layer is its folder's (a new file
#: in a folder inherits it); a new top-level module goes into its layer's tuple.
LAYERS = {
    BASE: ("errors", "flags", "units", "version"),
    CORE: ("devices", "device_memory", "stream_hold", "timing", "measurement", "metadata",
           "spec", "telemetry", "event_batches", "device_watch"),
    PRACTICES: ("practices",),
    STORE: ("results",),
    ANALYSIS: ("analysis",),
    TOOLS: ("auditing", "lint"),  # both priced from analysis/prices.py
    COMMANDS: ("commands", "pytest_plugin", "practice_tests", "quick"),
    ENTRY: ("cli", "__main__", ""),  # "": xferbench/__init__.py
}
#: What a layer may not import although it is below: (importer, imported, why). The store
#: knows nothing of what is computed from it or of the workloads; the audit counts and prices
#: what a step did and never reads a results folder.
NEVER = (
    ("results", "practices", "the store knows no practice"),
    ("results", "analysis", "the store knows nothing computed from it"),
    ("auditing", "results", "the audit reads no results folder (its prices come from analysis)"),
)
#: Modules of commands/ that are no command: what every command shares.
COMMAND_SHARED = {"options"}
#: At most this many modules stand at the package's top (folders hold the rest).
MAX_TOP = 20
TOP_LEVEL = {name: level for level, names in LAYERS.items() for name in names}
#: Modules that list what sits below them and are exempt from the direction rule: the
#: package's lazy API (xferbench/__init__.py) and the command registry.
REGISTRIES = {"", "commands"}
#: Third-party packages heavy enough to import inside functions (each costs 0.1-3 s), and
#: submitit, an optional extra (``xferbench[fleet]``) that only ``fleet`` imports.
HEAVY = {"torch", "numpy", "asv", "asv_runner", "matplotlib", "pynvml", "pytest_benchmark",
         "submitit", "libcst"}
#: The comment a module with function-local heavy imports carries, once.
LAZY_NOTE = "inside the functions"
MAX_LINES = 400


def layer(module: str) -> int | None:
    """The layer of ``module`` (dotted below xferbench: "practices.copies"), None if unknown."""
    return TOP_LEVEL.get(module.split(".")[0])


def modules(src: Path) -> dict[str, Path]:
    out = {}
    for path in sorted(src.rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _target(module: str, is_package: bool, node: ast.ImportFrom) -> str | None:
    """The xferbench module a ``from`` import names ("" for the package), or None."""
    if node.level == 0:
        name = node.module or ""
        if name == "xferbench":
            return ""
        return name[len("xferbench."):] if name.startswith("xferbench.") else None
    package = [p for p in module.split(".") if p]
    if not is_package:
        package = package[:-1]
    base = package[: len(package) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def imports(src: Path) -> dict[str, list[tuple[int, str, list[str], bool]]]:
    """module -> [(line, imported xferbench module, names, not run at import: inside a function
    or under ``if TYPE_CHECKING:``)]; ``from . import x`` is an import of submodule x where x is
    one."""
    known = modules(src)
    out: dict[str, list] = {}
    for module, path in known.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        funcs = [n for n in ast.walk(tree)
                 if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) or isinstance(
                     n, ast.If) and isinstance(n.test, ast.Name) and n.test.id == "TYPE_CHECKING"]
        local = {id(n) for f in funcs for n in ast.walk(f) if n is not f}
        found = []
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                target = _target(module, path.name == "__init__.py", node)
                if target is None:
                    continue
                names = [a.name for a in node.names]
                subs = [t for t in (f"{target}.{n}".strip(".") for n in names) if t in known]
                found += [(node.lineno, t, names, id(node) in local) for t in subs or [target]]
            elif isinstance(node, ast.Import):
                found += [(node.lineno, a.name[len("xferbench."):], [], id(node) in local)
                          for a in node.names if a.name.startswith("xferbench.")]
        out[module] = found
    return out


def direction_problems(src: Path) -> list[str]:
    problems = []
    for module, found in imports(src).items():
        mine = layer(module)
        if mine is None:
            problems.append(f"xferbench.{module} belongs to no layer (add it here and to "
                            "ARCHITECTURE.md)")
            continue
        if module in REGISTRIES:
            continue
        for line, target, names, _local in found:
            if target == "" and names == ["__version__"]:
                continue
            theirs = layer(target)
            if theirs is None or theirs > mine:
                problems.append(f"xferbench.{module}:{line} imports xferbench.{target}, which "
                                f"is not below it ({LAYER_NAMES[mine]})")
    return problems


def never_problems(src: Path) -> list[str]:
    problems = []
    for module, found in imports(src).items():
        for line, target, _names, _local in found:
            for importer, imported, why in NEVER:
                if module.split(".")[0] == importer and target.split(".")[0] == imported:
                    problems.append(f"xferbench.{module}:{line} imports xferbench.{target}: "
                                    f"{why}")
    return problems


def top_problems(src: Path) -> list[str]:
    top = sorted(p.stem for p in src.glob("*.py"))
    if len(top) > MAX_TOP:
        return [f"{len(top)} modules at the package's top (over {MAX_TOP}): "
                f"{', '.join(top)}; give a family a folder"]
    return []


def architecture_problems(src: Path, doc: Path) -> list[str]:
    """Every module is named in ARCHITECTURE.md: by its path below the package
    (``results/lock.py``), or by its file name in the section (``### ...``) whose heading names
    its top folder (``results/``); a top-level module by its file name. And every benchmark
    file by its name."""
    text = doc.read_text(encoding="utf-8")
    sections = {}
    for part in text.split("\n### ")[1:]:
        heading, _, body = part.partition("\n")
        for word in heading.split():
            if word.strip("`:,").endswith("/"):
                sections[word.strip("`:,")] = sections.get(word.strip("`:,"), "") + body
    problems = []
    for path in sorted(src.rglob("*.py")):
        rel = path.relative_to(src).as_posix()
        top = rel.split("/")[0] + "/"
        if path.name == "__init__.py" or rel in text:
            continue
        if path.parent == src and path.name in text:
            continue
        if path.parent != src and path.name in sections.get(top, ""):
            continue
        problems.append(f"ARCHITECTURE.md does not name xferbench/{rel}")
    bench = src.parents[1] / "benchmarks"
    for path in sorted(bench.glob("*.py")) if src == SRC else []:
        if path.stem not in text:
            problems.append(f"ARCHITECTURE.md does not name benchmarks/{path.name}")
    return problems


def class_name_problems(src: Path) -> list[str]:
    """A class name defined in two modules: a reader (and an import) cannot tell which."""
    where: dict[str, list[str]] = {}
    for module, path in modules(src).items():
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ClassDef):
                where.setdefault(node.name, []).append(f"xferbench.{module}")
    return [f"class {name} is defined in {' and '.join(mods)}: name each for what it holds"
            for name, mods in sorted(where.items()) if len(mods) > 1]


def command_problems(src: Path) -> list[str]:
    problems = []
    for module, found in imports(src).items():
        if not module.startswith("commands."):
            continue
        own = module.split(".")[1]  # commands.publish.* is one command
        for line, target, _names, _local in found:
            parts = target.split(".")
            if parts[0] == "commands" and len(parts) > 1 and parts[1] != own \
                    and parts[1] not in COMMAND_SHARED:
                problems.append(f"xferbench.{module}:{line} imports another command, "
                                f"xferbench.{target}: move the helper into the results layer")
    return problems


def private_problems(src: Path) -> list[str]:
    problems = []
    for module, found in imports(src).items():
        for line, target, names, _local in found:
            private = [n for n in names if n.startswith("_") and n != "__version__"]
            if private or any(p.startswith("_") for p in target.split(".") if p):
                problems.append(f"xferbench.{module}:{line} imports a private name "
                                f"({', '.join(private) or target}) from xferbench.{target}")
    return problems


def local_import_problems(src: Path) -> list[str]:
    problems = []
    for module, path in modules(src).items():
        text = path.read_text(encoding="utf-8")
        heavy = False
        for func in [n for n in ast.walk(ast.parse(text))
                     if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]:
            for node in ast.walk(func):
                if isinstance(node, ast.Import):
                    roots = {a.name.split(".")[0] for a in node.names}
                elif isinstance(node, ast.ImportFrom):
                    roots = {(node.module or "").split(".")[0] if node.level == 0 else "."}
                else:
                    continue
                if roots <= HEAVY:
                    heavy = True
                else:
                    problems.append(f"xferbench.{module}:{node.lineno} imports {sorted(roots)} "
                                    "inside a function: import it at the top")
        notes = text.count(LAZY_NOTE)
        if heavy and notes != 1:
            problems.append(f"xferbench.{module} imports heavy packages inside functions: say "
                            f"so once in a comment with '{LAZY_NOTE}' ({notes} found)")
    return problems


def cycle_problems(src: Path) -> list[str]:
    found = imports(src)
    graph = {m: sorted({t for _l, t, _n, local in f if not local and t in found and t != m})
             for m, f in found.items()}
    state: dict[str, int] = {}
    problems: list[str] = []

    def visit(m: str, trail: list[str]) -> None:
        state[m] = 1
        for t in graph[m]:
            if state.get(t) == 1:
                problems.append("import cycle: " + " -> ".join(f"xferbench.{x}"
                                                              for x in [*trail, m, t]))
            elif t not in state:
                visit(t, [*trail, m])
        state[m] = 2

    for m in graph:
        if m not in state:
            visit(m, [])
    return problems


def length_problems(src: Path) -> list[str]:
    return [f"xferbench.{m} has {n} lines (over {MAX_LINES}): split it by concern"
            for m, p in modules(src).items()
            if (n := p.read_text(encoding="utf-8").count("\n")) > MAX_LINES]


def test_imports_point_down_the_layers():
    assert direction_problems(SRC) == []


def test_the_store_knows_no_analysis_nor_practice_and_the_audit_no_store():
    assert never_problems(SRC) == []


def test_at_most_twenty_modules_stand_at_the_top():
    assert top_problems(SRC) == []


def test_architecture_names_every_module():
    assert architecture_problems(SRC, SRC.parents[1] / "ARCHITECTURE.md") == []


def test_no_class_name_is_used_twice():
    assert class_name_problems(SRC) == []


def test_commands_never_import_one_another():
    assert command_problems(SRC) == []


def test_no_private_name_crosses_a_module():
    assert private_problems(SRC) == []


def test_function_local_imports_only_keep_heavy_packages_out():
    assert local_import_problems(SRC) == []


def test_no_import_cycles():
    assert cycle_problems(SRC) == []


def test_source_files_stay_short():
    assert length_problems(SRC) == []


def test_each_check_finds_a_planted_problem(tmp_path):
    pkg = tmp_path / "xferbench"
    (pkg / "commands" / "publish").mkdir(parents=True)
    files = {
        "__init__.py": "",
        "units.py": "from .results import Result\n",  # base imports the results layer
        "results.py": ("from .commands.cite import _helper\n"  # up, and a private name
                       "from .units import KiB\n"
                       "def f():\n    from .units import MiB\n"  # a local import of ours
                       "from .practices import SIZES\n"),  # the store imports a practice
        "stats.py": "def g():\n    import torch\n",  # heavy local import, no note
        "commands/__init__.py": "",
        "commands/cite.py": "from .publish import site\n",  # a command imports another
        "commands/publish/__init__.py": "",
        "commands/publish/site.py": "from ..cite import x\n",
        "mystery.py": "x = 1\n" * (MAX_LINES + 1),  # no layer, too long
        "auditing/__init__.py": "",
        "auditing/count.py": "from ..results import load\n",  # the audit reads the store
        "commands/options.py": "",
        "commands/list.py": "from .options import x\n",  # shared, not another command
    }
    (pkg / "auditing").mkdir()
    for name, text in files.items():
        (pkg / name).write_text(text)
    direction = "\n".join(direction_problems(pkg))
    assert "xferbench.units:1 imports xferbench.results" in direction
    assert "xferbench.results:1 imports xferbench.commands.cite" in direction
    assert "xferbench.mystery belongs to no layer" in direction
    commands = "\n".join(command_problems(pkg))
    assert "xferbench.commands.cite:1 imports another command, xferbench.commands.publish" \
        in commands
    assert "xferbench.commands.publish.site:1 imports another command" in commands
    assert private_problems(pkg) == [
        "xferbench.results:1 imports a private name (_helper) from xferbench.commands.cite"]
    local = "\n".join(local_import_problems(pkg))
    assert "xferbench.results:4 imports ['.'] inside a function" in local
    assert "xferbench.stats imports heavy packages inside functions: say so once" in local
    assert ("xferbench.commands.cite -> xferbench.commands.publish.site -> "
            "xferbench.commands.cite") in "\n".join(cycle_problems(pkg))
    assert "commands.list" not in commands
    (pkg / "commands" / "cite.py").write_text("from .publish import site\nclass Site:\n    x = 1\n")
    (pkg / "commands" / "publish" / "site.py").write_text("from ..cite import x\nclass Site:\n"
                                                         "    y = 2\n")
    assert class_name_problems(pkg) == [
        "class Site is defined in xferbench.commands.cite and xferbench.commands.publish.site: "
        "name each for what it holds"]
    never = "\n".join(never_problems(pkg))
    assert "xferbench.results:5 imports xferbench.practices: the store knows no" in never
    assert "xferbench.auditing.count:1 imports xferbench.results: the audit reads no" in never
    for i in range(MAX_TOP):
        (pkg / f"m{i}.py").write_text("")
    assert top_problems(pkg)[0].startswith(f"{MAX_TOP + 5} modules at the package's top")
    doc = tmp_path / "ARCHITECTURE.md"
    doc.write_text("units.py auditing/other.py\n### lint/\n`walker.py`\n### x\ncount.py\n")
    missing = architecture_problems(pkg, doc)
    assert "ARCHITECTURE.md does not name xferbench/auditing/count.py" in missing
    assert not any(m.endswith("/units.py") for m in missing)
    assert length_problems(pkg) == [
        f"xferbench.mystery has {MAX_LINES + 1} lines (over {MAX_LINES}): split it by concern"]
