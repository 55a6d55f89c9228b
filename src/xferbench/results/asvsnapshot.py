"""asv's repository for a suite tree without git: every name is one commit, the suite commit
``xferbench run`` labels the run with (``XFERBENCH_SUITE_COMMIT``, set in asv's environment),
dated when asv asks.

A GPU machine lent for minutes gets a copy of the tree without ``.git``, and its image may
hold no git binary at all; asv's git repository then cannot even start (it runs ``git`` to
find the default branch). An existing environment needs nothing of a repository but a commit
to file the results under (``asv run --set-commit-hash``), which this one gives. asv loads
the module as a plugin (asv.conf.json ``"plugins": [".xferbench.results.asvsnapshot"]``, its
``"dvcs"`` the name below; ``repo.write_asv_config`` writes both) and calls ``setup``, which
defines the class: asv finds repositories among ``Repo``'s subclasses.
"""

from __future__ import annotations

import os
import time
from typing import Any

from .repo import SNAPSHOT_DVCS, SUITE_COMMIT_VAR

# asv loads inside the functions that need it: `import xferbench` stays free of it.

#: The class, once ``setup`` made it (asv finds it through Repo.__subclasses__, a weak list).
_CLASSES: list[type] = []


def setup() -> None:
    """asv's plugin hook: define the snapshot repository (once)."""
    if _CLASSES:
        return
    from asv.repo import NoSuchNameError, Repo

    class Snapshot(Repo):  # type: ignore[misc]
        """Every name is the suite commit; nothing to check out (existing environments)."""

        dvcs = SNAPSHOT_DVCS
        _default_branch = "main"

        def __init__(self, url: str, mirror_path: str) -> None:
            self.url = self.path = url
            self.commit = os.environ.get(SUITE_COMMIT_VAR, "")
            if not self.commit:
                raise NoSuchNameError(f"{SUITE_COMMIT_VAR} is not set: xferbench run sets it "
                                      "for a tree without git")

        @classmethod
        def url_match(cls, url: str) -> bool:
            return False  # chosen by asv.conf.json's "dvcs" alone

        def checkout(self, path: str, commit_hash: str) -> None:
            pass

        def pull(self) -> None:
            pass

        def get_date(self, hash: Any) -> int:
            return int(time.time() * 1000)  # asv's dates are JavaScript milliseconds

        def get_date_from_name(self, name: Any) -> int:
            return self.get_date(name)

        def get_hash_from_name(self, name: Any) -> str:
            return self.commit

        def get_hashes_from_range(self, range_spec: Any) -> list[str]:
            return [self.commit]

        def get_hash_from_parent(self, name: Any) -> str:
            raise NoSuchNameError(f"a snapshot of the suite has no parent of {name}")

        def get_name_from_hash(self, commit: Any) -> None:
            return None

        def get_tags(self) -> dict[str, str]:
            return {}

        def get_branch_commits(self, branch: Any) -> list[str]:
            return [self.commit]

        def get_new_branch_commits(self, branches: Any, existing: Any) -> list[str]:
            return [] if self.commit in existing else [self.commit]

    _CLASSES.append(Snapshot)
