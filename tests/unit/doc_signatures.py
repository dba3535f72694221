"""The call signatures a document quotes, checked against the code with ``inspect.signature``.

A **signature quote** is a backticked ``name(params)`` or ``Class.name(params)``,
optionally ``-> Ret``, whose ``params`` parse as Python parameters (``a, b: T = d, *,
kw``); in an alias quote ``Alias = A(x) | B(y)`` each alternative is one. Quotes may
span lines. Anything else in backticks is prose and not checked here.

**Resolution** of the quoted name, first match wins (a quote that resolves to nothing
is left to the name check of ``test_docs_references.py``):

1. ``Class.name``: the class (found as in 4), then its attribute;
2. a module named in the same item (a bullet or paragraph), as a dotted
   ``airflow_provider_eo.x`` / ``eo_devtools.x`` or as a path tail ``ledger/x/y.py``:
   its attribute ``name``, if that module (or a package, one of its modules) defines it, not
   one it imports;
3. a method ``name`` of a class quoted earlier in the same group (a ``**Title**``
   paragraph and everything up to the next), the nearest such class first: methods
   quoted under a class resolve on that class;
4. the one module-level ``def`` or ``class`` called ``name`` in the modules of
   :data:`PACKAGES` (``__init__`` modules re-export, they do not define). Several:
   the quote is reported as ambiguous.

**Comparison**: the quoted positional parameters must be the first positional
parameters of the code, same names, same order; every quoted keyword-only parameter
(after ``*``) must be keyword-only in the code, in the code's order; a quoted
``*args`` / ``**kwargs`` must be the code's. A quote may stop early: every parameter
it leaves out must have a default (or be ``*args`` / ``**kwargs``), so the quote is a
call that works. Methods lose ``self`` / ``cls``. Annotations, defaults and return
types are NOT compared (they are prose about types); names, order and kinds are.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
#: The packages whose functions, methods and classes quotes are checked against.
PACKAGES = (REPO / "airflow_provider_eo", REPO / "devtools" / "eo_devtools")

_QUOTE = re.compile(r"`([^`]+)`")
_CALL = re.compile(
    r"^(?P<name>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)?)\((?P<params>.*)\)(?:\s*->\s*(?P<ret>.+))?$", re.S
)
_DOTTED_MODULE = re.compile(r"^(?:airflow_provider_eo|eo_devtools)(?:\.\w+)+$")
_MODULE_PATH = re.compile(r"^[\w/]+\.py$")
_BOLD_TITLE = re.compile(r"^\*\*[^*]+\*\*")


@dataclass(frozen=True)
class Quote:
    """One signature quote: its text (whitespace collapsed), name, parsed parameters and line."""

    text: str
    name: str
    params: ast.arguments
    line: int


@dataclass(frozen=True)
class Item:
    """A bullet or paragraph of a document: its text and first line."""

    text: str
    line: int


def section(text: str, heading_prefix: str) -> tuple[str, int]:
    """The section of ``text`` whose ``## `` heading starts with ``heading_prefix`` (up to
    the next ``## ``) and its first line number. Raises ValueError if there is none."""
    lines = text.splitlines()
    for start, line in enumerate(lines):
        if line.startswith(f"## {heading_prefix}"):
            end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
            return "\n".join(lines[start + 1 : end]), start + 2
    raise ValueError(f"no section '## {heading_prefix}...'")


def groups(text: str, first_line: int = 1) -> list[list[Item]]:
    """The items of ``text`` (bullets and paragraphs) grouped: a group starts at each
    paragraph opening with a ``**Title**``."""
    items: list[Item] = []
    current: list[str] = []
    start = first_line
    for number, line in enumerate([*text.splitlines(), ""], start=first_line):
        if not line.strip() or line.startswith("- "):
            if current:
                items.append(Item("\n".join(current), start))
            current, start = ([line], number) if line.startswith("- ") else ([], number + 1)
        else:
            if not current:
                start = number
            current.append(line)
    found: list[list[Item]] = []
    for item in items:
        if not found or _BOLD_TITLE.match(item.text):
            found.append([])
        found[-1].append(item)
    return found


