import Foundation

/// A message of the courierd protocol (`docs/ipc.md`), as a value; ``frame()`` and ``init(frame:)`` convert.
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

    /// The message as one frame of the current version.
    package func frame() throws(IPCError) -> IPCFrame {
        let payload: Data
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = .sortedKeys
            switch self {
            case .hello(let body): payload = try encoder.encode(body)
            case .welcome(let body): payload = try encoder.encode(body)
            case .openSession(let body): payload = try encoder.encode(body)
            case .createTask(let body): payload = try encoder.encode(body)
            case .command(let body): payload = try encoder.encode(body)
            case .listTasks(let body): payload = try encoder.encode(body)
            case .acknowledge(let body): payload = try encoder.encode(body)
            case .closeSession(let body): payload = try encoder.encode(body)
            case .reply(let body): payload = try encoder.encode(body)
            case .failure(let body): payload = try encoder.encode(body)
            case .events(let body): payload = try encoder.encode(body)
            case .listSessions(let body): payload = try encoder.encode(body)
            case .stopDaemon(let body): payload = try encoder.encode(body)
            case .forceQuit(let body): payload = try encoder.encode(body)
            case .appState(let body): payload = try encoder.encode(body)
            case .registerApp(let body): payload = try encoder.encode(body)
            case .wake(let body): payload = try encoder.encode(body)
            case .wakeCompleted(let body): payload = try encoder.encode(body)
            case .sendPush(let body): payload = try encoder.encode(body)
            case .listApps(let body): payload = try encoder.encode(body)
            case .triggerFetch(let body): payload = try encoder.encode(body)
            }
        } catch {
            throw .malformedPayload(type: kind.rawValue, reason: "cannot encode: \(error)")
        }
        guard payload.count <= IPCFrame.maximumPayloadLength else {
            throw .oversized(length: payload.count, limit: IPCFrame.maximumPayloadLength)
        }
        return IPCFrame(type: kind.rawValue, payload: payload)
    }

    /// Decodes a frame's payload as the body its type names.
    package init(frame: IPCFrame) throws(IPCError) {
        guard frame.version == IPCFrame.currentVersion else {
            throw .unsupportedVersion(frame.version)
        }
        guard let kind = Kind(rawValue: frame.type) else {
            throw .unknownType(frame.type)
        }
        let decoder = JSONDecoder()
        let payload = frame.payload
        do {
            switch kind {
            case .hello: self = .hello(try decoder.decode(Hello.self, from: payload))
            case .welcome: self = .welcome(try decoder.decode(Welcome.self, from: payload))
            case .openSession: self = .openSession(try decoder.decode(OpenSession.self, from: payload))
            case .createTask: self = .createTask(try decoder.decode(CreateTask.self, from: payload))
            case .command: self = .command(try decoder.decode(Command.self, from: payload))
            case .listTasks: self = .listTasks(try decoder.decode(ListTasks.self, from: payload))
            case .acknowledge: self = .acknowledge(try decoder.decode(Acknowledge.self, from: payload))
            case .closeSession: self = .closeSession(try decoder.decode(CloseSession.self, from: payload))
            case .reply: self = .reply(try decoder.decode(Reply.self, from: payload))
            case .failure: self = .failure(try decoder.decode(Failure.self, from: payload))
            case .events: self = .events(try decoder.decode(Events.self, from: payload))
            case .listSessions: self = .listSessions(try decoder.decode(ListSessions.self, from: payload))
            case .stopDaemon: self = .stopDaemon(try decoder.decode(StopDaemon.self, from: payload))
            case .forceQuit: self = .forceQuit(try decoder.decode(ForceQuit.self, from: payload))
            case .appState: self = .appState(try decoder.decode(AppState.self, from: payload))
            case .registerApp: self = .registerApp(try decoder.decode(RegisterApp.self, from: payload))
            case .wake: self = .wake(try decoder.decode(Wake.self, from: payload))
            case .wakeCompleted: self = .wakeCompleted(try decoder.decode(WakeCompleted.self, from: payload))
            case .sendPush: self = .sendPush(try decoder.decode(SendPush.self, from: payload))
            case .listApps: self = .listApps(try decoder.decode(ListApps.self, from: payload))
            case .triggerFetch: self = .triggerFetch(try decoder.decode(TriggerFetch.self, from: payload))
            }
        } catch {
            throw .malformedPayload(type: frame.type, reason: IPCMessage.reason(error))
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
