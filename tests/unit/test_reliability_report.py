"""RELIABILITY.md's rows belong to a commit, and the documents cite only rows that exist.

No service: the report's rendering is a function of the results, the recent commits and
the fault suite's test names (tests/faults/reliability_provenance.py).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from tests.faults import reliability
from tests.faults.reliability_provenance import Freshness, defined_tests, recent_commits, run_mode

REPO = Path(__file__).resolve().parents[2]
CITING_DOCUMENTS = sorted([REPO / "README.md", *REPO.glob("docs/*.md")])
EN_DASH = "\u2013"
_NUMBER = rf"\d+(?:\s*[{EN_DASH}-]\s*\d+)?"
_CITATION = re.compile(rf"\b[Rr]ows?\s+({_NUMBER}(?:\s*(?:,|and)\s*{_NUMBER})*)")
_TABLE_ROW = re.compile(r"^\| (\d+) \| `", re.MULTILINE)
_ORDER = re.compile(r"\border=(\d+)\b")


def cited_rows(text: str) -> list[tuple[int, int]]:
    """(line, row number) of every ``row N`` / ``rows N-M, K and L`` citation in ``text``
    (a range with a hyphen or an en dash)."""
    cited = []
    for match in _CITATION.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        for part in re.split(r"\s*(?:,|and)\s*", match.group(1)):
            first, _, last = re.sub(r"\s", "", part).replace(EN_DASH, "-").partition("-")
            cited += [(line, n) for n in range(int(first), int(last or first) + 1)]
    return cited


def test_citation_parsing() -> None:
    text = f"cases (rows 1{EN_DASH}3, 9-10) and row 6.\nRELIABILITY.md rows 46 and 48; the HBase row key"
    assert cited_rows(text) == [(1, 1), (1, 2), (1, 3), (1, 9), (1, 10), (1, 6), (2, 46), (2, 48)]


def test_every_cited_row_exists_in_reliability_md() -> None:
    existing = {int(n) for n in _TABLE_ROW.findall((REPO / "RELIABILITY.md").read_text())}
    dangling = [
        f"{doc.relative_to(REPO)}:{line}: row {number}"
        for doc in CITING_DOCUMENTS
        for line, number in cited_rows(doc.read_text())
        if number not in existing
    ]
    assert existing and not dangling, "cited rows that RELIABILITY.md does not have:\n" + "\n".join(dangling)


def test_each_row_number_belongs_to_one_test_file() -> None:
    owners: dict[int, set[str]] = {}
    for path in (REPO / "tests" / "faults").glob("test_*.py"):
        for number in _ORDER.findall(path.read_text()):
            owners.setdefault(int(number), set()).add(path.name)
    shared = {n: sorted(files) for n, files in owners.items() if len(files) > 1}
    assert owners and not shared


RESULTS = {
    "cases": {
        "test_a": {"id": "test_a", "order": 1, "fault": "f", "outcome": "pass", "date": "2026-11-29",
                   "commit": "abc1234", "dirty": False, "mode": "CI"},
        "test_b[x]": {"id": "test_b[x]", "order": 2, "fault": "f", "outcome": "pass", "date": "2026-11-29",
                      "commit": "def5678", "dirty": True, "mode": "long mode"},
        "test_c": {"id": "test_c", "order": 3, "fault": "f", "outcome": "pass", "date": "2026-11-01",
                   "commit": "0123456", "mode": "CI"},
        "test_d": {"id": "test_d", "order": 4, "fault": "f", "outcome": "pass", "date": "2026-11-27"},
        "test_gone": {"id": "test_gone", "order": 5, "fault": "f", "outcome": "pass", "date": "2026-11-29",
                      "commit": "abc1234", "mode": "CI"},
        "test_e": {"id": "test_e", "order": 6, "fault": "f", "outcome": "FAIL", "date": "2026-11-29",
                   "commit": "abc1234", "mode": "local"},
    },
    "random_runs": [
        {"seed": 7, "count": 200, "outcome": "pass", "date": "2026-11-29", "commit": "def5678",
         "mode": "long mode"},
        {"seed": 8, "count": 100, "outcome": "pass", "date": "2026-11-22"},
    ],
}  # fmt: skip
FRESHNESS = Freshness(
    head="abc1234",
    recent=("abc1234" + "0" * 33, "def5678" + "1" * 33),
    tests=frozenset({"test_a", "test_b", "test_c", "test_d", "test_e", "test_randomized_faults"}),
)


def test_rows_name_their_commit_and_go_stale() -> None:
    text = reliability.render(RESULTS, FRESHNESS)
    lines = [line for line in text.splitlines() if "| `test_" in line]
    outcomes = {line.split(" | ")[1]: line.rsplit(" | ", 1)[1] for line in lines}
    assert outcomes == {
        "`test_a`": "**pass** (abc1234, 2026-11-29, CI) |",
        "`test_b[x]`": "**pass** (def5678 + uncommitted changes, 2026-11-29, long mode) |",
        "`test_c`": "**stale** (was pass, 0123456, 2026-11-01, CI; "
        "0123456 is not among the last 20 commits) |",
        "`test_d`": "**stale** (was pass, 2026-11-27; recorded without a commit) |",
        "`test_gone`": "**stale** (was pass, abc1234, 2026-11-29, CI; `test_gone` no longer exists) |",
        "`test_e`": "**FAIL** (abc1234, 2026-11-29, local) |",
    }
    random_rows = [line for line in text.splitlines() if line.startswith("| 7 |") or line.startswith("| 8 |")]
    assert "| **pass** (def5678, 2026-11-29, long mode) |" in random_rows[0]
    assert "| **stale** (was pass, 2026-11-22; recorded without a commit) |" in random_rows[1]
    assert "of the commit this file was rendered at (abc1234)" in text


def test_run_mode_from_the_environment() -> None:
    assert run_mode({}) == "local"
    assert run_mode({"CI": "true"}) == "CI"
    assert run_mode({"CI": "false", "EO_FAULT_LONG": "1"}) == "long mode"
    assert run_mode({"CI": "1", "EO_FAULT_LONG": "1"}) == "CI, long mode"


def test_defined_tests_are_the_fault_suites_functions() -> None:
    names = defined_tests()
    assert {"test_randomized_faults", "test_spark_driver_sigkill_mid_write"} <= names
    assert "run_randomized" not in names


def test_recent_commits_follow_the_main_line_with_what_its_merges_brought(tmp_path: Path) -> None:
    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=tmp_path, capture_output=True, text=True, check=True)
        return done.stdout.strip()

    git("init", "-q", "-b", "main")
    git("config", "user.email", "t@example.com")
    git("config", "user.name", "t")
    for i in range(3):
        git("commit", "-q", "--allow-empty", "-m", f"old {i}")
    old = git("rev-parse", "HEAD")
    git("checkout", "-q", "-b", "helper")
    for i in range(5):  # a helper's small commits, merged as one step of the main line
        git("commit", "-q", "--allow-empty", "-m", f"helper {i}")
    helper = git("rev-parse", "HEAD")
    git("checkout", "-q", "main")
    git("commit", "-q", "--allow-empty", "-m", "main")
    git("merge", "-q", "--no-ff", "--no-edit", "helper")
    recent = recent_commits(2, repo=tmp_path)
    assert helper in recent and old not in recent
    assert len(recent) == 2 + 5  # the merge and "main", plus the helper's five
    assert recent_commits(50, repo=tmp_path) == tuple(git("rev-list", "HEAD").split())
