"""A window's epoch ids as runs: ``12-15,18`` (what travels in XCom and argv).

Contract. :func:`runs_text` writes ascending, distinct ids as comma-separated runs
(``A-B`` for consecutive ids, ``A`` alone), so a window of consecutive committed epochs is
one short argument whatever its size; its length grows only with the window's gaps
(epochs not committed). :func:`parse_runs` reads that text (and plain ``12,13,15``) back
as sorted distinct ids; ``ValueError`` naming the text for anything else (a part that is
not an id or a run, a run whose first id is above its last, no id at all).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_RUN = re.compile(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?")


def runs_text(ids: Iterable[int]) -> str:
    """``ids`` as runs (see the module contract)."""
    parts: list[str] = []
    ordered = sorted(set(ids))
    start = 0
    for at in range(1, len(ordered) + 1):
        if at == len(ordered) or ordered[at] != ordered[at - 1] + 1:
            first, last = ordered[start], ordered[at - 1]
            parts.append(str(first) if first == last else f"{first}-{last}")
            start = at
    return ",".join(parts)


def parse_runs(text: str) -> list[int]:
    """The ids of ``text`` (see the module contract)."""
    ids: set[int] = set()
    for part in text.split(","):
        if not part.strip():
            continue
        match = _RUN.fullmatch(part)
        if match is None:
            raise ValueError(f"epoch ids must be ids or runs A-B separated by commas, not {text!r}")
        first = int(match.group(1))
        last = int(match.group(2)) if match.group(2) else first
        if first > last:
            raise ValueError(f"epoch ids {text!r}: the run {part.strip()!r} starts above its end")
        ids.update(range(first, last + 1))
    if not ids:
        raise ValueError(f"epoch ids {text!r} name no epoch")
    return sorted(ids)