def _split_alternatives(text: str) -> list[str]:
    """``A(x) | B(y: int | None)`` -> ``["A(x)", "B(y: int | None)"]`` (top-level ``|`` only)."""
    parts, depth, current = [], 0, ""
    for char in text:
        depth += char in "([{"
        depth -= char in ")]}"
        if char == "|" and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += char
    return [*parts, current.strip()]


def signature_quotes(quoted: str, line: int) -> list[Quote]:
    """The signature quotes in one backticked text (none when it is prose)."""
    text = " ".join(quoted.split())
    alias, equals, rest = text.partition(" = ")
    candidates = _split_alternatives(rest) if equals and re.fullmatch(r"[A-Za-z_]\w*", alias) else [text]
    found = []
    for candidate in candidates:
        match = _CALL.match(candidate)
        if not match:
            continue
        returns = f" -> {match['ret']}" if match["ret"] else ""
        try:
            tree = ast.parse(f"def _quoted({match['params']}){returns}: ...")
        except SyntaxError:
            continue
        function = tree.body[0]
        assert isinstance(function, ast.FunctionDef)
        found.append(Quote(candidate, match["name"], function.args, line))
    return found


def quotes_of(item: Item) -> Iterator[tuple[str, int]]:
    """Every backticked text of ``item`` with the line it starts on."""
    for match in _QUOTE.finditer(item.text):
        yield match.group(1), item.line + item.text.count("\n", 0, match.start())


@cache
def module_definitions() -> dict[str, frozenset[str]]:
    """Dotted module -> the names its top level defines with ``def`` or ``class``."""
    found = {}
    for package in PACKAGES:
        for path in package.rglob("*.py"):
            if path.name == "__init__.py":
                continue
            dotted = ".".join(path.relative_to(package.parent).with_suffix("").parts)
            body = ast.parse(path.read_text(encoding="utf-8")).body
            defined = {
                n.name for n in body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            }
            found[dotted] = frozenset(defined)
    return found


def _named_module(quoted: str) -> str | None:
    """The dotted module a backticked text names (dotted or as a path tail), if any."""
    text = quoted.strip()
    if _DOTTED_MODULE.match(text):
        return text
    if _MODULE_PATH.match(text):
        tail = text.removesuffix(".py").replace("/", ".")
        matches = [m for m in module_definitions() if m == tail or m.endswith(f".{tail}")]
        return matches[0] if len(matches) == 1 else None
    return None


def _attribute(module: str, name: str) -> Any:
    try:
        return getattr(importlib.import_module(module), name, None)
    except ImportError:
        return None


def package_definition(name: str) -> tuple[Any, list[str]]:
    """The one module-level def/class ``name`` of :data:`PACKAGES` (None if not exactly
    one) and the modules defining it."""
    where = sorted(m for m, names in module_definitions().items() if name in names)
    return (_attribute(where[0], name) if len(where) == 1 else None), where


@dataclass
class Resolved:
    """What a quote names in the code: the object, how to call it, what to print."""

    target: Any
    qualname: str
    owner: type | None = None  # the class it is an attribute of (a method loses self / cls)


