"""Thrift1 ``mutateRowsTs`` requests encoded straight from a :class:`WriteCall`.

The write step's client spent more CPU building thriftpy2 ``Mutation`` and ``BatchMutation``
objects (one per cell and per row) than on anything else it does per record.
:func:`encode_args` writes the call's arguments in Thrift's binary protocol directly from the
segment's dicts, byte for byte what thriftpy2 serializes from those objects (a unit test
compares the two for puts, deletes, empty calls and every length prefix), and
:func:`mutate_rows_ts` sends them on a happybase connection's client and reads the answer
with thriftpy2's own reader (:func:`mutate_rows_ts_pipelined`: several requests, then their
answers, in one round trip), so HBase's errors (``IOError``, ``IllegalArgument``) and
transport failures raise exactly as the generated client raises them.

Only the binary protocol is encoded here: a connection with another protocol (happybase's
``protocol='compact'``) is sent the thriftpy2 objects (:func:`call_mutations`) instead.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import Any

import happybase  # noqa: F401  (its import registers the Hbase_thrift module)
from Hbase_thrift import BatchMutation, Mutation
from thriftpy2.protocol.binary import TBinaryProtocol as PurePythonBinaryProtocol
from thriftpy2.thrift import TMessageType
from thriftpy2.transport import TBufferedTransport, TFramedTransport

from airflow_provider_eo.spark.hbase_sink.segments import WriteCall

try:  # thriftpy2's C protocol, what happybase uses where it is built
    from thriftpy2.protocol.cybin import TCyBinaryProtocol  # type: ignore[attr-defined]

    BINARY_PROTOCOLS: tuple[type, ...] = (TCyBinaryProtocol, PurePythonBinaryProtocol)
except ImportError:  # pragma: no cover - thriftpy2 without its C extensions
    BINARY_PROTOCOLS = (PurePythonBinaryProtocol,)

try:  # the C transports happybase uses where they are built
    from thriftpy2.transport import TCyBufferedTransport, TCyFramedTransport

    PIPELINED_TRANSPORTS: tuple[type, ...] = (
        TCyBufferedTransport, TCyFramedTransport, TBufferedTransport, TFramedTransport
    )  # fmt: skip
except ImportError:  # pragma: no cover - thriftpy2 without its C extensions
    PIPELINED_TRANSPORTS = (TBufferedTransport, TFramedTransport)

METHOD = "mutateRowsTs"
_I32 = struct.Struct(">i").pack
_I64 = struct.Struct(">q").pack
# field headers (type byte, field id) and constant pieces of the binary protocol
_STOP = b"\x00"
_TABLE = b"\x0b\x00\x01"  # 1: tableName (string)
_BATCHES = b"\x0f\x00\x02\x0c"  # 2: rowBatches (list of structs)
_TIMESTAMP = b"\x0a\x00\x03"  # 3: timestamp (i64)
_NO_ATTRIBUTES = b"\x0d\x00\x04\x0b\x0b\x00\x00\x00\x00"  # 4: attributes, an empty map<string, string>
_ROW = b"\x0b\x00\x01"  # BatchMutation 1: row (string)
_MUTATIONS = b"\x0f\x00\x02\x0c"  # BatchMutation 2: mutations (list of structs)
_PUT_START = b"\x02\x00\x01\x00\x0b\x00\x02"  # Mutation 1: isDelete false, 2: column (string) ...
_DELETE_START = b"\x02\x00\x01\x01\x0b\x00\x02"  # Mutation 1: isDelete true, 2: column ...
_VALUE = b"\x0b\x00\x03"  # Mutation 3: value (string)
_MUTATION_END = b"\x02\x00\x04\x01\x00"  # Mutation 4: writeToWAL true, end of struct


def _string(value: bytes) -> bytes:
    return _I32(len(value)) + value


def encode_args(table_name: bytes, call: WriteCall, heads: dict[bytes, bytes] | None = None) -> bytes:
    """The ``mutateRowsTs_args`` struct of ``call`` on ``table_name`` in Thrift's binary protocol:
    family deletes then puts, rows in first-seen order, every mutation with ``writeToWAL``.

    ``heads`` caches each column name's encoded head across calls (a dict the caller keeps).
    """
    heads = {} if heads is None else heads
    pieces = [_TABLE, _string(table_name), _BATCHES, _I32(len(call.deletes) + len(call.puts))]
    for row, families in call.deletes.items():
        pieces += (_ROW, _string(row), _MUTATIONS, _I32(len(families)))
        for family in families:
            pieces += (_DELETE_START, _string(family), _MUTATION_END)
        pieces.append(_STOP)
    for row, cells in call.puts.items():
        pieces += (_ROW, _string(row), _MUTATIONS, _I32(len(cells)))
        for column, value in cells.items():
            head = heads.get(column)
            if head is None:
                head = heads[column] = _PUT_START + _string(column) + _VALUE
            pieces += (head, _I32(len(value)), value, _MUTATION_END)
        pieces.append(_STOP)
    pieces += (_TIMESTAMP, _I64(call.timestamp), _NO_ATTRIBUTES, _STOP)
    return b"".join(pieces)


def call_mutations(call: WriteCall) -> list[Any]:
    """Thrift ``BatchMutation`` objects of one call: family deletes and puts, rows in first-seen order."""
    batches = [
        BatchMutation(row, [Mutation(isDelete=True, column=family) for family in families])
        for row, families in call.deletes.items()
    ]
    batches += [  # positional (isDelete, column, value): half the cost of keywords, per cell
        BatchMutation(row, [Mutation(False, column, value) for column, value in cells.items()])
        for row, cells in call.puts.items()
    ]
    return batches


def is_binary(protocol: Any) -> bool:
    """True for thriftpy2's binary protocol (C or pure Python), the one :func:`encode_args` speaks."""
    return isinstance(protocol, BINARY_PROTOCOLS)


