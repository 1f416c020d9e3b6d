import Courier
import CourierTestSupport
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("Data tasks", .timeLimit(.minutes(1)))
struct DataTaskTests {
    @Test("async data(from:) returns the exact bytes")
    func asyncData() async throws {
        try await withServer { server in
            let session = Session(configuration: testConfiguration())
            defer { session.invalidateAndCancel() }
            let (data, response) = try await session.data(from: server.url("/bytes/100000?seed=7"))
            #expect((response as? HTTPURLResponse)?.statusCode == 200)
            #expect(data == TestServer.bytes(count: 100_000, seed: 7))
        }
    }

    @Test(
        "Session.shared works for the conveniences",
        onlyOverHTTP1("Session.shared trusts the system's CAs only, not the test servers'")
    )
    func sharedSession() async throws {
        try await withServer { server in
            let (data, _) = try await Session.shared.data(from: server.url("/bytes/1000?seed=1"))
            #expect(data == TestServer.bytes(count: 1000, seed: 1))
        }
    }

    @Test("delegate order: response, data..., metrics, completion; on the delegate queue; exactly once")
    func delegateOrder() async throws {
        try await withServer { server in
            let (session, delegate) = makeRecordingSession()
            defer { session.invalidateAndCancel() }
            let task = session.dataTask(with: server.url("/bytes/300000?seed=2"))
            #expect(task.state == .suspended)
            task.taskDescription = "episode-42"
            task.resume()
            let error = try await delegate.completion(of: task)
            #expect(error == nil)
            #expect(task.state == .completed)
            #expect(task.taskDescription == "episode-42")
            let events = delegate.events(of: task)
            guard case .response(_, 200) = events.first else {
                Issue.record("first event is not the response: \(events)")
                return
            }
            guard case .completed = events.last else {
                Issue.record("last event is not the completion: \(events)")
                return
            }
            let metricsIndex = events.firstIndex { if case .metrics = $0 { return true } else { return false } }
            #expect(metricsIndex == events.count - 2)
            #expect(delegate.body(of: task) == TestServer.bytes(count: 300_000, seed: 2))
            #expect(task.countOfBytesReceived == 300_000)
            #expect(task.countOfBytesExpectedToReceive == 300_000)
            #expect((task.response as? HTTPURLResponse)?.statusCode == 200)
            // Give a duplicate completion a chance to show up, then check for exactly one.
            let probe = session.dataTask(with: server.url("/bytes/1"))
            probe.resume()
            try await delegate.completion(of: probe)
            let completions = delegate.log.events.filter {
                if case .completed(task.taskIdentifier, _) = $0 { return true } else { return false }
            }
            #expect(completions.count == 1)
            #expect(
                !delegate.log.events.contains { if case .notOnDelegateQueue = $0 { return true } else { return false } }
            )
        }
    }

    @Test("completion handler gets data and response once")
    func completionHandler() async throws {
        try await withServer { server in
            let session = Session(configuration: testConfiguration())
            defer { session.invalidateAndCancel() }
            let log = EventLog<String>()
            let task = session.dataTask(with: server.url("/bytes/5000?seed=3")) { data, response, error in
                #expect(error == nil)
                #expect(data == TestServer.bytes(count: 5000, seed: 3))
                #expect((response as? HTTPURLResponse)?.statusCode == 200)
                log.append("done")
            }
            task.resume()
            try await log.wait { $0.count == 1 }
            #expect(task.state == .completed)
        }
    }

    @Test("a 404 is a success with the status")
    func notFoundIsSuccess() async throws {
        try await withServer { server in
            let session = Session(configuration: testConfiguration())
            defer { session.invalidateAndCancel() }
            let (_, response) = try await session.data(from: server.url("/status/404"))
            #expect((response as? HTTPURLResponse)?.statusCode == 404)
        }
    }

    @Test("additional headers and request headers reach the server; request headers win")
    func additionalHeaders() async throws {
        try await withServer { server in
            var configuration = testConfiguration()
            configuration.httpAdditionalHeaders = ["X-Session": "s", "X-Both": "session"]
            let session = Session(configuration: configuration)
            defer { session.invalidateAndCancel() }
            var request = URLRequest(url: server.url("/headers"))
            request.setValue("r", forHTTPHeaderField: "X-Request")
            request.setValue("request", forHTTPHeaderField: "X-Both")
            let (data, _) = try await session.data(for: request)
            let headers = jsonObject(data)
            #expect(headers["x-session"] as? String == "s")
            #expect(headers["x-request"] as? String == "r")
            #expect(headers["x-both"] as? String == "request")
        }
    }

    @Test("HEAD gets headers and no body")
    func head() async throws {
        try await withServer { server in
            let session = Session(configuration: testConfiguration())
            defer { session.invalidateAndCancel() }
            var request = URLRequest(url: server.url("/bytes/4096"))
            request.httpMethod = "HEAD"
            let (data, response) = try await session.data(for: request)
            #expect(data.isEmpty)
            #expect((response as? HTTPURLResponse)?.header("Content-Length") == "4096")
        }
    }

    @Test("chunked bodies arrive whole")
    func chunked() async throws {
        try await withServer { server in
            let session = Session(configuration: testConfiguration())
            defer { session.invalidateAndCancel() }
            let (data, _) = try await session.data(from: server.url("/bytes/200000?seed=4&chunked=1"))
            #expect(data == TestServer.bytes(count: 200_000, seed: 4))
        }
    }

    @Test("POST body from the request is sent")
    func postBody() async throws {
        try await withServer { server in
            let session = Session(configuration: testConfiguration())
            defer { session.invalidateAndCancel() }
            var request = URLRequest(url: server.url("/echo"))
            request.httpMethod = "POST"
            request.httpBody = Data("hello courier".utf8)
            request.setValue("text/plain", forHTTPHeaderField: "Content-Type")
            let (data, _) = try await session.data(for: request)
            #expect(String(decoding: data, as: UTF8.self) == "hello courier")
        }
    }
}
