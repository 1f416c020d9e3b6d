import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Where a task reports its body and its end.
enum TaskSink: Sendable {
    typealias DataHandler = @Sendable (Data?, URLResponse?, (any Error)?) -> Void
    typealias DownloadHandler = @Sendable (URL?, URLResponse?, (any Error)?) -> Void
    typealias InlineDataHandler = @Sendable (Data?, TaskResponse?, (any Error)?) -> Void
    typealias InlineDownloadHandler = @Sendable (URL?, TaskResponse?, (any Error)?) -> Void

    /// The session delegate gets every call.
    case delegate
    /// A completion handler, called on the delegate queue; the delegate gets only redirects, challenges and
    /// metrics.
    case dataHandler(DataHandler)
    case downloadHandler(DownloadHandler)
    /// An async convenience: the handler runs right where the completion is decided (it only resumes a
    /// continuation or moves a file), not on the delegate queue. It gets the response as the task saw it, so
    /// that a caller who wants no `HTTPURLResponse` never makes one.
    case inlineData(InlineDataHandler)
    case inlineDownload(InlineDownloadHandler)
    /// `bytes(for:)`: body chunks go to a bounded buffer.
    case stream(ByteStream)
    /// A WebSocket task: the 101 opens the connection, the body is the server's frames.
    case webSocket(WebSocketConnection)
    /// courierd's attempts: counters and the end go to a ``TaskObserver`` (the body is collected for it). `template`:
    /// the spec the app's own task machine built (journaled by courierd); the hops to its URL go with its header lines,
    /// in its order, and its proxy and HTTP/2 settings (``SessionTask/transferSpec(for:at:)``).
    case observer(any TaskObserver, template: TransferSpec)

    var isWebSocket: Bool {
        if case .webSocket = self {
            return true
        }
        return false
    }

    var usesDelegateForBody: Bool {
        if case .delegate = self {
            return true
        }
        return false
    }

    var collectsBody: Bool {
        switch self {
        case .dataHandler, .inlineData, .observer: true
        default: false
        }
    }
}

/// Delegate-queue work produced while handling events: closures run in order on the delegate queue.
struct DelegateWork {
    typealias Item = @Sendable (Session?) -> Void

    var items: [Item] = []

    var isEmpty: Bool { items.isEmpty }

    mutating func append(_ item: @escaping Item) {
        items.append(item)
    }
}