def mutate_rows_ts(
    client: Any, table_name: bytes, call: WriteCall, heads: dict[bytes, bytes] | None = None
) -> None:
    """Send ``call`` as one ``mutateRowsTs`` on ``client`` (a happybase connection's thriftpy2
    ``TClient``) and read its answer; raises what the generated client raises."""
    protocol = client._oprot
    if not is_binary(protocol):
        client.mutateRowsTs(table_name, call_mutations(call), call.timestamp, {})
        return
    protocol.write_message_begin(METHOD, TMessageType.CALL, client._seqid)
    protocol.trans.write(encode_args(table_name, call, heads))
    protocol.write_message_end()
    protocol.trans.flush()
    client._recv(METHOD)


def mutate_rows_ts_pipelined(
    client: Any,
    table_name: bytes,
    calls: Sequence[WriteCall],
    heads: dict[bytes, bytes] | None = None,
    answered: Callable[[], None] | None = None,
) -> None:
    """Send ``calls`` as ``mutateRowsTs`` requests on ``client``, all of them before reading
    any answer (one round trip; the server still applies them one by one, in order), then read
    the answers in order, calling ``answered`` after each; raises what the generated client
    raises for the first failed one (the connection then holds unread answers: close it).
    Only a plain socket's transport (buffered or framed) is pipelined; any other (HTTP, where
    each flush is a request of its own, and SASL) and a non-binary protocol send them one at
    a time."""
    protocol = client._oprot
    pipelined = is_binary(protocol) and isinstance(protocol.trans, PIPELINED_TRANSPORTS)
    if not pipelined:
        for call in calls:
            mutate_rows_ts(client, table_name, call, heads)
            if answered is not None:
                answered()
        return
    for call in calls:  # flushed one by one: a framed transport sends a frame per flush
        protocol.write_message_begin(METHOD, TMessageType.CALL, client._seqid)
        protocol.trans.write(encode_args(table_name, call, heads))
        protocol.write_message_end()
        protocol.trans.flush()
    for _ in calls:
        client._recv(METHOD)
        if answered is not None:
            answered()
