import Courier
import CourierTestSupport
import Foundation
import HTTPTypes
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("swift-http-types API", .timeLimit(.minutes(1)))
struct HTTPTypesTests {
    @Test("data(for: HTTPRequest): the body, the status and the header fields; redirects followed")
    func data() async throws {
        try await withServer { server in
            let session = Session(configuration: testConfiguration())
            defer { session.invalidateAndCancel() }
            let (body, response) = try await session.data(for: HTTPRequest(url: server.url("/bytes/4096?seed=5")))
            #expect(body == TestServer.bytes(count: 4096, seed: 5))
            #expect(response.status == .ok)
            #expect(response.headerFields[.contentLength] == "4096")
            #expect(response.headerFields[.eTag] == "\"4096-5\"")
            #expect(response.headerFields[.acceptRanges] == "bytes")

            let (redirected, final) = try await session.data(for: HTTPRequest(url: server.url("/redirect/2")))
            #expect(final.status.code == 200)
            #expect(redirected.count == 16)

            let (_, missing) = try await session.data(for: HTTPRequest(url: server.url("/status/404")))
            #expect(missing.status == .notFound)
            #expect(missing.status.kind == .clientError)
        }
    }

    @Test("request fields reach the server; repeated ones joined (Cookie with '; '); each Set-Cookie kept apart")
    func fields() async throws {
        try await withServer { server in
            let session = Session(configuration: testConfiguration())
            defer { session.invalidateAndCancel() }
            var request = HTTPRequest(url: server.url("/headers"))
            request.headerFields.append(HTTPField(name: HTTPField.Name("X-Trace")!, value: "a"))
            request.headerFields.append(HTTPField(name: HTTPField.Name("X-Trace")!, value: "b"))
            request.headerFields.append(HTTPField(name: .cookie, value: "one=1"))
            request.headerFields.append(HTTPField(name: .cookie, value: "two=2"))
            request.headerFields[.accept] = "application/json"
            let (body, _) = try await session.data(for: request)
            let seen = jsonObject(body)
            #expect(seen["x-trace"] as? String == "a, b")
            #expect(seen["cookie"] as? String == "one=1; two=2")
            #expect(seen["accept"] as? String == "application/json")

            let (_, cookies) = try await session.data(for: HTTPRequest(url: server.url("/cookies/set?a=1&b=2")))
            #expect(cookies.headerFields[values: .setCookie].sorted() == ["a=1; Path=/", "b=2; Path=/"])
        }
    }

    @Test("upload(for:from:) and upload(for:fromFile:) send every byte with the request's method")
    func uploads() async throws {
        try await withServer { server in
            let session = Session(configuration: testConfiguration())
            defer { session.invalidateAndCancel() }
            let body = TestServer.bytes(count: 200_000, seed: 8)
            let request = HTTPRequest(method: .put, url: server.url("/upload"))
            let (reply, response) = try await session.upload(for: request, from: body)
            #expect(response.status == .ok)
            #expect(jsonObject(reply)["method"] as? String == "PUT")
            #expect(jsonObject(reply)["sha256"] as? String == TestServer.sha256Hex(body))

            let file = FileManager.default.temporaryDirectory.appendingPathComponent("courier-ht-\(UUID()).bin")
            try body.write(to: file)
            defer { try? FileManager.default.removeItem(at: file) }
            let (fileReply, _) = try await session.upload(
                for: HTTPRequest(method: .post, url: server.url("/upload")),
                fromFile: file
            )
            #expect(jsonObject(fileReply)["method"] as? String == "POST")
            #expect(jsonObject(fileReply)["sha256"] as? String == TestServer.sha256Hex(body))
        }
    }

    @Test("download(for:) hands over a file of the caller's; bytes(for:) streams the body after the head")
    func downloadAndBytes() async throws {
        try await withServer { server in
            let session = Session(configuration: testConfiguration())
            defer { session.invalidateAndCancel() }
            let (file, response) = try await session.download(for: HTTPRequest(url: server.url("/bytes/300000?seed=9")))
            defer { try? FileManager.default.removeItem(at: file) }
            #expect(response.status == .ok)
            #expect(try Data(contentsOf: file) == TestServer.bytes(count: 300_000, seed: 9))

            let (bytes, head) = try await session.bytes(for: HTTPRequest(url: server.url("/bytes/70000?seed=10")))
            #expect(head.headerFields[.contentLength] == "70000")
            var collected = Data()
            for try await byte in bytes {
                collected.append(byte)
            }
            #expect(collected == TestServer.bytes(count: 70_000, seed: 10))
        }
    }

    @Test("a task's httpResponse; a request without an authority throws badURL; a refused connection throws")
    func taskResponseAndErrors() async throws {
        try await withServer { server in
            let (session, delegate) = makeRecordingSession()
            defer { session.invalidateAndCancel() }
            let task = session.dataTask(with: server.url("/bytes/10"))
            #expect(task.httpResponse == nil)
            task.resume()
            let error = try await delegate.completion(of: task)
            #expect(error == nil)
            #expect(task.httpResponse?.status == .ok)
            #expect(task.httpResponse?.headerFields[.contentLength] == "10")

            let relative = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/bytes/10")
            await #expect {
                _ = try await session.data(for: relative)
            } throws: { error in
                CourierError.Code.of(error) == .badURL
            }
            let unsupported = HTTPRequest(method: .get, scheme: "ftp", authority: "127.0.0.1", path: "/x")
            await #expect {
                _ = try await session.data(for: unsupported)
            } throws: { error in
                CourierError.Code.of(error) == .unsupportedURL
            }
            await #expect {
                _ = try await session.data(for: HTTPRequest(url: URL(string: "http://127.0.0.1:9/")!))
            } throws: { error in
                CourierError.Code.of(error) == .cannotConnectToHost
            }
        }
    }
}
