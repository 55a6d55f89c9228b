"""asv's repository for the package's suite, which has no git: the commits a listing names,
each with its date (``repo.write_asv_config`` writes it): the suite's own commit, which a run
is filed under (``--set-commit-hash``), and for publish every commit the results folder
holds, ordered by date as git orders a clone's.

asv imports this module by name (the configuration's ``plugins``) and finds the class as a
subclass of its ``Repo``; nothing of xferbench imports it, so asv is imported at the top.
"""

from __future__ import annotations

import json

from asv.repo import NoSuchNameError, Repo
from asv.util import UserError


class ListedCommits(Repo):
    """A repository known only by its commits and their dates (asv's ``dvcs`` value
    ``xferbench-listed``): nothing to check out, no tags, one branch holding every commit."""

    dvcs = "xferbench-listed"
    _default_branch = "main"

    def __init__(self, url: str, mirror_path: str) -> None:
        with open(url, encoding="utf-8") as fh:
            data = json.load(fh)
        self._head: str = data["head"]
        self._dates: dict[str, int] = {h: int(d) for h, d in data["commits"].items()}

    @classmethod
    def url_match(cls, url: str) -> bool:
        return False  # chosen by name (dvcs), never guessed from a URL

    def _ordered(self) -> list[str]:
        """Oldest first, as ``git rev-list --reverse`` lists a clone's."""
        return sorted(self._dates, key=lambda h: (self._dates[h], h))

    def checkout(self, path: str, commit_hash: str) -> None:
        raise UserError("the package's suite is installed, not checked out: asv's own "
                        "environments need a clone")

    def get_date(self, hash: str) -> int:
        if hash not in self._dates:
            raise NoSuchNameError(hash)
        return self._dates[hash]

    def get_date_from_name(self, name: str) -> int:
        return self.get_date(self.get_hash_from_name(name))

    def get_hashes_from_range(self, range: str) -> list[str]:
        return [self._head]

    def get_hash_from_name(self, name: str | None) -> str:
        """The suite's commit for HEAD or a branch name; a listed commit by itself or by a
        unique prefix."""
        if name is None or name == "HEAD" or name == self._default_branch:
            return self._head
        matches = [h for h in self._dates if h.startswith(name)]
        if len(matches) != 1:
            raise NoSuchNameError(name)
        return matches[0]

    def get_hash_from_parent(self, name: str) -> str:
        raise NoSuchNameError(f"{name}^")

    def get_name_from_hash(self, commit: str) -> None:
        return None

    def get_tags(self) -> dict[str, str]:
        return {}

    def pull(self) -> None:
        pass  # nothing to fetch

    def get_branch_commits(self, branch: str) -> list[str]:
        return self._ordered()[::-1]  # newest first, as asv's git backend gives them

    def get_range_spec(self, commit_a: str, commit_b: str) -> str:
        """The commits after ``commit_a`` up to ``commit_b``, as git writes a range: asv's
        publish names the range a step of a graph lies in."""
        return f"{commit_a}..{commit_b}"

    def get_revisions(self, commits: set[str]) -> dict[str, int]:
        return {h: i for i, h in enumerate(self._ordered()) if h in commits}
