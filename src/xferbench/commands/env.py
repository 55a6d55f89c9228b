"""``xferbench env``: the metadata recorded with every result, and the device's capabilities."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..metadata import collect


def register_cli(sub: Any) -> None:
    env = sub.add_parser("env", help="print the machine's metadata and the device's capabilities",
                         allow_abbrev=False)
    env.add_argument("--device", default="auto",
                     help="auto (default), cpu, cuda, cuda:N, xpu, mps, or the name of a "
                          "registered PrivateUse1 backend (e.g. emu)")
    env.add_argument("--json", action="store_true", help="print JSON instead of a table")
    env.set_defaults(func=cmd_env)


def cmd_env(args: argparse.Namespace) -> int:
    meta = collect(args.device)
    if args.json:
        print(json.dumps(meta, indent=2, sort_keys=True, default=str))
        return 0
    width = max(len(k) for k in meta)
    for key in sorted(meta):
        value = meta[key]
        if isinstance(value, dict):
            value = ", ".join(f"{k}={v}" for k, v in value.items())
        print(f"{key:<{width}}  {'unknown' if value is None else value}")
    return 0
