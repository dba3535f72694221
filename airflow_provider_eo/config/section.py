"""A checked view of one YAML mapping: typed field access and unknown-key detection.

Every accessor records the key as known; :meth:`Section.finish` then rejects any key
that no accessor asked for, so a typo never silently falls back to a default.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, NoReturn

from airflow_provider_eo.config.config_errors import PipelineConfigError

_MISSING: Any = object()
#: ISO control characters (newline, tab, NUL, ...): never part of a name, a path or an id.
CONTROL_CHARS = re.compile(r"[\x00-\x1f\x7f-\x9f]")


class Section:
    """Fields of one mapping at ``prefix`` inside ``pipeline`` of ``file``."""

    def __init__(self, data: Any, *, file: str, pipeline: str | None, prefix: str = "") -> None:
        self.file = file
        self.pipeline = pipeline
        self.prefix = prefix
        if not isinstance(data, Mapping):
            self.fail_at(prefix or None, f"must be a mapping, got {type(data).__name__}")
        self._data: Mapping[Any, Any] = data
        self._known: set[str] = set()

    def path(self, key: str) -> str:
        """The dotted field path of ``key``."""
        return f"{self.prefix}.{key}" if self.prefix else key

    def fail_at(self, field: str | None, problem: str) -> NoReturn:
        """Raise the error naming file, pipeline and ``field``."""
        raise PipelineConfigError(self.file, self.pipeline, field, problem)

    def fail(self, key: str, problem: str) -> NoReturn:
        """Raise the error for ``key`` of this section."""
        self.fail_at(self.path(key), problem)

    def raw(self, key: str, default: Any = _MISSING) -> Any:
        """The value at ``key`` (``default`` if absent or null; required if no default)."""
        self._known.add(key)
        value = self._data.get(key)
        if value is None:
            if default is _MISSING:
                self.fail(key, "is required")
            return default
        return value

    def string(self, key: str, default: Any = _MISSING) -> Any:
        """A non-empty string without control characters."""
        value = self.raw(key, default)
        if value is default and default is not _MISSING:
            return value
        if not isinstance(value, str) or not value.strip():
            self.fail(key, f"must be a non-empty string, got {value!r}")
        if CONTROL_CHARS.search(value):
            self.fail(key, f"must not contain control characters (newline, tab, NUL...), got {value!r}")
        return value

    def integer(
        self, key: str, default: Any = _MISSING, *, minimum: int = 1, maximum: int | None = None
    ) -> Any:
        """An integer ``>= minimum`` (and ``<= maximum`` if given; booleans are rejected)."""
        value = self.raw(key, default)
        if value is default and default is not _MISSING:
            return value
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            self.fail(key, f"must be an integer >= {minimum}, got {value!r}")
        if maximum is not None and value > maximum:
            self.fail(key, f"must be an integer <= {maximum}, got {value!r}")
        return value

    def choice(self, key: str, choices: Iterable[str], default: Any = _MISSING) -> Any:
        """One of ``choices``."""
        allowed = list(choices)
        value = self.raw(key, default)
        if value not in allowed:
            self.fail(key, f"must be one of {', '.join(allowed)}, got {value!r}")
        return value

    def child(self, key: str) -> Section:
        """The nested mapping at ``key`` (an empty one when absent)."""
        return Section(self.raw(key, {}), file=self.file, pipeline=self.pipeline, prefix=self.path(key))

    def finish(self) -> None:
        """Reject keys no accessor asked for."""
        unknown = sorted(str(key) for key in self._data if key not in self._known)
        if unknown:
            self.fail_at(
                self.path(unknown[0]),
                f"unknown key (allowed here: {', '.join(sorted(self._known))})",
            )
