"""The command line: the env subcommand, and exit codes for usage errors (one stderr line)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import xferbench
from xferbench.cli import main


def _exit_code(argv, capsys):
    """main(argv) as a process would end: its return value or argparse's SystemExit code."""
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def test_python_m_xferbench_env_json_prints_torch_and_no_accelerator(run_python, no_accelerator):
    import torch

    proc = run_python("-m", "xferbench", "env", "--json")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    meta = json.loads(proc.stdout)
    assert meta["torch"] == torch.__version__
    assert meta["accelerator"] is None
    assert '"accelerator": null' in proc.stdout


def test_env_device_cuda_without_cuda_exits_2_with_one_sentence(no_accelerator):
    # the installed console script, as a user types it
    script = Path(sys.executable).with_name("xferbench")
    if not script.exists():
        pytest.skip(f"no xferbench script next to {sys.executable}")
    proc = subprocess.run([str(script), "env", "--device", "cuda"], capture_output=True,
                          text=True, timeout=120, check=False)
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("xferbench: device 'cuda' not found: no accelerator")
    assert "Traceback" not in proc.stderr


def test_env_json_in_process_matches_collect(capsys):
    from xferbench.metadata import collect

    code, out, err = _exit_code(["env", "--json", "--device", "cpu"], capsys)
    assert (code, err) == (0, "")
    meta = json.loads(out)
    expected = collect("cpu").to_dict()
    assert meta["device"] == "cpu"
    assert meta["capabilities"] == expected["capabilities"]
    assert set(meta) == set(expected)


def test_env_table_has_one_aligned_line_per_field_and_unknown_for_none(capsys):
    code, out, err = _exit_code(["env", "--device", "cpu"], capsys)
    assert (code, err) == (0, "")
    lines = out.splitlines()
    keys = [line.split()[0] for line in lines]
    assert keys == sorted(keys)
    assert "torch" in keys and "capabilities" in keys
    width = max(len(k) for k in keys)
    assert all(line[width:width + 2] == "  " for line in lines)
    row = dict(line.split(None, 1) for line in lines)
    assert row["accelerator"] == "none"  # a CPU has none: not "unknown"
    assert row["cuda"] == "none"  # a CPU build of torch has no CUDA
    assert row["device"] == "cpu"
    assert "pinned_memory=False" in row["capabilities"]


def test_absent_device_index_exits_2_with_one_line(capsys):
    code, out, err = _exit_code(["env", "--device", "cuda:99"], capsys)
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1
    assert err.startswith("xferbench: device 'cuda:99' not found: ")


def test_bad_device_type_exits_2_with_one_line(capsys):
    code, _, err = _exit_code(["env", "--device", "tpu"], capsys)
    assert code == 2
    assert err == ("xferbench: device 'tpu' is not a device type: "
                   "use auto, cpu, cuda, cuda:N, xpu or mps\n")


def test_help_exits_0_and_lists_env(capsys):
    code, out, err = _exit_code(["--help"], capsys)
    assert code == 0
    assert out.startswith("usage: xferbench")
    assert "env" in out
    assert err == ""


def test_env_help_exits_0_and_lists_its_options(capsys):
    code, out, _ = _exit_code(["env", "--help"], capsys)
    assert code == 0
    assert "--device" in out and "--json" in out


def test_version_prints_the_package_version(capsys):
    code, out, _ = _exit_code(["--version"], capsys)
    assert code == 0
    assert out.strip() == f"xferbench {xferbench.__version__}"


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["bogus"], "invalid choice: 'bogus'"),
        (["env", "--jsn"], "unrecognized arguments: --jsn"),
        (["env", "--js"], "unrecognized arguments: --js"),  # no abbreviations
        (["--verbose"], "unrecognized arguments: --verbose"),
        (["env", "--device"], "argument --device: expected one argument"),
    ],
    ids=["unknown-subcommand", "typo-option", "abbreviated-option", "unknown-global", "no-value"],
)
def test_usage_error_exits_2_with_exactly_one_stderr_line(argv, words, capsys):
    code, out, err = _exit_code(argv, capsys)
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1, err
    assert err.startswith("xferbench")
    assert words in err
    assert err.rstrip().endswith("--help')")  # points at the right help


def test_no_subcommand_exits_2_naming_the_commands(capsys):
    code, out, err = _exit_code([], capsys)
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1, err
    assert ("a command is required: env, check, run, fleet, list, publish, compare, cite, claims, "
            "table, export, lint or audit"
            in err)


@pytest.mark.gpu
def test_env_json_names_the_accelerator(gpu_device, capsys):
    code, out, _ = _exit_code(["env", "--json"], capsys)
    assert code == 0
    meta = json.loads(out)
    assert meta["accelerator"] == gpu_device.type
    assert meta["device"] == gpu_device.name
    # by its name too: "emu" on the emulated device, a PrivateUse1 backend like any other
    code, out, _ = _exit_code(["env", "--json", "--device", gpu_device.type], capsys)
    assert code == 0 and json.loads(out)["device"] == gpu_device.name


def test_env_format_json_is_the_same_as_json(capsys):
    code, out, err = _exit_code(["env", "--format", "json", "--device", "cpu"], capsys)
    code2, out2, _ = _exit_code(["env", "--json", "--device", "cpu"], capsys)
    assert (code, code2, err) == (0, 0, "")
    assert json.loads(out).keys() == json.loads(out2).keys()


def test_every_command_has_a_description_and_the_exit_codes_are_in_help(capsys):
    code, out, _ = _exit_code(["--help"], capsys)
    assert code == 0 and "exit status: 0 ok; 1 a regression found" in " ".join(out.split())
    for command in ("env", "run", "list", "publish", "compare", "cite", "audit"):
        code, out, _ = _exit_code([command, "--help"], capsys)
        usage, _, rest = out.partition("\n\n")
        assert code == 0 and rest.strip() and not rest.lstrip().startswith("positional") \
            and not rest.lstrip().startswith("options"), f"{command} has no description"


def test_a_measuring_command_without_torch_is_one_sentence_and_exit_2(monkeypatch, capsys,
                                                                      tmp_path):
    from xferbench.commands import options

    monkeypatch.setattr(options, "torch_installed", lambda: False)
    monkeypatch.chdir(tmp_path)
    for argv in (["run", "--quick"], ["env"], ["audit", "train.py"]):
        code, out, err = _exit_code(argv, capsys)
        assert code == 2 and out == ""
        assert err.count("\n") == 1, err
        assert f"xferbench {argv[0]} measures with PyTorch, which is not installed for" in err
        assert "https://pytorch.org/get-started/locally/" in err
    assert list(tmp_path.iterdir()) == []  # nothing written
    (tmp_path / "ok.py").write_text("x = 1\n")
    assert _exit_code(["lint", "ok.py"], capsys)[0] == 0  # lint needs none


def test_help_says_which_commands_need_torch(monkeypatch, capsys):
    from xferbench import cli

    for installed, says in ((True, "PyTorch is installed here"),
                            (False, "PyTorch is NOT installed for this interpreter")):
        monkeypatch.setattr(cli, "torch_installed", lambda installed=installed: installed)
        code, out, _ = _exit_code(["--help"], capsys)
        text = " ".join(out.split())
        assert code == 0 and says in text
        assert "env, check, run, fleet (the runs it submits), audit measure with PyTorch, which " \
               "xferbench does not install" in text
        assert "list, publish, compare, cite, claims, table, export, lint need no PyTorch" in text
