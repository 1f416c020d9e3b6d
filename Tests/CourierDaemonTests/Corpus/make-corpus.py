#!/usr/bin/env python3
"""Writes the IPC frame corpus replayed by IPCCorpusTests (docs/ipc.md). Run from this folder; commit the output.

Each file is a byte stream as a peer could send it. The name says what a reader must make of it:
  ok-*.bin                    whole frames that decode to messages
  <error>-*.bin               refused with that IPCError case (oversized, unsupportedVersion, unknownType,
                              malformedPayload, truncated)
Frames of version 1 carry JSON; frames of version 2 carry a value in the record format (docs/ipc.md), written here by
`record(...)`.
"""
import json
import struct


def frame(kind, body, version=1, length=None):
    if isinstance(body, bytes):
        payload = body
    elif version == 2:
        payload = b"\x01" + record(body)
    else:
        payload = json.dumps(body, sort_keys=True).encode()
    return struct.pack(">IHH", len(payload) if length is None else length, version, kind) + payload


def leb128(value):
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def record(value):
    """A value in the record format (RecordEncoder.swift): a tag byte and its body. Integers are written signed
    (zigzag), as Swift's `Int`; `("u", n)` is an unsigned one (`UInt64`)."""
    if value is None:
        return b"\x00"
    if value is False:
        return b"\x01"
    if value is True:
        return b"\x02"
    if isinstance(value, tuple) and value[0] == "u":
        return b"\x04" + leb128(value[1])
    if isinstance(value, int):
        return b"\x03" + leb128((value << 1) ^ (value >> 63) & 0xFFFFFFFFFFFFFFFF)
    if isinstance(value, float):
        return b"\x05" + struct.pack("<d", value)
    if isinstance(value, str):
        return b"\x07" + leb128(len(value.encode())) + value.encode()
    if isinstance(value, dict):
        entries = b"".join(leb128(len(k.encode())) + k.encode() + record(v) for k, v in value.items())
        return b"\x09" + struct.pack("<I", len(value)) + entries
    if isinstance(value, list):
        return b"\x0a" + struct.pack("<I", len(value)) + b"".join(record(v) for v in value)
    raise TypeError(value)


hello = frame(1, {"app": "com.example.podcasts", "pid": 4242, "launchCommand": ["/usr/bin/podcasts", "--background"]})
open_session = frame(3, {
    "request": 1, "identifier": "com.example.podcasts.bg", "sendsLaunchEvents": True, "isDiscretionary": False,
    "allowsExpensiveNetworkAccess": True, "resourceTimeout": 604800, "requestTimeout": 60, "additionalHeaders": {},
})
create = frame(4, {
    "request": 2, "session": "com.example.podcasts.bg",
    "task": {"identifier": 1, "kind": "download", "priority": 0.5, "taskDescription": "episode-42",
             "request": {"url": "http://127.0.0.1:8080/episode/42", "method": "GET",
                         "headers": {"Accept": "audio/mpeg"}, "timeout": 60}},
})
ack = frame(7, {"session": "com.example.podcasts.bg", "through": 17})
progress = {"received": 10, "expectedToReceive": 100, "sent": 0, "expectedToSend": -1}
events = frame(11, {"session": "s", "finished": True, "events": [
    {"sequence": 1, "task": 1, "event": {"progress": progress, "payload": {"progress": {}}}},
    {"sequence": 2, "task": 1, "event": {"progress": progress, "payload": {"downloaded": {"path": "/tmp/episode-42"}}}},
]})

hello_v2 = frame(1, {"app": "com.example.podcasts", "pid": 4242, "protocolVersion": ("u", 2)}, version=2)
ack_v2 = frame(7, {"session": "com.example.podcasts.bg", "through": ("u", 17)}, version=2)

files = {
    "ok-hello.bin": hello,
    "ok-conversation.bin": hello + open_session + create + ack,
    "ok-events.bin": events,
    "ok-empty-acknowledge-twice.bin": ack + ack,
    "oversized-4GiB.bin": struct.pack(">IHH", 0xFFFFFFFF, 1, 1),
    "oversized-after-good-frame.bin": hello + struct.pack(">IHH", (4 << 20) + 1, 1, 11),
    "unsupportedVersion-0.bin": frame(1, {"app": "a", "pid": 1}, version=0),
    "unsupportedVersion-3.bin": frame(1, {"app": "a", "pid": 1}, version=3),
    "ok-version-2.bin": hello_v2 + ack_v2 + ack,
    "malformedPayload-json-in-version-2.bin": frame(1, json.dumps({"app": "a", "pid": 1}).encode(), version=2),
    "malformedPayload-version-2-cut-record.bin": frame(7, ack_v2[8:-3], version=2),
    "malformedPayload-version-2-wrong-type.bin": frame(7, {"session": "s", "through": "seventeen"}, version=2),
    "malformedPayload-version-2-huge-count.bin": frame(7, b"\x01\x09\xff\xff\xff\x7f", version=2),
    "unknownType-0.bin": frame(0, {}),
    "unknownType-999.bin": frame(999, {}),
    "malformedPayload-not-json.bin": frame(1, b"\xff\xfe not json"),
    "malformedPayload-array.bin": frame(1, b"[1,2,3]"),
    "malformedPayload-missing-field.bin": frame(3, {"request": 1}),
    "malformedPayload-wrong-type.bin": frame(7, {"session": "s", "through": "seventeen"}),
    "malformedPayload-negative-sequence.bin": frame(7, {"session": "s", "through": -1}),
    "malformedPayload-deep-nesting.bin": frame(1, b"[" * 100000 + b"]" * 100000),
    "malformedPayload-empty.bin": frame(2, b""),
    "truncated-header.bin": hello[:5],
    "truncated-payload.bin": create[:-3],
}
for name, data in files.items():
    with open(name, "wb") as f:
        f.write(data)
