"""The documents tell the truth about the repository: every path and module they name exists.

Checked documents: README.md, RELIABILITY.md, docs/*.md and docker/README.md. In them:

* a **repository path** is a word whose first segment is a top-level entry of the
  repository (``docs/spark.md``, ``tests/faults/``, ``scripts/setup.sh``): it must be a
  file or folder of the repository. A word of several segments ending in a source
  extension whose first segment is not top-level (``ledger/protocol/epoch_protocol.py``,
  ``spark/driver/write_epoch.py``: paths inside a package) must be the tail of one; so must a single
  ``*.py`` / ``*.md`` name. Placeholders (``<name>``, ``{id}``, ``NNNN``, ``*``, ``...``)
  match any one segment. Words with ``:``, ``=``, ``$``, ``~`` or a leading ``/`` are
  not repository paths (URLs, ``host:port/db``, absolute paths, shell variables).
* a **dotted module reference** ``airflow_provider_eo.x.y``, ``eo_devtools.x`` or
  ``tests.x`` (optionally ``module:attribute``) must import, its tail as attributes.

* a **quoted name** (in backticks) that looks like code (``CamelCase``, ``name(...)``,
  ``Class.attribute``) must be defined in the repository's Python (a class, a function, an
  assignment, a ``self.`` attribute), be a Python builtin, or start with one of
  :data:`EXTERNAL_NAMES` (what Airflow, Kafka, HBase, Spark and the standard library define).

``docs/ARCHITECTURE.md`` section 5 "Interfaces" quotes **call signatures**
(``name(param, param: Type = default, *, kw) -> Ret``): each that names a function,
method or class of the package must fit the code's ``inspect.signature`` (parameter
names, their order and keyword-only markers; a quote may stop after a prefix of the
parameters when the rest have defaults; annotations, defaults and return types are not
compared). How quotes are found, resolved (a method quoted under a class resolves on
that class) and compared: :mod:`tests.unit.doc_signatures`. A failure lists every
mismatching quote with its line and the code's real signature.

``docs/ARCHITECTURE.md`` must also name every module (``*.py`` but ``__init__.py``, the
migrations, the poms) of the two distributions, and no file of the repository may point
at a sibling checkout outside it.
"""

from __future__ import annotations

import ast
import builtins
import fnmatch
import importlib
import importlib.util
import inspect
import re
import subprocess
from functools import cache
from pathlib import Path

import pytest

from tests.unit.doc_signatures import format_signature, resolutions, section_headings, signature_mismatches

REPO = Path(__file__).resolve().parents[2]
DOCUMENTS = sorted(
    [REPO / "README.md", REPO / "RELIABILITY.md", REPO / "docker" / "README.md", *REPO.glob("docs/*.md")]
)
#: Paths the documents name on purpose although the repository must never hold them.
NOT_IN_REPOSITORY = frozenset({"docker/.env"})  # the compose stack's secrets, written by the user
SOURCE_EXTENSIONS = ("py", "md", "sql", "sh", "xml", "yaml", "yml", "json", "toml", "java", "txt")
PACKAGE_ROOTS = ("airflow_provider_eo", "devtools", "devtools/eo_devtools")

_WORD_EDGE = "`'\"()[]{},;:!?|*"
_PLACEHOLDER = re.compile(r"<[^<>/]*>|\{[^{}/]*\}|NNNN|^(?:\.\.\.|…)$")
_PATH_WORD = re.compile(r"[A-Za-z0-9_.*<>{}…-]+(?:/[A-Za-z0-9_.*<>{}…-]+)*/?")
_LINK = re.compile(r"\]\(([^)\s]+)\)")
_MODULE = re.compile(
    r"(?<![\w./-])((?:airflow_provider_eo|eo_devtools|tests)(?:\.[A-Za-z_]\w*)+)(?::(\w+))?(?![\w-]|\.\w)"
)


_QUOTED = re.compile(r"`([^`\n]+)`")
_CODE_NAME = re.compile(
    r"^(?:[A-Z][a-z0-9]+(?:[A-Z][A-Za-z0-9]*)+|[A-Za-z_]\w*\(.*\)|[A-Z][A-Za-z0-9]+\.[a-z_]\w*(?:\(.*\))?)$"
)
#: Names the documents quote that other projects define (and file names that look like code).
EXTERNAL_NAMES = frozenset(
    {
        "AirflowSkipException", "AlterConsumerGroupOffsets", "Asset", "BaseHook", "ColumnDescriptor",
        "Dockerfile", "NaN", "OutOfMemoryError", "SimpleAuthManager", "SparkSubmitHook", "BaseOperator",
        "SparkSubmitOperator", "Table", "ceil", "get_parsing_context",
        # confluent-kafka's and protobuf's (docs/formats.md)
        "AvroDeserializer", "ProtobufDeserializer", "SchemaRegistryClient", "MessageToDict",
        "GetMessageClass", "FileDescriptorProto", "Int64Value", "StringValue", "ListValue",
        # confluent-kafka's transactional producer (docs/dead_letters.md)
        "init_transactions", "send_offsets_to_transaction", "commit_transaction",
        # the OpenLineage client's (docs/lineage.md)
        "RunFacet",
    }
)  # fmt: skip
CODE_ROOTS = ("airflow_provider_eo", "devtools", "tests", "benchmarks")


