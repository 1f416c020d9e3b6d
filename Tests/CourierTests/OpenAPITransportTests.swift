import Courier
import CourierOpenAPI
import CourierTestSupport
import Foundation
import HTTPTypes
import OpenAPIRuntime
import Testing

/// `CourierTransport` as a generated client calls it: an operation's request (its path and query) on the server URL,
/// a body sent, the response body streamed.
@Suite("OpenAPI transport", .timeLimit(.minutes(1)))
struct OpenAPITransportTests {
    @Test("a GET on a server URL with a base path; a POST with a body; the response streams")
    func operations() async throws {
        try await withServer { server in
            let session = Session(configuration: testConfiguration())
            defer { session.invalidateAndCancel() }
            let transport = CourierTransport(session: session)
            // A base path on the server URL: the operation's path goes after it.
            let baseURL = server.url("/redirect-to").deletingLastPathComponent()
            let (response, body) = try await transport.send(
                HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/bytes/300000?seed=61"),
                body: nil,
                baseURL: baseURL,
                operationID: "getBytes"
            )
            #expect(response.status == .ok)
            let received = try await [UInt8](collecting: try #require(body), upTo: .max)
            #expect(Data(received) == TestServer.bytes(count: 300_000, seed: 61))

            var post = HTTPRequest(method: .post, scheme: nil, authority: nil, path: "/upload")
            post.headerFields[.contentType] = "application/octet-stream"
            let (answer, answerBody) = try await transport.send(
                post,
                body: HTTPBody(TestServer.bytes(count: 5000, seed: 62)),
                baseURL: server.baseURL,
                operationID: "upload"
            )
            #expect(answer.status == .ok)
            let json = jsonObject(Data(try await [UInt8](collecting: try #require(answerBody), upTo: .max)))
            #expect(json["length"] as? Int == 5000 && json["method"] as? String == "POST")
            #expect(json["sha256"] as? String == TestServer.sha256Hex(TestServer.bytes(count: 5000, seed: 62)))
        }
    }

    @Test("a server URL under a path prefix; a refused connection throws CourierError")
    func prefixAndFailure() async throws {
        let prefixed = try CourierTransport.resolve(
            HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/pets?limit=2"),
            against: URL(string: "https://api.example/v1/")!
        )
        #expect(prefixed.scheme == "https" && prefixed.authority == "api.example" && prefixed.path == "/v1/pets?limit=2")
        let transport = CourierTransport(session: Session(configuration: testConfiguration()))
        await #expect(throws: CourierError.self) {
            _ = try await transport.send(
                HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/"),
                body: nil,
                baseURL: URL(string: "http://127.0.0.1:1")!,
                operationID: "nothing"
            )
        }
    }
}
