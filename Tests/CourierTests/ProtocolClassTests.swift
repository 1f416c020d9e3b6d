import Courier
import CourierConcurrency
import CourierTestSupport
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// MARK: An iOS test suite's stub, ported

/// The `MockURLProtocol` that iOS test suites copy from one another, as it is but for the renames (`URLProtocol` →
/// `SessionURLProtocol`) and Swift 6's `nonisolated(unsafe)` on its static handler.
final class MockURLProtocol: SessionURLProtocol, @unchecked Sendable {
    nonisolated(unsafe) static var requestHandler: ((URLRequest) throws -> (HTTPURLResponse, Data))?

    override class func canInit(with request: URLRequest) -> Bool {
        true
    }

    override class func canonicalRequest(for request: URLRequest) -> URLRequest {
        request
    }

    override func startLoading() {
        guard let handler = MockURLProtocol.requestHandler else {
            fatalError("Handler is unavailable.")
        }
        do {
            let (response, data) = try handler(request)
            client?.urlProtocol(self, didReceive: response, cacheStoragePolicy: .notAllowed)
            client?.urlProtocol(self, didLoad: data)
            client?.urlProtocolDidFinishLoading(self)
        } catch {
            client?.urlProtocol(self, didFailWithError: error)
        }
    }

    override func stopLoading() {}
}

/// The code under test in such a suite: a small API client.
struct UserClient {
    struct User: Codable, Equatable {
        var id: Int
        var name: String
    }

    let session: Session
    let baseURL: URL

    func user(_ id: Int) async throws -> User {
        var request = URLRequest(url: baseURL.appendingPathComponent("users/\(id)"))
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        let (data, response) = try await session.data(for: request)
        guard (response as? HTTPURLResponse)?.statusCode == 200 else {
            throw URLError(.badServerResponse)
        }
        return try JSONDecoder().decode(User.self, from: data)
    }
}

@Suite("Protocol classes: interception and middleware", .serialized)
struct ProtocolClassTests {
    static let base = URL(string: "http://127.0.0.1:9/api")!  // never reached: the protocol class answers

