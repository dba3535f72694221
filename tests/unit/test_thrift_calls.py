"""``mutateRowsTs`` encoded straight from a WriteCall: byte for byte what thriftpy2 sends."""

from __future__ import annotations

from typing import Any

import happybase  # noqa: F401  (loads Hbase_thrift)
import pytest
from Hbase_thrift import Hbase
from Hbase_thrift import IOError as HBaseIOError
from thriftpy2.protocol import TBinaryProtocol, TCompactProtocol
from thriftpy2.protocol.binary import TBinaryProtocol as PurePythonBinaryProtocol
from thriftpy2.thrift import TClient, TMessageType
from thriftpy2.transport import TMemoryBuffer

from airflow_provider_eo.spark.hbase_sink.segments import WriteCall
from airflow_provider_eo.spark.hbase_sink.thrift_calls import (
    call_mutations,
    encode_args,
    is_binary,
    mutate_rows_ts,
)

CALLS = {
    "empty": WriteCall(5, {}, {}),
    "deletes": WriteCall(7, {b"r1": (b"d",), b"r2": (b"d", b"e")}, {}),
    "puts": WriteCall(9, {}, {b"r3": {b"d:a": b"1", b"d:b": b""}, b"r4": {b"d:x": b"\xff" * 70_000}}),
    "both": WriteCall(
        2**62, {b"gone": (b"d",)}, {b"": {b"d:": b"v"}, "ü".encode(): {"d:é".encode(): b"\x00"}}
    ),
}


def thriftpy2_args(protocol: type, table: bytes, call: WriteCall) -> bytes:
    """The args struct as thriftpy2 serializes it from BatchMutation/Mutation objects."""
    buffer = TMemoryBuffer()
    args = Hbase.mutateRowsTs_args(
        tableName=table, rowBatches=call_mutations(call), timestamp=call.timestamp, attributes={}
    )
    args.write(protocol(buffer))
    return buffer.getvalue()


@pytest.mark.parametrize("name", sorted(CALLS))
@pytest.mark.parametrize("protocol", [TBinaryProtocol, PurePythonBinaryProtocol], ids=["c", "python"])
def test_the_encoded_args_are_thriftpy2s_bytes(name: str, protocol: type) -> None:
    call = CALLS[name]
    heads: dict[bytes, bytes] = {}
    assert encode_args(b"ns:table", call, heads) == thriftpy2_args(protocol, b"ns:table", call)
    assert encode_args(b"ns:table", call, heads) == thriftpy2_args(
        protocol, b"ns:table", call
    )  # cached heads


class Wire:
    """A TClient over memory buffers: what it sends, and a reply to read."""

    def __init__(self, protocol: type) -> None:
        reply = TMemoryBuffer()
        out = protocol(reply)
        out.write_message_begin("mutateRowsTs", TMessageType.REPLY, 0)
        Hbase.mutateRowsTs_result().write(out)
        out.write_message_end()
        self.sent = TMemoryBuffer()
        self.client = TClient(Hbase, protocol(TMemoryBuffer(reply.getvalue())), protocol(self.sent))


@pytest.mark.parametrize("protocol", [TBinaryProtocol, PurePythonBinaryProtocol, TCompactProtocol])
def test_a_request_on_the_wire_is_the_generated_clients(protocol: type) -> None:
    call = CALLS["both"]
    ours, generated = Wire(protocol), Wire(protocol)
    mutate_rows_ts(ours.client, b"t", call)
    generated.client.mutateRowsTs(b"t", call_mutations(call), call.timestamp, {})
    assert ours.sent.getvalue() == generated.sent.getvalue()
    assert is_binary(ours.client._oprot) is (protocol is not TCompactProtocol)  # compact: the objects


def test_an_hbase_error_in_the_reply_raises_as_the_generated_client_raises() -> None:
    reply = TMemoryBuffer()
    out = TBinaryProtocol(reply)
    out.write_message_begin("mutateRowsTs", TMessageType.REPLY, 0)
    Hbase.mutateRowsTs_result(io=HBaseIOError(message="region moved")).write(out)
    out.write_message_end()
    answer = TBinaryProtocol(TMemoryBuffer(reply.getvalue()))
    client: Any = TClient(Hbase, answer, TBinaryProtocol(TMemoryBuffer()))
    with pytest.raises(HBaseIOError, match="region moved"):
        mutate_rows_ts(client, b"t", CALLS["puts"])
