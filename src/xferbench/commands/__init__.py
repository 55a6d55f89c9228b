"""The subcommands, side by side over the results layer; none imports another. Each module
has ``register_cli(subparsers)``, which adds its parser and the function that runs it;
``options`` is no command: the options several share, declared once."""

from . import (
    audit,
    check,
    cite,
    claims,
    compare,
    env,
    export,
    fleet,
    lint,
    list,
    publish,
    run,
    table,
)

#: In the order ``xferbench --help`` lists them.
COMMANDS = (env, check, run, fleet, list, publish, compare, cite, claims, table, export, lint,
            audit)