class Resolver:
    """Resolves the quotes of one group (module docstring, "Resolution")."""

    def __init__(self) -> None:
        self.classes: list[type] = []  # quoted earlier in the group, nearest last

    def resolve(self, quote: Quote, item_modules: list[str]) -> Resolved | str | None:
        """The code the quote names, a reason it names nothing unique, or None (not the
        package's)."""
        owner, _, name = quote.name.rpartition(".")
        if owner:
            cls, where = package_definition(owner)
            if not inspect.isclass(cls):
                return f"{owner} is not one class of the package ({where or 'undefined'})"
            if not hasattr(cls, name):
                return f"{owner} has no attribute {name}"
            return Resolved(getattr(cls, name), f"{cls.__module__}.{owner}.{name}", cls)
        for module in item_modules:
            found = _attribute(module, name)
            defined_here = str(getattr(found, "__module__", "")).startswith(
                module
            )  # or its package re-exports it
            if defined_here and (inspect.isfunction(found) or inspect.isclass(found)):
                return self._note(Resolved(found, f"{found.__module__}.{name}"))
        for cls in reversed(self.classes):
            if callable(getattr(cls, name, None)):
                return Resolved(getattr(cls, name), f"{cls.__module__}.{cls.__qualname__}.{name}", cls)
        found, where = package_definition(name)
        if len(where) > 1:
            return f"{name} is defined in several modules ({', '.join(where)}): name its module in the item"
        if found is None:
            return None
        return self._note(Resolved(found, f"{found.__module__}.{name}"))

    def note_class(self, name: str, item_modules: list[str]) -> None:
        """Remember ``name`` (a bare quoted name) as a class of the group, if it is one."""
        for module in item_modules:
            found = _attribute(module, name)
            if inspect.isclass(found):
                self.classes.append(found)
                return
        found, _ = package_definition(name)
        if inspect.isclass(found):
            self.classes.append(found)

    def _note(self, resolved: Resolved) -> Resolved:
        """``resolved``, remembered as a class of the group if it is one."""
        if inspect.isclass(resolved.target):
            self.classes.append(resolved.target)
        return resolved


def _code_parameters(resolved: Resolved) -> list[inspect.Parameter]:
    """The parameters a caller passes (``self`` / ``cls`` of a method left out)."""
    parameters = list(inspect.signature(resolved.target).parameters.values())
    if resolved.owner is None or not inspect.isfunction(resolved.target) or not parameters:
        return parameters
    static = isinstance(inspect.getattr_static(resolved.owner, resolved.target.__name__, None), staticmethod)
    return parameters if static else parameters[1:]


_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def mismatch(quote: Quote, parameters: list[inspect.Parameter]) -> str | None:
    """Why ``quote`` does not fit the code's ``parameters`` (module docstring,
    "Comparison"), or None when it fits."""
    args = quote.params
    positional = [a.arg for a in [*args.posonlyargs, *args.args]]
    keyword_only = [a.arg for a in args.kwonlyargs]
    code_positional = [p.name for p in parameters if p.kind in _POSITIONAL]
    code_keyword_only = [p.name for p in parameters if p.kind is inspect.Parameter.KEYWORD_ONLY]
    if positional != code_positional[: len(positional)]:
        return f"positional parameters {positional} are not the code's first {code_positional}"
    missing = [k for k in keyword_only if k not in code_keyword_only]
    if missing:
        return f"{missing} are not keyword-only in the code (keyword-only: {code_keyword_only})"
    if keyword_only != [k for k in code_keyword_only if k in keyword_only]:
        return f"keyword-only {keyword_only} are not in the code's order {code_keyword_only}"
    for quoted, kind in (
        (args.vararg, inspect.Parameter.VAR_POSITIONAL),
        (args.kwarg, inspect.Parameter.VAR_KEYWORD),
    ):
        code = [p.name for p in parameters if p.kind is kind]
        if quoted is not None and [quoted.arg] != code:
            return f"*{quoted.arg} / **{quoted.arg} is not the code's ({code or 'none'})"
    named = {*positional, *keyword_only}
    left_out = [
        p.name
        for p in parameters
        if p.name not in named
        and p.default is inspect.Parameter.empty
        and p.kind in (*_POSITIONAL, p.KEYWORD_ONLY)
    ]
    if left_out:
        return f"leaves out {left_out}, which have no default"
    return None


def _annotation(value: Any) -> str:
    return value if isinstance(value, str) else inspect.formatannotation(value)