@cache
def defined_names() -> frozenset[str]:
    """Every class, function, assigned name and ``self.`` attribute of the repository's Python."""
    names: set[str] = set()
    for root in CODE_ROOTS:
        for path in (REPO / root).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                    names.add(node.name)
                targets = node.targets if isinstance(node, ast.Assign) else []
                if isinstance(node, ast.AnnAssign):
                    targets = [node.target]
                for target in targets:
                    if isinstance(target, ast.Name):
                        names.add(target.id)
                    elif isinstance(target, ast.Attribute):
                        names.add(target.attr)
    return frozenset(names)


def unknown_names(text: str) -> list[str]:
    """Quoted code-like names (module docstring) that nothing defines, in order."""
    unknown = []
    for quoted in _QUOTED.findall(text):
        name = quoted.strip().split("(")[0]
        if not _CODE_NAME.match(quoted.strip()) or name.rsplit(".", 1)[-1] in SOURCE_EXTENSIONS:
            continue
        parts = name.split(".")
        if parts[0] in EXTERNAL_NAMES or hasattr(builtins, parts[0]):
            continue
        if not all(part in defined_names() for part in parts):
            unknown.append(quoted.strip())
    return unknown


@cache
def repository_files() -> tuple[str, ...]:
    """Tracked files plus new, not ignored ones (what the next commit may hold)."""
    out = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=REPO, check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    return tuple(sorted({name for name in out.split("\0") if name and (REPO / name).exists()}))


@cache
def repository_entries() -> tuple[tuple[str, ...], ...]:
    """Every file and folder of the repository, as segment tuples."""
    entries: set[tuple[str, ...]] = set()
    for name in repository_files():
        parts = tuple(name.split("/"))
        entries.update(parts[:end] for end in range(1, len(parts) + 1))
    return tuple(sorted(entries))


def path_words(text: str) -> list[str]:
    """The words of ``text`` (and link targets) that name repository paths (module docstring)."""
    top_level = {entry[0] for entry in repository_entries()}
    found = []
    for raw in [*text.split(), *_LINK.findall(text)]:
        word = raw.split("#", 1)[0].split("::", 1)[0].lstrip(_WORD_EDGE).rstrip(_WORD_EDGE + ".")
        word = word.removeprefix(".../").removeprefix("…/")
        if _names_a_path(word, top_level):
            found.append(word)
    return found


def _names_a_path(word: str, top_level: set[str]) -> bool:
    if not word or word[0] in "/~$" or re.search(r"[:=$@]|//", word) or not _PATH_WORD.fullmatch(word):
        return False
    segments = word.rstrip("/").split("/")
    extension = segments[-1].rsplit(".", 1)[-1] if "." in segments[-1].lstrip(".") else ""
    if segments[0] in top_level:
        return len(segments) > 1 or bool(extension) or word.endswith("/")
    return extension in (SOURCE_EXTENSIONS if len(segments) > 1 else ("py", "md"))


def resolves(word: str) -> bool:
    """Whether ``word`` names an entry of the repository: from the root or a package root
    when its first segment is a top-level entry, else as the tail of one."""
    pattern = [_PLACEHOLDER.sub("*", segment) for segment in word.rstrip("/").split("/")]
    anchored = (pattern[0],) in repository_entries()
    prefixes = [(), *(tuple(root.split("/")) for root in PACKAGE_ROOTS)] if anchored else None
    for entry in repository_entries():
        candidates = (
            [entry[len(p) :] for p in prefixes if entry[: len(p)] == p]
            if prefixes
            else [entry[-len(pattern) :]]
        )
        for candidate in candidates:
            if len(candidate) == len(pattern) and all(map(fnmatch.fnmatchcase, candidate, pattern)):
                return True
    return False


def broken_paths(text: str) -> list[str]:
    """Repository paths named in ``text`` that do not exist."""
    return [w for w in path_words(text) if w.rstrip("/") not in NOT_IN_REPOSITORY and not resolves(w)]


def module_references(text: str) -> list[str]:
    """Dotted module references in ``text`` (``module:attribute`` written with a dot)."""
    return [f"{name}.{attr}" if attr else name for name, attr in _MODULE.findall(text)]


