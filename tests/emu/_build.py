"""Build the emulated accelerator's shared library once per torch version and source tree.

The library lands in ``<venv>/xferbench-emu/<torch version>-<hash>/``, where the hash covers
the C++ sources, CMakeLists.txt and torch's exact build. A library built for another torch,
or from older sources, lives under another name, so it is rebuilt and never loaded.

Run as a script (``scripts/build-emu``) it prints one line: the library's path, or why it
could not be built (exit status 1).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

SOURCE_DIR = Path(__file__).resolve().parent
LIBRARY_NAME = "libxferbench_emu.so"
SOURCES = ("CMakeLists.txt", "emu.h", "streams.cpp", "events.cpp", "clock.cpp", "memory.cpp",
           "pinned.cpp", "device.cpp", "ops.cpp")


class BuildUnavailable(RuntimeError):
    """The library cannot be built here; the message is one line saying why."""


def _torch_identity() -> tuple[str, str]:
    import torch

    return torch.__version__, getattr(torch.version, "git_version", "") or ""


def cache_root() -> Path:
    """``$XFERBENCH_EMU_CACHE``, else ``xferbench-emu`` inside the running environment."""
    override = os.environ.get("XFERBENCH_EMU_CACHE")
    return Path(override) if override else Path(sys.prefix) / "xferbench-emu"


def build_dir() -> Path:
    """Where the library for this torch and these sources lives (or will)."""
    version, git = _torch_identity()
    digest = hashlib.sha256()
    digest.update(f"torch {version} {git}\n".encode())
    for name in SOURCES:
        digest.update(name.encode() + b"\0" + (SOURCE_DIR / name).read_bytes() + b"\0")
    return cache_root() / f"{version}-{digest.hexdigest()[:12]}"


def built_library() -> Path | None:
    """The library for this torch and these sources if it was built, else None."""
    folder = build_dir()
    library = folder / LIBRARY_NAME
    try:
        info = json.loads((folder / "build.json").read_text())
    except (OSError, ValueError):
        return None
    # The folder name already says it; build.json is checked too so that a copied or
    # hand-edited cache cannot hand torch a library built against another release.
    if info.get("torch") != _torch_identity()[0] or not library.is_file():
        return None
    return library


def _find_compiler() -> str:
    for name in (os.environ.get("CXX"), "c++", "g++", "clang++"):
        if name and (path := shutil.which(name)):
            return path
    raise BuildUnavailable("no C++ compiler on PATH (looked for $CXX, c++, g++, clang++)")


def _find_cmake() -> str:
    beside_python = Path(sys.executable).parent / "cmake"  # pip install cmake puts it here
    for candidate in (shutil.which("cmake"), str(beside_python)):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise BuildUnavailable("no cmake on PATH or in this environment (pip install cmake)")


def _run(cmd: list[str], log: Path) -> None:
    with log.open("a") as out:
        out.write("$ " + " ".join(cmd) + "\n")
        out.flush()
        done = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, check=False)
    if done.returncode != 0:
        first = _first_error(log.read_text(errors="replace").splitlines())
        raise BuildUnavailable(f"build failed: {first[:240]}; full log: {log}")


def _first_error(lines: list[str]) -> str:
    """The line of a build log that says what went wrong."""
    for line in lines:
        if ": error:" in line or "fatal error" in line:
            return line.strip()
    for i, line in enumerate(lines):
        if line.startswith("CMake Error"):  # its message follows, in wrapped lines
            message: list[str] = []
            for text in (text.strip() for text in lines[i + 1:]):
                if text.endswith(":") or text.startswith(("Call Stack", "CMake ")):
                    break
                if text:
                    message.append(text)
                if len(message) == 4:
                    break
            return " ".join([line.strip(), *message])
    return lines[-1].strip() if lines else "(no output)"


def _remove_stale_builds(keep: Path) -> None:
    """Builds of older sources or another torch are never loaded again: remove them (and
    logs of failed builds). A process that still has one loaded keeps its mapping."""
    for path in keep.parent.iterdir():
        if path == keep or ".building-" in path.name:
            continue
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        elif path.name.endswith(".build.log"):
            path.unlink(missing_ok=True)


def build(*, quiet: bool = True) -> Path:
    """The library's path, building it first if this torch and these sources have none.

    Raises BuildUnavailable with one line when there is no compiler or cmake, or the build
    fails. Safe to run concurrently: each build works in its own folder and the first to
    finish is renamed into place.
    """
    if (library := built_library()) is not None:
        return library
    import torch.utils

    compiler = _find_compiler()
    cmake = _find_cmake()
    final = build_dir()
    final.parent.mkdir(parents=True, exist_ok=True)
    work = final.parent / f"{final.name}.building-{os.getpid()}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    log = work / "build.log"
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    started = time.perf_counter()
    try:
        _run([cmake, "-S", str(SOURCE_DIR), "-B", str(work / "cmake"), *generator,
              "-DCMAKE_BUILD_TYPE=Release", f"-DCMAKE_CXX_COMPILER={compiler}",
              f"-DCMAKE_PREFIX_PATH={torch.utils.cmake_prefix_path}"], log)
        _run([cmake, "--build", str(work / "cmake"), "--parallel", str(os.cpu_count() or 1)],
             log)
    except BuildUnavailable as exc:
        # Keep the log where the message says it is, outside the folder we remove.
        kept = final.parent / f"{final.name}.build.log"
        shutil.copyfile(log, kept)
        shutil.rmtree(work, ignore_errors=True)
        raise BuildUnavailable(str(exc).replace(str(log), str(kept))) from None
    seconds = time.perf_counter() - started
    shutil.copyfile(work / "cmake" / LIBRARY_NAME, work / LIBRARY_NAME)
    shutil.rmtree(work / "cmake")
    (work / "build.json").write_text(json.dumps(
        {"torch": _torch_identity()[0], "torch_git": _torch_identity()[1],
         "build_s": round(seconds, 1), "compiler": compiler}, indent=1) + "\n")
    try:
        work.rename(final)
    except OSError:  # another process finished first: use its build
        shutil.rmtree(work, ignore_errors=True)
    _remove_stale_builds(keep=final)
    if not quiet:
        print(f"emu: built in {seconds:.0f} s", file=sys.stderr)
    return final / LIBRARY_NAME


def main() -> int:
    try:
        print(build(quiet=False))
    except BuildUnavailable as exc:
        print(f"emu: not built: {exc}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
