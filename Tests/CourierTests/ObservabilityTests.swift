import Courier
import CourierTestSupport
import Foundation
import InMemoryTracing
import Metrics
import MetricsTestKit
import Testing
import Tracing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The session's swift-metrics figures and swift-distributed-tracing spans, with the test kits of both packages
/// given to the session (no global bootstrap).
@Suite("Observability", .timeLimit(.minutes(1)))
struct ObservabilityTests {
    @Test("figures: tasks running, completed by outcome, failures by code, bytes; one span per task, context injected")
    func figuresAndSpans() async throws {
        try await withServer { server in
            let metrics = TestMetrics()
            let tracer = InMemoryTracer()
            var configuration = testConfiguration()
            configuration.metricsFactory = metrics
            configuration.tracer = tracer
            let session = Session(configuration: configuration)
            defer { session.invalidateAndCancel() }
            _ = try await session.data(from: server.url("/bytes/1000?seed=1"))
            _ = try await session.data(from: server.url("/bytes/2000?seed=2"))
            var put = URLRequest(url: server.url("/upload"))
            put.httpMethod = "PUT"
            _ = try await session.upload(for: put, from: Data(count: 3000))
            // Nothing listens on port 1 of loopback: cannotConnectToHost.
            await #expect(throws: CourierError.self) {
                _ = try await session.data(from: URL(string: "http://127.0.0.1:1/")!)
            }

            let kind = [("session", "default")]
            #expect(
                try metrics.expectCounter("courier_tasks_completed_total", kind + [("outcome", "success")]).totalValue
                    == 3)
            #expect(
                try metrics.expectCounter("courier_tasks_completed_total", kind + [("outcome", "failure")]).totalValue
                    == 1)
            #expect(
                try metrics.expectCounter("courier_task_failures_total", kind + [("code", "cannotConnectToHost")])
                    .totalValue == 1)
            #expect(try metrics.expectCounter("courier_bytes_received_total", kind).totalValue >= 3000)
            #expect(try metrics.expectCounter("courier_bytes_sent_total", kind).totalValue == 3000)
            #expect(try metrics.expectMeter("courier_tasks_running", kind).lastValue == 0)

            let spans = tracer.finishedSpans
            #expect(spans.map(\.operationName).sorted() == ["GET", "GET", "GET", "PUT"])
            #expect(spans.allSatisfy { $0.kind == .client })
            let failed = try #require(spans.first { $0.status?.code == .error })
            #expect(failed.errors.count == 1)
            let first = server.url("/bytes/1000?seed=1").absoluteString
            let ok = try #require(spans.first { $0.attributes["url.full"]?.toSpanAttribute() == .string(first) })
            #expect(ok.attributes["http.response.status_code"]?.toSpanAttribute() == .int64(200))
            // Each request carried its span's context (the in-memory tracer's own fields).
            let sent = server.requests.filter { $0.uri.hasPrefix("/bytes/") }
            #expect(sent.count == 2)
            #expect(
                sent.allSatisfy {
                    $0.header(InMemoryTracer.traceIDKey) != nil && $0.header(InMemoryTracer.spanIDKey) != nil
                })
            let injectedSpans = Set(sent.compactMap { $0.header(InMemoryTracer.spanIDKey) })
            #expect(injectedSpans.isSubset(of: Set(spans.map(\.spanID))))
        }
    }

    @Test("a task's span is a child of the ServiceContext its resume() runs in")
    func parentSpan() async throws {
        try await withServer { server in
            let tracer = InMemoryTracer()
            var configuration = testConfiguration()
            configuration.tracer = tracer
            let session = Session(configuration: configuration)
            defer { session.invalidateAndCancel() }
            try await tracer.withSpan("parent") { _ in
                _ = try await session.data(from: server.url("/bytes/10"))
            }
            let spans = tracer.finishedSpans
            let parent = try #require(spans.first { $0.operationName == "parent" })
            let child = try #require(spans.first { $0.operationName == "GET" })
            #expect(child.parentSpanID == parent.spanID && child.traceID == parent.traceID)
        }
    }
}