def format_signature(name: str, parameters: list[inspect.Parameter], returns: Any) -> str:
    """``name(a: T, b: U = 1, *, c: V = None) -> R`` as a document would quote it."""
    shown: list[str] = []
    star_written = False
    for index, p in enumerate(parameters):
        if p.kind is p.KEYWORD_ONLY and not star_written:
            shown.append("*")
        star_written = star_written or p.kind in (p.KEYWORD_ONLY, p.VAR_POSITIONAL)
        text = {p.VAR_POSITIONAL: f"*{p.name}", p.VAR_KEYWORD: f"**{p.name}"}.get(p.kind, p.name)
        if p.annotation is not p.empty:
            text += f": {_annotation(p.annotation)}"
        if p.default is not p.empty:
            text += f" = {p.default!r}"
        shown.append(text)
        last_positional_only = p.kind is p.POSITIONAL_ONLY and (
            index + 1 == len(parameters) or parameters[index + 1].kind is not p.POSITIONAL_ONLY
        )
        if last_positional_only:
            shown.append("/")
    arrow = "" if returns is inspect.Signature.empty else f" -> {_annotation(returns)}"
    return f"{name}({', '.join(shown)}){arrow}"


def section_headings(text: str) -> list[str]:
    """The ``## `` headings of ``text``, in order (without the ``## ``)."""
    return [line[3:] for line in text.splitlines() if line.startswith("## ")]


def resolutions(text: str, heading_prefix: str) -> list[tuple[Quote, Resolved | str | None]]:
    """Every signature quote of the section of ``text`` whose heading starts with
    ``heading_prefix``, in order, with what it names (:meth:`Resolver.resolve`)."""
    body, first_line = section(text, heading_prefix)
    found: list[tuple[Quote, Resolved | str | None]] = []
    for group in groups(body, first_line):
        resolver = Resolver()
        for item in group:
            named = [m for quoted, _ in quotes_of(item) if (m := _named_module(quoted))]
            for quoted, line in quotes_of(item):
                quotes = signature_quotes(quoted, line)
                if not quotes and re.fullmatch(r"[A-Z]\w*", quoted.strip()):
                    resolver.note_class(quoted.strip(), named)
                found.extend((quote, resolver.resolve(quote, named)) for quote in quotes)
    return found


def signature_mismatches(
    text: str, heading_prefix: str, label: str, *, outside_names: bool = True
) -> list[str]:
    """Every signature quote of that section that does not fit the code, as
    ``label:line: `quote`: why; the code (qualified name): its signature``, in order.
    Empty when every quote fits. ``outside_names=False``: a ``Name.method(...)`` quote whose
    ``Name`` the package does not define (``json.dumps``, ``dag.test``) is another library's
    and not reported."""
    problems = []
    for quote, resolved in resolutions(text, heading_prefix):
        where = f"{label}:{quote.line}: `{quote.text}`"
        if isinstance(resolved, str):
            if not outside_names and resolved.endswith("(undefined)"):
                continue
            problems.append(f"{where}: {resolved}")
        elif resolved is not None:
            problems.extend(f"{where}: {why}" for why in _compared(quote, resolved))
    return problems


def _compared(quote: Quote, resolved: Resolved) -> list[str]:
    """Why ``quote`` does not fit what it names, with the code's signature (empty: it fits)."""
    try:
        signature = inspect.signature(resolved.target)
    except (TypeError, ValueError):
        return [f"{resolved.qualname} has no signature"]
    parameters = _code_parameters(resolved)
    why = mismatch(quote, parameters)
    if why is None:
        return []
    returns: Any = (
        inspect.Signature.empty if inspect.isclass(resolved.target) else signature.return_annotation
    )
    shown = ".".join(resolved.qualname.rsplit(".", 2 if resolved.owner else 1)[1:])
    return [f"{why}; the code ({resolved.qualname}): {format_signature(shown, parameters, returns)}"]
