import CourierConcurrency
import Crypto
import Foundation
import NIOCore
import NIOHTTP1

/// The server side of resumable uploads (IETF draft "Resumable Uploads for HTTP", interop version 6), at
/// `/resumable`: an upload (POST or PUT with `Upload-Draft-Interop-Version`) is answered at once with
/// `104 Upload Resumption Supported` and `Location: /resumable/ID`, and its bytes are kept as they arrive; `HEAD
/// /resumable/ID` answers `Upload-Offset` (the bytes kept); `PATCH /resumable/ID` with a matching `Upload-Offset`
/// appends (another offset: 409 with the right one). A complete upload is answered with JSON `{"length", "sha256",
/// "received"}` (`received`: every body byte the server read for it, over all requests). `cutAt=K` on the upload's
/// URL closes the connection once K bytes are kept (a network cut, once).
final class ResumableUploads: Sendable {
    private struct Upload {
        var data = Data()
        var received = 0
        var complete = false
        var cutAt: Int?
    }

    private let uploads = LockedValue<[String: Upload]>([:])

    /// What a request's body does: starts an upload, appends to one, or neither.
    enum Role {
        case start(id: String)
        case append(id: String, offsetMatches: Bool)
    }

    /// At the head of a request: the upload it starts (answered with a 104 now) or appends to.
    func begin(_ head: HTTPRequestHead) -> Role? {
        let (path, query) = ReceivedRequest.splitTarget(ReceivedRequest.originForm(head.uri))
        guard path.hasPrefix("/resumable"), head.headers.contains(name: "upload-draft-interop-version") else {
            return nil
        }
        if path == "/resumable", head.method == .POST || head.method == .PUT {
            let id = UUID().uuidString
            let cut = query.split(separator: "&").first { $0.hasPrefix("cutAt=") }.flatMap { Int($0.dropFirst(6)) }
            uploads.withLock { $0[id] = Upload(cutAt: cut) }
            return .start(id: id)
        }
        let id = String(path.dropFirst("/resumable/".count))
        guard head.method == .PATCH, let offset = head.headers.first(name: "upload-offset").flatMap({ Int($0) }) else {
            return nil
        }
        let matches = uploads.withLock { $0[id].map { !$0.complete && $0.data.count == offset } ?? false }
        return .append(id: id, offsetMatches: matches)
    }

    /// The 104 that offers resumption of upload `id`.
    static func offer(_ id: String, version: HTTPVersion) -> HTTPResponseHead {
        var headers = HTTPHeaders()
        headers.add(name: "Location", value: "/resumable/\(id)")
        headers.add(name: "Upload-Draft-Interop-Version", value: "6")
        return HTTPResponseHead(
            version: version,
            status: .custom(code: 104, reasonPhrase: "Upload Resumption Supported"),
            headers: headers
        )
    }

    /// Body bytes for upload `id`; false when the connection must be cut now (the upload's `cutAt` was reached).
    func append(_ buffer: ByteBuffer, to id: String) -> Bool {
        uploads.withLock { uploads in
            guard var upload = uploads[id] else {
                return true
            }
            upload.received += buffer.readableBytes
            var bytes = Data(buffer.readableBytesView)
            var keepGoing = true
            if let cut = upload.cutAt, upload.data.count + bytes.count >= cut {
                bytes = bytes.prefix(cut - upload.data.count)
                upload.cutAt = nil
                keepGoing = false
            }
            upload.data.append(bytes)
            uploads[id] = upload
            return keepGoing
        }
    }

    /// The answer at the end of a request to `/resumable…`.
    func respond(to request: ReceivedRequest, role: Role?) -> ResponsePlan {
        switch role {
        case .start(let id):
            return finish(id)
        case .append(let id, let offsetMatches):
            guard offsetMatches else {
                var plan = ResponsePlan.text(.conflict, "wrong offset\n")
                plan.headers.add(name: "Upload-Offset", value: String(uploads.withLock { $0[id]?.data.count ?? 0 }))
                return plan
            }
            return finish(id)
        case nil:
            let id = String(request.pathSegments.dropFirst().first ?? "")
            guard request.head.method == .HEAD, let upload = uploads.withLock({ $0[id] }) else {
                return Router.notFound(request)
            }
            var plan = ResponsePlan(status: .noContent, headers: HTTPHeaders())
            plan.headers.add(name: "Upload-Offset", value: String(upload.data.count))
            plan.headers.add(name: "Upload-Complete", value: upload.complete ? "?1" : "?0")
            plan.headers.add(name: "Upload-Draft-Interop-Version", value: "6")
            plan.headers.add(name: "Cache-Control", value: "no-store")
            return plan
        }
    }

    private func finish(_ id: String) -> ResponsePlan {
        let upload = uploads.withLock { uploads -> Upload? in
            uploads[id]?.complete = true
            return uploads[id]
        }
        guard let upload else {
            return .text(.notFound, "no such upload\n")
        }
        return .json(
            .object([
                ("length", .int(upload.data.count)),
                ("sha256", .string(Hex.encode(SHA256.hash(data: upload.data)))),
                ("received", .int(upload.received)),
            ])
        )
    }
}
