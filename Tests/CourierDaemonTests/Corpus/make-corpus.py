#!/usr/bin/env python3
"""Writes the IPC frame corpus replayed by IPCCorpusTests (docs/ipc.md). Run from this folder; commit the output.

Each file is a byte stream as a peer could send it. The name says what a reader must make of it:
  ok-*.bin                    whole frames that decode to messages
  <error>-*.bin               refused with that IPCError case (oversized, unsupportedVersion, unknownType,
                              malformedPayload, truncated)
"""
import json
import struct


def frame(kind, body, version=1, length=None):
    payload = body if isinstance(body, bytes) else json.dumps(body, sort_keys=True).encode()
    return struct.pack(">IHH", len(payload) if length is None else length, version, kind) + payload


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
events = frame(11, {"session": "s", "finished": True, "events": [
    {"sequence": 1, "task": 1, "event": {"wroteData": {"delta": 10, "total": 10, "expected": 100}}},
    {"sequence": 2, "task": 1, "event": {"completed": {}}},
]})

files = {
    "ok-hello.bin": hello,
    "ok-conversation.bin": hello + open_session + create + ack,
    "ok-events.bin": events,
    "ok-empty-acknowledge-twice.bin": ack + ack,
    "oversized-4GiB.bin": struct.pack(">IHH", 0xFFFFFFFF, 1, 1),
    "oversized-after-good-frame.bin": hello + struct.pack(">IHH", (4 << 20) + 1, 1, 11),
    "unsupportedVersion-0.bin": frame(1, {"app": "a", "pid": 1}, version=0),
    "unsupportedVersion-2.bin": frame(1, {"app": "a", "pid": 1}, version=2),
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
