import Courier
import CourierDaemon
import CourierTestSupport
import Foundation
import Testing

/// One download written once and run on each backend under the task layer: the in-process engine, the serialised
/// backend (every spec and event through its encoding) and courierd (a real daemon process). The response reaches
/// the task as the server sent it on each: repeated fields apart and in their order, and the HTTP version; its metrics
/// are the exchange's.
@Suite("the response through every backend", .blockingWaits, .serialized)
struct ResponseAcrossBackendsTests {
    enum Backend: String, CaseIterable, Sendable {
        case inProcess
        case serialised
        case courierd
    }

    @Test("repeated Set-Cookie fields, one with an Expires date, and the HTTP version", arguments: Backend.allCases)
    func responseWhole(_ backend: Backend) async throws {
        let server = try await TestServer.start()
        let place = BackgroundSessionTests.Place()
        defer { place.cleanup() }
        var configuration: SessionConfiguration
        switch backend {
        case .inProcess, .serialised:
            configuration = .ephemeral
            configuration.serialisesBackend = backend == .serialised
        case .courierd:
            configuration = place.configuration("com.example.fields.\(backend.rawValue)")
        }
        let recorder = BackgroundSessionTests.Recorder()
        let session = Session(configuration: configuration, delegate: recorder)
        let expires = "Wed, 21 Oct 2037 07:28:00 GMT"
        let first = "1; Expires=\(expires)".addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
        let task = session.downloadTask(with: server.url("/cookies/set?a=\(first)&b=2&c=3"))
        task.resume()
        #expect(recorder.waitForCompletions(1))
        #expect(recorder.errors[task.taskIdentifier] == .some(nil))
        let head = try #require(task.receivedHead)
        #expect(head.status == 200)
        #expect(head.httpVersion == "HTTP/1.1")
        #expect(head.setCookies == ["a=1; Expires=\(expires); Path=/", "b=2; Path=/", "c=3; Path=/"])
        #expect(head.fieldLines.filter { $0.name.lowercased() == "set-cookie" }.count == 3)
        // The metrics describe the exchange that really happened (for courierd, its own, measured there).
        let exchange = try #require(recorder.metrics[task.taskIdentifier]?.transactionMetrics.last)
        #expect(exchange.remoteAddress == "127.0.0.1")
        #expect(exchange.remotePort == server.port)
        #expect(exchange.networkProtocolName == "http/1.1")
        #expect(exchange.responseEndDate != nil)
        #expect(exchange.countOfResponseHeaderBytesReceived > 0)
        session.finishTasksAndInvalidate()
        try await server.shutdown()
    }
}
