"""What is computed from results, for every command and the page to read alike:

- ``stats``: Mann-Whitney U, significance, the ratio's interval and verdict;
- ``comparison``: B against A, row by row, with marks, and what else differs (confounds);
- ``repeats``: which series repeat a series, and which changes a repeat confirms;
- ``headline``: the declarative headlines and the copy table; ``release_table``: the
  README's table per machine across releases;
- ``provenance``: each series' date, commit, hardware, builds, threads, and its
  "not for citation" reasons; ``citation``: one value with its provenance, as a sentence
  and a table; ``sitemap``: where the page draws each figure (cite quotes it);
- ``peermatrix``: the peer-copy matrix per machine;
- ``prices``: the price of each practice lint and audit flag, from results or the shipped
  table.

It reads the store (``xferbench.results``), the practices' cases and the core; it writes
nothing and prints nothing.
"""
