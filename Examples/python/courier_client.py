#!/usr/bin/env python3
"""A courierd client in Python, on the socket protocol alone (docs/ipc.md, protocol version 1): no Swift, no
`courier` binary. It shows what another program needs to drive courierd: list what it does, cancel a task, and hand
it a download as a background session of its own, then take the finished file when courierd says it is there.

    python3 courier_client.py sessions
    python3 courier_client.py tasks [SESSION] [--all]
    python3 courier_client.py cancel SESSION TASK
    python3 courier_client.py download URL DESTINATION [--session IDENTIFIER]

`download` opens the session (default `com.example.python`), creates a download task, prints its progress, moves
the finished file to DESTINATION when courierd's `downloaded` event names it, acknowledges the events (courierd
then deletes its copy), and exits 0, or 1 when the task failed (an HTTP error status included). Stopped meanwhile,
it leaves the download to courierd: run the same command again and it takes up the session's events where it
stopped (a finished file is handed again until an acknowledgement says it was taken).

The socket is `$XDG_RUNTIME_DIR/courier/courierd.sock` (courierd must be running: `courier daemon start`).
Standard library only; Python 3.8 or later.
"""
import json
import os
import shutil
import socket
import struct
import sys

PROTOCOL_VERSION = 1
HELLO, WELCOME, OPEN_SESSION, CREATE_TASK, COMMAND, LIST_TASKS, ACKNOWLEDGE = 1, 2, 3, 4, 5, 6, 7
REPLY, FAILURE, EVENTS, LIST_SESSIONS = 9, 10, 11, 12


class CourierdError(Exception):
    """courierd refused a request (a `failure` frame): `code` and `message` as CourierError says them."""

    def __init__(self, error):
        self.code = error.get("code")
        self.message = error.get("message", "")
        super().__init__("%s: %s" % (self.code, self.message))


class Client:
    """One connection to courierd: requests answered in order, and the event batches of the sessions it opened."""

    def __init__(self, app="courier-client.py", path=None):
        if path is None:
            runtime = os.environ.get("XDG_RUNTIME_DIR") or "/run/user/%d" % os.getuid()
            path = os.path.join(runtime, "courier", "courierd.sock")
        self.socket = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.socket.connect(path)
        self.buffer = b""
        self.next_request = 1
        self.pending_events = []
        self.send(HELLO, {"app": app, "pid": os.getpid()})
        kind, self.welcome = self.receive()
        if kind != WELCOME:
            raise RuntimeError("courierd answered hello with frame type %d" % kind)

    def send(self, kind, body):
        payload = json.dumps(body).encode()
        self.socket.sendall(struct.pack(">IHH", len(payload), PROTOCOL_VERSION, kind) + payload)

    def receive(self):
        """The next frame: (type, body)."""
        while True:
            if len(self.buffer) >= 8:
                length, version, kind = struct.unpack(">IHH", self.buffer[:8])
                if version != PROTOCOL_VERSION:
                    raise RuntimeError("courierd speaks protocol version %d" % version)
                if len(self.buffer) >= 8 + length:
                    payload = self.buffer[8:8 + length]
                    self.buffer = self.buffer[8 + length:]
                    return kind, json.loads(payload)
            chunk = self.socket.recv(65536)
            if not chunk:
                raise ConnectionError("courierd closed the connection")
            self.buffer += chunk

    def request(self, kind, body):
        """Sends a request and returns its `result`; event batches that arrive meanwhile are kept for `events()`."""
        number = self.next_request
        self.next_request += 1
        self.send(kind, dict(body, request=number))
        while True:
            frame, answer = self.receive()
            if frame == EVENTS:
                self.pending_events.append(answer)
            elif frame == REPLY and answer["request"] == number:
                return answer["result"]
            elif frame == FAILURE and answer["request"] == number:
                raise CourierdError(answer["error"])

    def events(self):
        """The event batches of the sessions this connection opened, as they come (blocks)."""
        while True:
            while self.pending_events:
                yield self.pending_events.pop(0)
            frame, body = self.receive()
            if frame == EVENTS:
                yield body

    def sessions(self):
        return self.request(LIST_SESSIONS, {})["sessions"]["_0"]

    def tasks(self, session, include_ended=False):
        """Every task of `session`, a page of 1,000 at a time."""
        tasks, offset = [], 0
        while True:
            page = self.request(LIST_TASKS, {"session": session, "includesEnded": include_ended,
                                             "offset": offset, "limit": 1000})["tasks"]["snapshots"]
            tasks += page
            if len(page) < 1000:
                return tasks
            offset += len(page)

    def cancel(self, session, task):
        self.request(COMMAND, {"session": session, "task": task, "command": {"cancel": {}}})

    def open_session(self, identifier):
        """Opens (or takes up again) a background session of this connection; returns its next task identifier."""
        result = self.request(OPEN_SESSION, {
            "identifier": identifier, "sendsLaunchEvents": False, "isDiscretionary": False,
            "allowsExpensiveNetworkAccess": True, "resourceTimeout": 604800, "requestTimeout": 60,
            "additionalHeaders": {},
        })
        return result["sessionOpened"]["nextTaskIdentifier"]

    def create_download(self, session, identifier, url, description=None):
        """A download task: courierd journals it before it answers, and runs it whether or not this program lives."""
        spec = {"url": url, "task": {"kind": "download", "priority": 0.5, "reportsToDelegate": True}}
        if description is not None:
            spec["task"]["taskDescription"] = description
        self.request(CREATE_TASK, {"session": session, "task": {"identifier": identifier, "spec": spec}})

    def acknowledge(self, session, through):
        """The events up to `through` were handled: courierd deletes them, and a finished download's file."""
        self.send(ACKNOWLEDGE, {"session": session, "through": through})