    @Test("a ported iOS test: the client decodes what the stub returns, and the stub saw the request")
    func portedMockTest() async throws {
        var configuration = SessionConfiguration.ephemeral
        configuration.protocolClasses = [MockURLProtocol.self]
        let session = Session(configuration: configuration)
        defer { session.finishTasksAndInvalidate() }
        let seen = LockedValue<URLRequest?>(nil)
        MockURLProtocol.requestHandler = { request in
            seen.withLock { $0 = request }
            let response = HTTPURLResponse(
                url: request.url!,
                statusCode: 200,
                httpVersion: nil,
                headerFields: ["Content-Type": "application/json"]
            )!
            return (response, Data(#"{"id": 7, "name": "Ada"}"#.utf8))
        }
        defer { MockURLProtocol.requestHandler = nil }
        let user = try await UserClient(session: session, baseURL: Self.base).user(7)
        #expect(user == UserClient.User(id: 7, name: "Ada"))
        let request = try #require(seen.withLock { $0 })
        #expect(request.url?.path == "/api/users/7")
        #expect(request.value(forHTTPHeaderField: "Accept") == "application/json")
        #expect(request.httpMethod == "GET")
    }

    @Test("a stub's failure reaches the caller as a CourierError with the URLError's code")
    func stubbedFailure() async throws {
        var configuration = SessionConfiguration.ephemeral
        configuration.protocolClasses = [MockURLProtocol.self]
        let session = Session(configuration: configuration)
        defer { session.finishTasksAndInvalidate() }
        MockURLProtocol.requestHandler = { _ in throw URLError(.notConnectedToInternet) }
        defer { MockURLProtocol.requestHandler = nil }
        do {
            _ = try await session.data(from: Self.base)
            Issue.record("the stub's failure was not thrown")
        } catch let error as CourierError {
            #expect(error.code == .notConnectedToInternet)
        }
    }

    /// A stub that answers by path: a redirect, a Basic challenge, a body.
    final class RoutingProtocol: SessionURLProtocol, @unchecked Sendable {
        nonisolated(unsafe) static var stopped = 0

        override class func canInit(with request: URLRequest) -> Bool {
            request.url?.host == "127.0.0.1" && request.url?.port == 9
        }

        override func startLoading() {
            let url = request.url!
            func respond(_ status: Int, _ fields: [String: String] = [:], _ body: String = "") {
                let response = HTTPURLResponse(url: url, statusCode: status, httpVersion: nil, headerFields: fields)!
                client?.urlProtocol(self, didReceive: response, cacheStoragePolicy: .notAllowed)
                client?.urlProtocol(self, didLoad: Data(body.utf8))
                client?.urlProtocolDidFinishLoading(self)
            }
            switch url.path {
            case "/old":
                let target = URLRequest(url: URL(string: "http://127.0.0.1:9/new")!)
                let response = HTTPURLResponse(url: url, statusCode: 301, httpVersion: nil, headerFields: [:])!
                client?.urlProtocol(self, wasRedirectedTo: target, redirectResponse: response)
            case "/new":
                respond(200, ["Content-Length": "3"], "new")
            case "/private":
                let expected = "Basic " + Data("ann:pw".utf8).base64EncodedString()
                guard request.value(forHTTPHeaderField: "Authorization") == expected else {
                    respond(401, ["WWW-Authenticate": "Basic realm=\"stub\""], "who?")
                    return
                }
                respond(200, [:], "secret")
            case "/file":
                respond(200, ["Content-Length": "100000"], String(repeating: "f", count: 100_000))
            case "/forever":
                let response = HTTPURLResponse(url: url, statusCode: 200, httpVersion: nil, headerFields: [:])!
                client?.urlProtocol(self, didReceive: response, cacheStoragePolicy: .notAllowed)
            default:
                respond(404)
            }
        }

        override func stopLoading() {
            Self.stopped += 1
        }
    }

    @Test("a stub's redirect goes to the delegate and is followed; a stub's 401 is answered with the credential")
    func redirectsAndChallenges() async throws {
        var configuration = SessionConfiguration.ephemeral
        configuration.protocolClasses = [RoutingProtocol.self]
        let (session, delegate) = makeRecordingSession(configuration)
        defer { session.finishTasksAndInvalidate() }
        delegate.script {
            $0.challenge = { _ in (.useCredential, URLCredential(user: "ann", password: "pw", persistence: .none)) }
        }
        let moved = session.dataTask(with: URL(string: "http://127.0.0.1:9/old")!)
        moved.resume()
        #expect(try await delegate.completion(of: moved) == nil)
        #expect(String(decoding: delegate.body(of: moved), as: UTF8.self) == "new")
        let redirect = "redirect(\(moved.taskIdentifier), 301, http://127.0.0.1:9/new)"
        #expect(delegate.events(of: moved).contains { "\($0)" == redirect })
        #expect(delegate.metrics(of: moved).first?.transactionMetrics.count == 2)

        let guarded = session.dataTask(with: URL(string: "http://127.0.0.1:9/private")!)
        guarded.resume()
        #expect(try await delegate.completion(of: guarded) == nil)
        #expect(String(decoding: delegate.body(of: guarded), as: UTF8.self) == "secret")
    }

    @Test("a download from a stub is a file; cancelling a task stops its protocol instance")
    func downloadsAndCancel() async throws {
        var configuration = SessionConfiguration.ephemeral
        configuration.protocolClasses = [RoutingProtocol.self]
        let session = Session(configuration: configuration)
        defer { session.finishTasksAndInvalidate() }
        let (file, _) = try await session.download(from: URL(string: "http://127.0.0.1:9/file")!)
        defer { try? FileManager.default.removeItem(at: file) }
        #expect(try Data(contentsOf: file) == Data(String(repeating: "f", count: 100_000).utf8))

        let ended = EventLog<CourierError.Code?>()
        let task = session.dataTask(with: URL(string: "http://127.0.0.1:9/forever")!) { _, _, error in
            ended.append(CourierError.Code.of(error))
        }
        task.resume()
        try await Task.sleep(for: .milliseconds(100))
        task.cancel()
        #expect(try await ended.wait { !$0.isEmpty } == [.cancelled])
        #expect(RoutingProtocol.stopped == 1)
    }

    /// Middleware: loads each request itself through a session of its own, with a header added, and passes on what
    /// comes back.
    final class HeaderMiddleware: SessionURLProtocol, @unchecked Sendable {
        static let inner = Session(configuration: testConfiguration())
        private let running = LockedValue<SessionTask?>(nil)

        override class func canInit(with request: URLRequest) -> Bool {
            request.url?.path == "/headers"
        }

        override class func canonicalRequest(for request: URLRequest) -> URLRequest {
            var request = request
            request.setValue("added by middleware", forHTTPHeaderField: "X-Courier-Test")
            return request
        }

        override func startLoading() {
            let task = Self.inner.dataTask(with: request) { [self] data, response, error in
                if let error {
                    client?.urlProtocol(self, didFailWithError: error)
                    return
                }
                client?.urlProtocol(self, didReceive: response!, cacheStoragePolicy: .notAllowed)
                client?.urlProtocol(self, didLoad: data ?? Data())
                client?.urlProtocolDidFinishLoading(self)
            }
            running.withLock { $0 = task }
            task.resume()
        }

        override func stopLoading() {
            running.withLock { $0 }?.cancel()
        }
    }

    @Test("middleware: a protocol class that loads through another session adds a header every request carries")
    func middleware() async throws {
        try await withServer { server in
            var configuration = testConfiguration()
            configuration.protocolClasses = [HeaderMiddleware.self]
            let session = Session(configuration: configuration)
            defer { session.finishTasksAndInvalidate() }
            let (data, response) = try await session.data(from: server.url("/headers"))
            #expect((response as? HTTPURLResponse)?.statusCode == 200)
            #expect(jsonObject(data)["x-courier-test"] as? String == "added by middleware")
            // A request the class does not take goes to the network as it is.
            let (plain, _) = try await session.data(from: server.url("/bytes/16"))
            #expect(plain == TestServer.bytes(count: 16))
        }
    }
}
