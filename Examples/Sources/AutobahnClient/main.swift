// AutobahnClient: Courier's WebSocket client under the Autobahn|Testsuite fuzzing server (scripts/autobahn.sh).
//
//   AutobahnClient [ws://127.0.0.1:9001] [--agent Courier] [--timeout SECONDS]
//
// It follows Autobahn's protocol for testing a client: it reads the number of cases from `/getCaseCount`, runs each
// case N at `/runCase?case=N&agent=…` by echoing every message back as it came (text as text, binary as binary)
// until the server ends the connection, and then asks the server to write its reports (`/updateReports`). The
// verdicts are the server's (its index.json); this program only prints its progress. A case that has not ended
// after the timeout (60 s by default) is cancelled, and the run goes on with the next.
import Courier
import Foundation
import Synchronization

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One line on standard output, written at once.
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

struct Options {
    var server = "ws://127.0.0.1:9001"
    var agent = "Courier"
    var timeout: Double = 60

    init(_ arguments: [String]) {
        var rest = arguments.makeIterator()
        while let argument = rest.next() {
            switch argument {
            case "--agent":
                agent = rest.next() ?? agent
            case "--timeout":
                timeout = rest.next().flatMap(Double.init) ?? timeout
            default:
                server = argument
            }
        }
    }
}

/// What one connection did: the messages echoed, and how it ended.
struct Outcome {
    var echoed = 0
    var ending = ""
    var timedOut = false
}

/// The largest message a case may send (9.1.6 and 9.2.6 send 16 MiB).
let maximumMessageSize = 32 << 20

let options = Options(Array(CommandLine.arguments.dropFirst()))
let session = Session(configuration: .ephemeral)

/// The first of several results to arrive, handed to one waiter.
final class FirstResult<Value: Sendable>: Sendable {
    private let state = Mutex<(value: Value?, waiter: CheckedContinuation<Value, Never>?)>((nil, nil))

    func offer(_ value: Value) {
        let waiter = state.withLock { state -> CheckedContinuation<Value, Never>? in
            guard state.value == nil else {
                return nil
            }
            state.value = value
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: value)
    }

    var value: Value {
        get async {
            await withCheckedContinuation { continuation in
                let value = state.withLock { state -> Value? in
                    if state.value == nil {
                        state.waiter = continuation
                    }
                    return state.value
                }
                if let value {
                    continuation.resume(returning: value)
                }
            }
        }
    }
}

/// Connects to `path`, echoes every message back (when `echo`) or keeps the first one (when not), until the server
/// ends the connection or `timeout` passes (then the task is cancelled).
func run(_ path: String, echo: Bool, timeout: Double) async -> (Outcome, WebSocketTask.Message?) {
    guard let url = URL(string: options.server + path) else {
        return (Outcome(ending: "bad URL \(options.server + path)"), nil)
    }
    let task = session.webSocketTask(with: url)
    task.maximumMessageSize = maximumMessageSize
    task.resume()
    let result = FirstResult<Result<(Outcome, WebSocketTask.Message?), TimeoutError>>()
    Task {
        var outcome = Outcome()
        var first: WebSocketTask.Message?
        while true {
            let message: WebSocketTask.Message
            do {
                message = try await task.receive()
            } catch {
                outcome.ending = "\(error)"
                result.offer(.success((outcome, first)))
                return
            }
            if first == nil {
                first = message
            }
            guard echo else {
                continue
            }
            do {
                try await task.send(message)
                outcome.echoed += 1
            } catch {
                // The server may close while an echo is going out: the next receive says how it ended.
            }
        }
    }
    Task {
        try? await Task.sleep(nanoseconds: UInt64(timeout * 1_000_000_000))
        result.offer(.failure(TimeoutError()))
    }
    var ended: (Outcome, WebSocketTask.Message?)
    switch await result.value {
    case .success(let value):
        ended = value
    case .failure:
        // Cancelling the task fails the waiting receive; give it 10 s to.
        task.cancel()
        let late = FirstResult<(Outcome, WebSocketTask.Message?)>()
        Task {
            while task.state != .completed {
                try? await Task.sleep(nanoseconds: 10_000_000)
            }
            late.offer((Outcome(ending: "cancelled: \(task.error.map { "\($0)" } ?? "no error")"), nil))
        }
        Task {
            try? await Task.sleep(nanoseconds: 10_000_000_000)
            late.offer((Outcome(ending: "still not completed 10 s after cancel()"), nil))
        }
        ended = await late.value
        ended.0.timedOut = true
    }
    // Let the task finish (the close handshake's last bytes) before the next connection.
    let deadline = Date().addingTimeInterval(5)
    while task.state != .completed, Date() < deadline {
        try? await Task.sleep(nanoseconds: 10_000_000)
    }
    let completed = task.state == .completed ? "completed" : "not completed"
    ended.0.ending += " [close code \(task.closeCode.rawValue), task \(completed)]"
    return ended
}

struct TimeoutError: Error {}

let started = Date()
let (countOutcome, countMessage) = await run("/getCaseCount", echo: false, timeout: 30)
guard case .string(let countText)? = countMessage, let count = Int(countText) else {
    say("no case count from \(options.server)/getCaseCount: \(countOutcome.ending)")
    exit(2)
}
say("\(count) cases at \(options.server), agent \(options.agent)")

var timedOut = 0
for number in 1...count {
    let caseStart = Date()
    let path = "/runCase?case=\(number)&agent=\(options.agent)"
    let (outcome, _) = await run(path, echo: true, timeout: options.timeout)
    if outcome.timedOut {
        timedOut += 1
    }
    let seconds = String(format: "%.2f", Date().timeIntervalSince(caseStart))
    say(
        "case \(number)/\(count): \(outcome.echoed) echoed, \(seconds) s\(outcome.timedOut ? ", TIMED OUT" : ""): "
            + outcome.ending
    )
}

let (reportOutcome, _) = await run("/updateReports?agent=\(options.agent)", echo: false, timeout: 120)
say("reports updated: \(reportOutcome.ending)")
say(
    "\(count) cases in \(String(format: "%.1f", Date().timeIntervalSince(started))) s, \(timedOut) timed out"
)
session.invalidateAndCancel()
