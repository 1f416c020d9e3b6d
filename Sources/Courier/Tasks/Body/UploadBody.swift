import Foundation

/// The body a task sends from something other than its request's `httpBody`: an upload task's data or file, or a
/// streamed body.
enum UploadBody: Sendable {
    case data(Data)
    case file(URL)
    /// Read as it is sent (``BodyStreamSource``); `length`: the request's `Content-Length`, nil when it has none
    /// (HTTP/1.1 then sends the body chunked).
    case stream(BodyStreamSource, length: Int64?)
    /// A background upload adopted after a relaunch: courierd holds its body (the app has nothing to read).
    case heldByDaemon

    /// A body read once from `chunks` (``AsyncSequenceReader``) as it is sent.
    static func sequence<Chunks: AsyncSequence & Sendable>(_ chunks: Chunks, length: Int64?) -> UploadBody
    where Chunks.Element: DataProtocol {
        .stream(.sequence(OneTimeBody(AsyncSequenceReader(chunks))), length: length)
    }

    /// The bytes to send, or -1 when unknown.
    var length: Int64 {
        switch self {
        case .data(let data):
            return Int64(data.count)
        case .file(let url):
            return FileManager.default.fileLength(atPath: url.path) ?? -1
        case .stream(_, let length):
            return length ?? -1
        case .heldByDaemon:
            return -1
        }
    }
}
