import Courier
import CourierDaemon
import CourierIPC
package import Foundation

/// Everything Courier reads from outside, as fuzz targets (docs/reliability.md): each takes arbitrary bytes, must
/// never crash, hang or leak on them, and checks what a successful parse promises (a decoded IPC message encodes
/// and decodes to itself). `scripts/fuzz.sh` runs them under libFuzzer (`courier-fuzzer`, built with
/// `-sanitize=fuzzer,address`); the test command replays every committed input (`Tests/Fuzz/`) through them.
package enum FuzzTarget: String, CaseIterable, Sendable {
    /// The socket's byte stream: frames (`IPCFrameDecoder`, fed in two pieces), then each frame's message.
    case ipcFrames = "ipc-frames"
    /// A push's JSON payload with its `apns-push-type` / `apns-priority` (the first line of the input).
    case pushPayload = "push-payload"
    /// The head of a request to the push endpoint.
    case pushRequest = "push-request"
    /// Resume data an app hands to `downloadTask(withResumeData:)`.
    case resumeData = "resume-data"
    /// A `Content-Disposition` value (`courier get -J`).
    case contentDisposition = "content-disposition"
    /// A response head as libcurl delivers it (status line and field lines), with the status as its first byte.
    case responseHead = "response-head"
    /// A journal record's stored JSON, as each of the types the journal keeps (the first byte picks one).
    case journalRecord = "journal-record"
    /// Everything a server answers a GET with, written on a loopback connection to the real engine (a session's
    /// data task): status lines, fields, chunked framing, content codings, early ends (``EngineResponseRig``).
    case engineResponse = "engine-response"

    package func run(_ data: Data) {
        switch self {
        case .ipcFrames: Self.ipcFrames(data)
        case .pushPayload: Self.pushPayload(data)
        case .pushRequest: _ = PushRequestHead(data)
        case .resumeData: _ = PartialDownload(resumeData: data, directory: URL(fileURLWithPath: "/nonexistent"))
        case .contentDisposition: _ = ContentDisposition.fileName(in: String(decoding: data, as: UTF8.self))
        case .responseHead: Self.responseHead(data)
        case .journalRecord: Self.journalRecord(data)
        case .engineResponse: EngineResponseRig.shared.run(data)
        }
    }

    private static func ipcFrames(_ data: Data) {
        var decoder = IPCFrameDecoder()
        let middle = data.count / 2
        for piece in [data.prefix(middle), data.dropFirst(middle)] {
            guard let frames = try? decoder.feed(Data(piece)) else {
                return
            }
            for frame in frames {
                guard let message = try? IPCMessage(frame: frame) else {
                    continue
                }
                // What decodes must encode, and decode to the same message.
                guard let again = try? IPCMessage(frame: message.frame()) else {
                    fatalError("a decoded \(frame.type) message does not survive encoding")
                }
                precondition(again == message, "a decoded \(frame.type) message changes when encoded again")
            }
        }
    }

    private static func pushPayload(_ data: Data) {
        let newline = data.firstIndex(of: UInt8(ascii: "\n")) ?? data.startIndex
        let fields = String(decoding: data[..<newline], as: UTF8.self).split(separator: " ", maxSplits: 1)
        let payload = Data(data[newline...].dropFirst(newline < data.endIndex ? 1 : 0))
        _ = PushNotification.parse(
            payload,
            pushType: fields.first.map(String.init),
            priority: fields.dropFirst().first.map(String.init)
        )
    }

    private static func responseHead(_ data: Data) {
        guard let status = data.first else {
            return
        }
        let head = Data(data.dropFirst()).withUnsafeBytes { ResponseHead(status: Int(status) + 100, headerBytes: $0) }
        _ = head.fieldLines.count
    }

    private static func journalRecord(_ data: Data) {
        let body = Data(data.dropFirst())
        switch (data.first ?? 0) % 7 {
        case 0: _ = try? Journal.decode(TaskRecord.self, from: body)
        case 1: _ = try? Journal.decode(TransferCheckpoint.self, from: body)
        case 2: _ = try? Journal.decode(EventRecord.self, from: body)
        case 3: _ = try? Journal.decode(SessionRecord.self, from: body)
        case 4: _ = try? Journal.decode(IPCMessage.TaskSnapshot.self, from: body)
        case 5: _ = try? Journal.decode(FetchScheduler.self, from: body)
        default: _ = try? Journal.decode(TransferSpec.self, from: body)
        }
    }
}
