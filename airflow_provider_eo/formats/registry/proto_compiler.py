""".proto source text from the registry -> a descriptor pool, compiled by protoc in-process.

Apicurio returns a Protobuf schema as it was registered: Confluent's Java serializer, Go
producers and most users register ``.proto`` source text, not the base64
``FileDescriptorProto`` confluent-kafka's Python serializer registers. Such a schema is
compiled here with grpcio-tools' bundled ``protoc`` (``grpc_tools.protoc``): the text and
its schema references (fetched through the caller's client, recursively; a reference's
``name`` is its import path) are written into a temporary directory and compiled with
``--include_imports --descriptor_set_out``; the well-known types (``google/protobuf/*.proto``)
come from grpcio-tools' own include directory. A reference the registry returns as a base64
``FileDescriptorProto`` (registered by confluent-kafka's Python serializer) is given to
protoc as a descriptor (``--descriptor_set_in``) under its reference name. Every file of the resulting
``FileDescriptorSet`` goes into a fresh ``DescriptorPool``.

protoc writes its diagnostics to file descriptor 2: for the few milliseconds of a compile
the process's fd 2 is redirected to a temporary file (under a lock, so two threads of one
process never compile at once) and restored; what protoc wrote is written back to fd 2.
Callers compile once per schema id (the decoder through ``SchemaCache.parsed``).
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import os
import tempfile
import threading
from collections.abc import Iterator
from importlib import resources
from pathlib import Path, PurePosixPath
from typing import Any

from confluent_kafka.schema_registry import Schema
from google.protobuf import descriptor_pb2
from google.protobuf.descriptor_pool import DescriptorPool

from airflow_provider_eo.errors import BadRecord, RegistryAccessError

_PROTOC_LOCK = threading.Lock()


def well_known_types_dir() -> str:
    """grpcio-tools' include directory holding ``google/protobuf/*.proto``."""
    return str(resources.files("grpc_tools").joinpath("_proto"))


def compile_proto_text(
    schema: Schema, client: Any, where: str, file_name: str
) -> tuple[DescriptorPool, descriptor_pb2.FileDescriptorProto]:
    """A pool holding ``schema`` (compiled as ``file_name``), its references and the
    well-known types it imports, and the schema's own ``FileDescriptorProto``.

    ``client`` is a :class:`SchemaCache` or a ``SchemaRegistryClient`` (its ``get_version``
    resolves the references). Raises BadRecord prefixed with ``where`` when a reference name
    is not a relative import path or the text does not compile (the reason quotes protoc's
    first error line); RegistryUnavailable / RegistryRefused / BadRecord from the client when
    a reference cannot be fetched.
    """
    with tempfile.TemporaryDirectory(prefix="eo-proto-") as work:
        root = Path(work) / "src"
        _target(root, file_name, where).write_text(schema.schema_str or "", encoding="utf-8")
        described = descriptor_pb2.FileDescriptorSet()
        _write_references(root, schema, client, where, {file_name}, described)
        out = Path(work) / "schema.desc"
        argv = ["protoc", f"--proto_path={root}", f"--proto_path={well_known_types_dir()}"]
        if described.file:
            given = Path(work) / "references.desc"
            given.write_bytes(described.SerializeToString())
            argv.append(f"--descriptor_set_in={given}")
        code, diagnostics = _run_protoc(
            [*argv, "--include_imports", f"--descriptor_set_out={out}", file_name]
        )
        if code != 0 or not out.exists():
            lines = [line.replace(f"{root}/", "") for line in diagnostics.splitlines() if line.strip()]
            first = lines[0] if lines else f"protoc exit {code}"  # file names as imported, not on disk
            raise BadRecord(f"{where}: the registry's .proto text does not compile: {first}")
        files = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes()).file
    pool = DescriptorPool()
    try:
        for file_proto in files:  # dependencies first (protoc's order)
            pool.Add(file_proto)
    except Exception as exc:  # protoc accepted it; the runtime disagrees (should not happen)
        raise BadRecord(f"{where}: the compiled Protobuf schema does not load: {exc}") from None
    main = next(f for f in files if f.name == file_name)
    return pool, main


def _write_references(
    root: Path,
    schema: Schema,
    client: Any,
    where: str,
    seen: set[str],
    described: descriptor_pb2.FileDescriptorSet,
) -> None:
    """Write ``schema``'s references (recursively) under ``root``; base64 ones go to ``described``."""
    for reference in schema.references or []:
        name = reference.name or ""
        if name in seen:
            continue
        seen.add(name)
        target = _target(root, name, where)
        try:
            found = client.get_version(reference.subject, reference.version)
        except (RegistryAccessError, BadRecord):
            raise
        except Exception as exc:
            raise BadRecord(f"{where}: schema reference {name!r} does not resolve: {exc}") from None
        text = found.schema.schema_str or ""
        if is_base64(text):
            try:
                file_proto = descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(text))
            except Exception as exc:  # DecodeError
                raise BadRecord(f"{where}: schema reference {name!r} is no descriptor: {exc}") from None
            file_proto.name = name
            described.file.append(file_proto)
        else:
            target.write_text(text, encoding="utf-8")
        _write_references(root, found.schema, client, where, seen, described)


def is_base64(schema_str: str) -> bool:
    """Whether ``schema_str`` is base64 (a serialized descriptor), not ``.proto`` source text."""
    try:
        base64.b64decode(schema_str.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError):
        return False
    return True


def _target(root: Path, name: str, where: str) -> Path:
    """Where the file imported as ``name`` goes under ``root`` (its directories made)."""
    path = PurePosixPath(name)
    if not name or path.is_absolute() or ".." in path.parts:
        raise BadRecord(f"{where}: schema reference name {name!r} is not a relative .proto import path")
    target = root.joinpath(*path.parts)
    target.parent.mkdir(parents=True, exist_ok=True)
    return target


def _run_protoc(argv: list[str]) -> tuple[int, str]:
    """``(exit code, what protoc wrote to stderr)`` of an in-process protoc run."""
    from grpc_tools import protoc  # imported on first use: only text schemas need it

    with _PROTOC_LOCK, tempfile.TemporaryFile() as captured:
        with _stderr_to(captured.fileno()):
            code = int(protoc.main(argv))
        captured.seek(0)
        raw = captured.read()
    if raw:
        os.write(2, raw)
    return code, raw.decode("utf-8", "replace")


@contextlib.contextmanager
def _stderr_to(fd: int) -> Iterator[None]:
    saved = os.dup(2)
    try:
        os.dup2(fd, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