def download(client, url, destination, session):
    identifier = client.open_session(session)
    client.create_download(session, identifier, url, description=os.path.abspath(destination))
    print("task %d: %s -> %s" % (identifier, url, destination), flush=True)
    status = None
    for batch in client.events():
        ended = None
        for sequenced in batch["events"]:
            event = sequenced["event"]
            payload = event["payload"]
            if "response" in payload:
                status = payload["response"]["head"]["status"]
            if sequenced["task"] != identifier:
                continue  # another task of the session: left as it is (acknowledged with the batch)
            if "progress" in payload:
                progress = event["progress"]
                print("%d of %d bytes" % (progress["received"], progress["expectedToReceive"]), flush=True)
            elif "downloaded" in payload and (status or 200) < 400:
                shutil.move(payload["downloaded"]["path"], destination)
                print("saved %s" % destination, flush=True)
            elif "complete" in payload:
                ended = payload["complete"]["_0"].get("error")
                if ended is None and status is not None and status >= 400:
                    ended = {"message": "HTTP %d" % status}
                ended = ended or {}
        client.acknowledge(batch["session"], batch["events"][-1]["sequence"])
        if ended is not None:
            if ended:
                print("error: %s: %s" % (url, ended.get("message")), file=sys.stderr)
                return 1
            return 0


def main(arguments):
    if not arguments or arguments[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if arguments else 64
    command, rest = arguments[0], arguments[1:]
    client = Client()
    try:
        if command == "sessions":
            for summary in client.sessions():
                print("%s  app=%s  connected=%s  active=%d" % (summary["identifier"], summary["app"],
                                                             summary["connected"], summary["activeTasks"]))
        elif command == "tasks":
            names = [value for value in rest if not value.startswith("--")]
            sessions = names or [summary["identifier"] for summary in client.sessions()]
            for session in sessions:
                for task in client.tasks(session, include_ended="--all" in rest):
                    print(json.dumps({"session": session, **task}, sort_keys=True))
        elif command == "cancel" and len(rest) == 2:
            client.cancel(rest[0], int(rest[1]))
        elif command == "download" and len(rest) in (2, 4):
            session = rest[3] if len(rest) == 4 and rest[2] == "--session" else "com.example.python"
            return download(client, rest[0], rest[1], session)
        else:
            print("usage: see courier_client.py --help", file=sys.stderr)
            return 64
    except CourierdError as error:
        print("error: %s" % error.message, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
