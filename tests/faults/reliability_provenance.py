"""Where a RELIABILITY.md row comes from, and whether it still speaks for the code.

A fault run stamps each row it produces with :func:`run_stamp`: the commit it ran on
(``git rev-parse --short HEAD``; ``dirty`` when tracked files other than the report itself
differed from it), the date, and how it ran (``CI`` when the ``CI`` variable is set, ``long
mode`` when ``EO_FAULT_LONG=1``, both, or ``local``).

When the report is rendered, :func:`staleness` says why a row no longer counts as a result:
it names no commit (recorded before rows carried one), its commit is not among the last
:data:`RECENT_COMMITS` commits of ``HEAD``'s main line (``HEAD~20..HEAD`` by first parents;
a merged branch's commits count as part of their merge, so merging helpers' small commits
does not age every row), or its test is no longer
defined in ``tests/faults/test_*.py``. Everything here reads only git and the test files
(no service); without git every row is stale.
"""

from __future__ import annotations

import ast
import datetime
import os
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
FAULT_TESTS = Path(__file__).parent
#: A row whose commit is older than this many commits of HEAD is stale.
RECENT_COMMITS = 20
#: Files a run itself writes: they do not make the tree dirty.
REPORT_PATHS = ("RELIABILITY.md", "tests/faults/reliability_results.json")


def _git(*args: str, repo: Path = REPO) -> str | None:
    """``git args`` in the repository; None when git or the repository is missing."""
    try:
        done = subprocess.run(
            ["git", *args], cwd=repo, capture_output=True, text=True, check=False, timeout=30
        )
    except OSError:
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def run_mode(environ: Mapping[str, str] = os.environ) -> str:
    """How this run runs: ``CI``, ``long mode``, ``CI, long mode`` or ``local``."""
    modes = []
    if environ.get("CI", "").strip().lower() not in ("", "0", "false", "no"):
        modes.append("CI")
    if environ.get("EO_FAULT_LONG") == "1":
        modes.append("long mode")
    return ", ".join(modes) or "local"


def run_stamp() -> dict[str, Any]:
    """``commit`` (short sha, or None without git), ``dirty``, ``date`` and ``mode`` of this run."""
    commit = _git("rev-parse", "--short", "HEAD")
    excluded = (f":!{path}" for path in REPORT_PATHS)
    changes = _git("status", "--porcelain", "--untracked-files=no", "--", ".", *excluded)
    return {
        "commit": commit,
        "dirty": bool(changes),
        "date": datetime.date.today().isoformat(),
        "mode": run_mode(),
    }


@dataclass(frozen=True)
class Freshness:
    """What a rendering judges rows against: ``HEAD``'s recent commits (full shas, newest
    first) and the names of the fault suite's test functions."""

    head: str | None
    recent: tuple[str, ...]
    tests: frozenset[str]


@cache
def current_freshness() -> Freshness:
    """The repository's freshness now (git and the test files read once per process): every
    commit reachable from ``HEAD`` and not from ``HEAD~RECENT_COMMITS`` (all of them in a
    shorter history)."""
    head = _git("rev-parse", "--short", "HEAD")
    return Freshness(head=head, recent=recent_commits(), tests=defined_tests())


def recent_commits(count: int = RECENT_COMMITS, repo: Path = REPO) -> tuple[str, ...]:
    """Full shas of the commits reachable from ``HEAD`` and not from ``HEAD~count`` (its
    ``count``-th first parent): the main line's last ``count`` commits with every commit their
    merges brought in; all commits in a shorter history; () without git."""
    oldest = _git("rev-parse", "--verify", "--quiet", f"HEAD~{count}", repo=repo)
    listed = _git("rev-list", "HEAD", *([f"^{oldest}"] if oldest else []), repo=repo)
    return tuple(listed.split()) if listed else ()


def defined_tests(folder: Path = FAULT_TESTS) -> frozenset[str]:
    """Names of the ``test_*`` functions defined in ``folder``'s ``test_*.py`` files."""
    names: set[str] = set()
    for path in sorted(folder.glob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                names.add(node.name)
    return frozenset(names)


def staleness(row: Mapping[str, Any], test: str, freshness: Freshness) -> str | None:
    """Why ``row`` (of test function ``test``) is stale, or None when it still counts."""
    if test not in freshness.tests:
        return f"`{test}` no longer exists"
    commit = row.get("commit")
    if not commit:
        return "recorded without a commit"
    if not any(full.startswith(str(commit)) for full in freshness.recent):
        return f"{commit} is not among the last {RECENT_COMMITS} commits"
    return None


def provenance_text(row: Mapping[str, Any]) -> str:
    """``<commit>[ + uncommitted changes], <date>, <mode>`` (what is known of it)."""
    parts = []
    if row.get("commit"):
        parts.append(f"{row['commit']}{' + uncommitted changes' if row.get('dirty') else ''}")
    parts.append(str(row.get("date", "")))
    if row.get("mode"):
        parts.append(str(row["mode"]))
    return ", ".join(p for p in parts if p)


def outcome_text(row: Mapping[str, Any], test: str, freshness: Freshness) -> str:
    """The Outcome cell: ``**pass** (<provenance>)``, or ``**stale** (was pass, <provenance>;
    <why>)``; a FAIL stays a FAIL until it goes stale."""
    outcome, provenance = str(row["outcome"]), provenance_text(row)
    why = staleness(row, test, freshness)
    if why is None:
        return f"**{outcome}** ({provenance})"
    return f"**stale** (was {outcome}, {provenance}; {why})"
