"""A local-stack service that is a JVM: classpath from the pinned poms, bounded heap."""

from __future__ import annotations

from abc import abstractmethod
from pathlib import Path

from eo_devtools.stack.jvm_artifacts import classpath, java_binary, resolve
from eo_devtools.stack.service import Service


class JavaService(Service):
    """Runs ``main_class`` of ``component``'s jars, its heap capped at ``heap`` (G1 collector).

    Subclasses add configuration files in :meth:`prepare`, name the directories that go on
    the classpath before the jars (:meth:`config_dirs`) and the program's arguments.
    """

    component: str = ""
    main_class: str = ""
    heap: str = "512m"

    def preflight(self) -> None:
        """A Java 17+ runtime and the component's jars (resolved with Maven when not cached)."""
        java_binary()
        resolve(self.component)

    def config_dirs(self) -> list[Path]:
        """Directories put on the classpath ahead of the jars (configuration files)."""
        return []

    def jvm_options(self) -> list[str]:
        """Extra JVM options (system properties, ``--add-opens``)."""
        return []

    @abstractmethod
    def program_args(self) -> list[str]:
        """Arguments after the main class. No secrets."""

    def argv(self) -> list[str]:
        return [
            java_binary(),
            f"-Xmx{self.heap}",
            "-XX:+UseG1GC",
            "-Djava.awt.headless=true",
            *self.jvm_options(),
            "-cp",
            classpath(self.component, *self.config_dirs()),
            self.main_class,
            *self.program_args(),
        ]
