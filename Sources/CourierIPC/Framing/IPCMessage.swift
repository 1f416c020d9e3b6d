import Foundation

/// A message of the courierd protocol (`docs/ipc.md`), as a value; ``frame(version:)`` and ``init(frame:)`` convert.
package enum IPCMessage: Sendable, Equatable {
    case hello(Hello)
    case welcome(Welcome)
    case openSession(OpenSession)
    case createTask(CreateTask)
    case command(Command)
    case listTasks(ListTasks)
    case acknowledge(Acknowledge)
    case closeSession(CloseSession)
    case reply(Reply)
    case failure(Failure)
    case events(Events)
    case listSessions(ListSessions)
    case stopDaemon(StopDaemon)
    case forceQuit(ForceQuit)
    case appState(AppState)
    case registerApp(RegisterApp)
    case wake(Wake)
    case wakeCompleted(WakeCompleted)
    case sendPush(SendPush)
    case listApps(ListApps)
    case triggerFetch(TriggerFetch)

    /// The message type numbers of the frame header; a number is never reused for another body.
    package enum Kind: UInt16, Sendable, CaseIterable {
        case hello = 1
        case welcome = 2
        case openSession = 3
        case createTask = 4
        case command = 5
        case listTasks = 6
        case acknowledge = 7
        case closeSession = 8
        case reply = 9
        case failure = 10
        case events = 11
        case listSessions = 12
        case stopDaemon = 13
        case forceQuit = 14
        case appState = 15
        case registerApp = 16
        case wake = 17
        case wakeCompleted = 18
        case sendPush = 19
        case listApps = 20
        case triggerFetch = 21
    }

    package var kind: Kind {
        switch self {
        case .hello: .hello
        case .welcome: .welcome
        case .openSession: .openSession
        case .createTask: .createTask
        case .command: .command
        case .listTasks: .listTasks
        case .acknowledge: .acknowledge
        case .closeSession: .closeSession
        case .reply: .reply
        case .failure: .failure
        case .events: .events
        case .listSessions: .listSessions
        case .stopDaemon: .stopDaemon
        case .forceQuit: .forceQuit
        case .appState: .appState
        case .registerApp: .registerApp
        case .wake: .wake
        case .wakeCompleted: .wakeCompleted
        case .sendPush: .sendPush
        case .listApps: .listApps
        case .triggerFetch: .triggerFetch
        }
    }

    /// The message as one frame of `version` (``IPCFrame/jsonVersion`` or ``IPCFrame/recordVersion``).
    package func frame(version: UInt16 = IPCFrame.jsonVersion) throws(IPCError) -> IPCFrame {
        let payload: Data
        do {
            payload = try encodeBody(PayloadFormat(version))
        } catch {
            throw .malformedPayload(type: kind.rawValue, reason: "cannot encode: \(error)")
        }
        guard payload.count <= IPCFrame.maximumPayloadLength else {
            throw .oversized(length: payload.count, limit: IPCFrame.maximumPayloadLength)
        }
        return IPCFrame(version: version, type: kind.rawValue, payload: payload)
    }

    /// `events` as `events` frames of `version`, each within ``IPCFrame/maximumPayloadLength``: one, or, for a batch
    /// too large for one frame (a replay or catch-up of tens of thousands of events), its events split in halves until
    /// each part fits, in order; only the last part says `finished`.
    package static func frames(of events: Events, version: UInt16) throws(IPCError) -> [IPCFrame] {
        do {
            return [try IPCMessage.events(events).frame(version: version)]
        } catch .oversized where events.events.count > 1 {
            let middle = events.events.count / 2
            let first = Events(session: events.session, events: Array(events.events[..<middle]), finished: false)
            let rest = Events(
                session: events.session,
                events: Array(events.events[middle...]),
                finished: events.finished
            )
            return try frames(of: first, version: version) + frames(of: rest, version: version)
        }
    }

    /// Decodes a frame's payload as the body its type names, in the frame's version.
    package init(frame: IPCFrame) throws(IPCError) {
        guard IPCFrame.reads(frame.version) else {
            throw .unsupportedVersion(frame.version)
        }
        guard let kind = Kind(rawValue: frame.type) else {
            throw .unknownType(frame.type)
        }
        do {
            self = try Self.decodeBody(kind, frame.payload, PayloadFormat(frame.version))
        } catch {
            throw .malformedPayload(type: frame.type, reason: IPCMessage.reason(error))
        }
    }

    /// How a version writes payloads.
    private enum PayloadFormat {
        case json
        case record

        init(_ version: UInt16) {
            self = version == IPCFrame.recordVersion ? .record : .json
        }

        func encode(_ body: some Encodable) throws -> Data {
            switch self {
            case .json:
                let encoder = JSONEncoder()
                encoder.outputFormatting = .sortedKeys
                return try encoder.encode(body)
            case .record:
                return try RecordEncoder.encode(body)
            }
        }

        func decode<Body: Decodable>(_ type: Body.Type, from payload: Data) throws -> Body {
            switch self {
            case .json: try JSONDecoder().decode(type, from: payload)
            case .record: try RecordDecoder.decode(type, from: payload)
            }
        }
    }

    private func encodeBody(_ format: PayloadFormat) throws -> Data {
        switch self {
        case .hello(let body): try format.encode(body)
        case .welcome(let body): try format.encode(body)
        case .openSession(let body): try format.encode(body)
        case .createTask(let body): try format.encode(body)
        case .command(let body): try format.encode(body)
        case .listTasks(let body): try format.encode(body)
        case .acknowledge(let body): try format.encode(body)
        case .closeSession(let body): try format.encode(body)
        case .reply(let body): try format.encode(body)
        case .failure(let body): try format.encode(body)
        case .events(let body): try format.encode(body)
        case .listSessions(let body): try format.encode(body)
        case .stopDaemon(let body): try format.encode(body)
        case .forceQuit(let body): try format.encode(body)
        case .appState(let body): try format.encode(body)
        case .registerApp(let body): try format.encode(body)
        case .wake(let body): try format.encode(body)
        case .wakeCompleted(let body): try format.encode(body)
        case .sendPush(let body): try format.encode(body)
        case .listApps(let body): try format.encode(body)
        case .triggerFetch(let body): try format.encode(body)
        }
    }

    private static func decodeBody(_ kind: Kind, _ payload: Data, _ format: PayloadFormat) throws -> IPCMessage {
        func body<Body: Decodable>(_ type: Body.Type) throws -> Body {
            try format.decode(type, from: payload)
        }
        return switch kind {
        case .hello: .hello(try body(Hello.self))
        case .welcome: .welcome(try body(Welcome.self))
        case .openSession: .openSession(try body(OpenSession.self))
        case .createTask: .createTask(try body(CreateTask.self))
        case .command: .command(try body(Command.self))
        case .listTasks: .listTasks(try body(ListTasks.self))
        case .acknowledge: .acknowledge(try body(Acknowledge.self))
        case .closeSession: .closeSession(try body(CloseSession.self))
        case .reply: .reply(try body(Reply.self))
        case .failure: .failure(try body(Failure.self))
        case .events: .events(try body(Events.self))
        case .listSessions: .listSessions(try body(ListSessions.self))
        case .stopDaemon: .stopDaemon(try body(StopDaemon.self))
        case .forceQuit: .forceQuit(try body(ForceQuit.self))
        case .appState: .appState(try body(AppState.self))
        case .registerApp: .registerApp(try body(RegisterApp.self))
        case .wake: .wake(try body(Wake.self))
        case .wakeCompleted: .wakeCompleted(try body(WakeCompleted.self))
        case .sendPush: .sendPush(try body(SendPush.self))
        case .listApps: .listApps(try body(ListApps.self))
        case .triggerFetch: .triggerFetch(try body(TriggerFetch.self))
        }
    }

    /// A short, single-line account of a decoding error, for the log.
    private static func reason(_ error: any Error) -> String {
        switch error {
        case DecodingError.dataCorrupted(let context):
            return "corrupt data at \(path(context)): \(context.debugDescription)"
        case DecodingError.keyNotFound(let key, let context):
            return "missing \(key.stringValue) at \(path(context))"
        case DecodingError.typeMismatch(let type, let context):
            return "expected \(type) at \(path(context))"
        case DecodingError.valueNotFound(let type, let context):
            return "null where \(type) belongs at \(path(context))"
        default:
            return "\(error)"
        }
    }

    private static func path(_ context: DecodingError.Context) -> String {
        let path = context.codingPath.map(\.stringValue).joined(separator: ".")
        return path.isEmpty ? "the top level" : path
    }
}