def importable(reference: str) -> bool:
    """Whether the longest importable prefix of ``reference`` has the rest as attributes."""
    parts = reference.split(".")
    for end in range(len(parts), 0, -1):
        try:
            spec = importlib.util.find_spec(".".join(parts[:end]))
        except ModuleNotFoundError:
            spec = None
        if spec is None:
            continue
        target: object = importlib.import_module(".".join(parts[:end]))
        for attribute in parts[end:]:
            if not hasattr(target, attribute):
                return False
            target = getattr(target, attribute)
        return True
    return False


def _doc_id(path: Path) -> str:
    return str(path.relative_to(REPO))


@pytest.mark.parametrize("document", DOCUMENTS, ids=_doc_id)
def test_every_repository_path_a_document_names_exists(document: Path) -> None:
    assert broken_paths(document.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize("document", DOCUMENTS, ids=_doc_id)
def test_every_module_a_document_names_imports(document: Path) -> None:
    references = sorted(set(module_references(document.read_text(encoding="utf-8"))))
    assert [ref for ref in references if not importable(ref)] == []


@pytest.mark.parametrize("document", DOCUMENTS, ids=_doc_id)
def test_every_name_a_document_quotes_exists(document: Path) -> None:
    assert unknown_names(document.read_text(encoding="utf-8")) == []


def test_the_name_check_catches_names_that_no_longer_exist() -> None:
    text = (
        "`EpochProtocol.reserve_stream(spec, run)`, `EpochProtocol.rotate_everything()`, `ValueError`,"
        " `SparkSubmitOperator`, `ReservationOutcome`, `plan_stream(...)`, `docs/spark.md`, `batch_bytes`,"
        " `RELIABILITY.md`, `gone_function(x)`"
    )
    assert unknown_names(text) == [
        "EpochProtocol.rotate_everything()",
        "ReservationOutcome",
        "gone_function(x)",
    ]


def test_the_checks_catch_stale_references() -> None:
    text = (
        "Start at `airflow_provider_eo/ledger/protocol/epoch_protocol.py`"
        " (not `airflow_provider_eo/ledger/cli.py`); `ledger/cli_commands.py`,"
        " [faults](docs/faults.md), [gone](docs/gone.md#x), `spark/driver/write_epoch.py`,"
        " `devtools/eo_devtools/stack/jvm/<component>/pom.xml`, `tests/faults/...`, `faults.py`,"
        " `host:9092/db`, `DIR/kafka/server.properties`, `/tmp/s`, `~/.cache/x.py`."
    )
    assert broken_paths(text) == [
        "airflow_provider_eo/ledger/cli.py",
        "ledger/cli_commands.py",
        "faults.py",
        "docs/gone.md",
    ]
    refs = (
        "`airflow_provider_eo.ledger.protocol.epoch_protocol.EpochProtocol`, `airflow_provider_eo.demo`,"
        " `tests.faults.crash_points:handle`, airflow_provider_eo.egg-info."
    )
    assert module_references(refs) == [
        "airflow_provider_eo.ledger.protocol.epoch_protocol.EpochProtocol",
        "airflow_provider_eo.demo",
        "tests.faults.crash_points.handle",
    ]
    assert [importable(ref) for ref in module_references(refs)] == [True, False, True]


def test_architecture_names_every_module() -> None:
    named = [
        word.rstrip("/").split("/") for word in path_words((REPO / "docs" / "ARCHITECTURE.md").read_text())
    ]
    modules = [
        name
        for name in repository_files()
        if name.startswith(tuple(f"{root}/" for root in PACKAGE_ROOTS))
        and name.endswith((".py", ".sql", ".xml"))
        and not name.endswith("__init__.py")
    ]
    unnamed = [
        module
        for module in modules
        if not any(tuple(module.split("/")[-len(word) :]) == tuple(word) for word in named)
    ]
    assert unnamed == []


def test_nothing_points_outside_the_repository() -> None:
    sibling = "/".join(("..", "shared"))
    offenders = []
    for name in repository_files():
        data = (REPO / name).read_bytes()
        if b"\0" not in data and sibling.encode() in data:
            offenders.append(name)
    assert offenders == []


def test_architecture_interfaces_quote_the_code_signatures() -> None:
    text = (REPO / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    mismatches = signature_mismatches(text, "5. Interfaces", "docs/ARCHITECTURE.md")
    assert not mismatches, "quotes that do not fit the code:\n" + "\n".join(mismatches)
    resolved = {
        quote.text: getattr(found, "qualname", found) for quote, found in resolutions(text, "5. Interfaces")
    }
    protocol = "airflow_provider_eo.ledger.protocol.epoch_protocol.EpochProtocol"
    assert resolved["reserve_stream(spec: PipelineSpec, run: RunIdentity) -> Reservation"] == (
        f"{protocol}.reserve_stream"
    )  # a method quoted under its class resolves on it
    assert resolved["get_ledger() -> Ledger"] == "airflow_provider_eo.hooks.ledger.EoLedgerHook.get_ledger"


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: str(path.relative_to(REPO)))
def test_every_document_quotes_the_code_signatures(document: Path) -> None:
    """Every section of every document: a signature quote of the package's code fits it
    (quotes of other libraries' calls, ``json.dumps(...)``, ``dag.test()``, are left out)."""
    text = document.read_text(encoding="utf-8")
    label = str(document.relative_to(REPO))
    mismatches = [
        problem
        for heading in section_headings(text)
        for problem in signature_mismatches(text, heading, label, outside_names=False)
    ]
    assert not mismatches, "quotes that do not fit the code:\n" + "\n".join(mismatches)


_WRONG_QUOTES = """\
# Title

## 5. Interfaces (test)

**Protocol** (`airflow_provider_eo.ledger.protocol.epoch_protocol`):

- `EpochProtocol(ledger, kafka)`; `reserve_stream(run: RunIdentity,
  spec: PipelineSpec) -> Reservation`, `commit(epoch_id, group_id, pipeline=None)`,
  `abort(epoch_id: int, reason: str, *, allow_written: bool = False) -> Epoch`.
- Fencing: `WritePermission = WriteLease(epoch, fencing_token) | Fenced(token_mismatch)`.

**Store**: `Ledger(dsn, conn_id=None)`, `get_epoch()`,
`Ledger.abort(epoch_id, reason, *, allow_written=False)`, `split_into_chunks(ranges)`,
`Epoch(epoch_id)`, `len(x)`, `no_such_function(a, b)`, `Ledger.migrate(*, pipeline)`.

## 6. Next
`get_epoch()`
"""


def test_the_signature_check_catches_wrong_quotes() -> None:
    found = signature_mismatches(_WRONG_QUOTES, "5. Interfaces", "doc.md")
    assert [problem.split("; the code")[0] for problem in found] == [
        "doc.md:7: `reserve_stream(run: RunIdentity, spec: PipelineSpec) -> Reservation`:"
        " positional parameters ['run', 'spec'] are not the code's first ['spec', 'run']",
        "doc.md:8: `commit(epoch_id, group_id, pipeline=None)`:"
        " positional parameters ['epoch_id', 'group_id', 'pipeline'] are not the code's first ['epoch_id']",
        "doc.md:10: `Fenced(token_mismatch)`: positional parameters ['token_mismatch'] are not"
        " the code's first ['epoch', 'token_mismatch', 'writer_digest']",
        "doc.md:12: `Ledger(dsn, conn_id=None)`: positional parameters ['dsn', 'conn_id'] are not the code's"
        " first ['dsn']",
        "doc.md:12: `get_epoch()`: leaves out ['epoch_id'], which have no default",
        "doc.md:13: `split_into_chunks(ranges)`: leaves out ['max_records'], which have no default",
        "doc.md:14: `Epoch(epoch_id)`: Epoch is defined in several modules"
        " (airflow_provider_eo.ledger.model.epoch, airflow_provider_eo.plugins.api_models):"
        " name its module in the item",
        "doc.md:14: `Ledger.migrate(*, pipeline)`: ['pipeline'] are not keyword-only in the code"
        " (keyword-only: [])",
    ]
    assert found[0].endswith(
        "; the code (airflow_provider_eo.ledger.protocol.epoch_protocol.EpochProtocol.reserve_stream):"
        " EpochProtocol.reserve_stream(spec: PipelineSpec, run: RunIdentity) -> Reservation"
    )
    assert found[3].startswith(
        "doc.md:12: `Ledger(dsn, conn_id=None)`: positional parameters ['dsn', 'conn_id'] are not the code's"
        " first ['dsn']; the code (airflow_provider_eo.ledger.store.postgres_ledger.Ledger):"
        " Ledger(dsn: str | Callable[[], Any], *, auto_migrate: bool = True, conn_id: str | None = None"
    )


def test_a_signature_is_shown_as_a_document_would_quote_it() -> None:
    def sample(a: int, /, b: str = "x", *more: int, c: bool, d: None = None, **rest: object) -> list[int]:
        return []

    parameters = list(inspect.signature(sample).parameters.values())
    returned = inspect.signature(sample).return_annotation
    assert format_signature("sample", parameters, returned) == (
        "sample(a: int, /, b: str = 'x', *more: int, c: bool, d: None = None, **rest: object) -> list[int]"
    )
