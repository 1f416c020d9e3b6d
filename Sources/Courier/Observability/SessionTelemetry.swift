import CourierConcurrency
import Foundation
import Metrics
import Tracing

/// A session's figures (swift-metrics) and spans (swift-distributed-tracing), as AsyncHTTPClient offers tracing:
///
/// - `courier_tasks_running` (a meter): tasks started and not yet ended;
/// - `courier_tasks_completed_total`, by `outcome` (`success`, `failure`, `cancelled`);
/// - `courier_task_failures_total`, by `code` (the ``CourierError/Code-swift.struct``'s name);
/// - `courier_bytes_received_total` and `courier_bytes_sent_total` (body bytes, counted when a task ends);
///
/// each with the dimension `session` (`default`, or `background` for courierd's sessions). One span per task, named
/// after the method (`GET`), of kind client, from `resume()` to its end, with the URL, the final status and the
/// error; its W3C `traceparent` (whatever the tracer injects) goes on each of the task's requests.
final class SessionTelemetry: Sendable {
    private let factory: any MetricsFactory
    /// nil when no tracer was bootstrapped (the no-op one): tasks then make no span at all.
    let tracer: (any Tracer)?
    private let dimensions: [(String, String)]
    private let running: Meter
    private let received: Counter
    private let sent: Counter
    private let byOutcome = LockedValue<[String: Counter]>([:])
    private let byCode = LockedValue<[String: Counter]>([:])

    init(_ configuration: SessionConfiguration) {
        let factory = configuration.metricsFactory ?? MetricsSystem.factory
        let tracer = configuration.tracer ?? InstrumentationSystem.tracer
        self.factory = factory
        self.tracer = tracer is NoOpTracer ? nil : tracer
        let dimensions = [("session", configuration.identifier == nil ? "default" : "background")]
        self.dimensions = dimensions
        running = Meter(label: "courier_tasks_running", dimensions: dimensions, factory: factory)
        received = Counter(label: "courier_bytes_received_total", dimensions: dimensions, factory: factory)
        sent = Counter(label: "courier_bytes_sent_total", dimensions: dimensions, factory: factory)
    }

    /// A task started (its first `resume()`): its span, when there is a tracer.
    func taskStarted(method: String, url: URL?) -> (any Span)? {
        running.increment()
        guard let tracer else {
            return nil
        }
        let span = tracer.startSpan(method.uppercased(), context: ServiceContext.current ?? .topLevel, ofKind: .client)
        span.updateAttributes { attributes in
            attributes["http.request.method"] = method.uppercased()
            if let url {
                attributes["url.full"] = url.absoluteString
            }
        }
        return span
    }

    /// A task that started ended: the figures, and its span's end.
    func taskEnded(_ span: (any Span)?, error: CourierError?, status: Int?, sentBytes: Int64, receivedBytes: Int64) {
        running.decrement()
        received.increment(by: max(0, receivedBytes))
        sent.increment(by: max(0, sentBytes))
        let outcome = error == nil ? "success" : error?.code == .cancelled ? "cancelled" : "failure"
        counter(in: byOutcome, "courier_tasks_completed_total", ("outcome", outcome)).increment()
        if let error, error.code != .cancelled {
            counter(in: byCode, "courier_task_failures_total", ("code", "\(error.code)")).increment()
        }
        guard let span else {
            return
        }
        if let status {
            span.attributes["http.response.status_code"] = status
        }
        if let error {
            span.recordError(error)
            span.setStatus(SpanStatus(code: .error, message: error.message))
        }
        span.end()
    }

    /// Writes the span's context into a request's header lines (`traceparent`, …).
    func inject(_ span: any Span, into lines: inout [String]) {
        tracer?.inject(span.context, into: &lines, using: HeaderLineInjector())
    }

    private func counter(in cache: LockedValue<[String: Counter]>, _ label: String, _ dimension: (String, String))
        -> Counter
    {
        cache.withLock { counters in
            if let existing = counters[dimension.1] {
                return existing
            }
            let made = Counter(label: label, dimensions: dimensions + [dimension], factory: factory)
            counters[dimension.1] = made
            return made
        }
    }
}

/// Injects into `"Name: value"` header lines.
private struct HeaderLineInjector: Injector {
    func inject(_ value: String, forKey key: String, into carrier: inout [String]) {
        guard !key.contains(where: { $0 == ":" || $0 == "\r" || $0 == "\n" }),
            !value.contains(where: { $0 == "\r" || $0 == "\n" })
        else {
            return
        }
        carrier.append("\(key): \(value)")
    }
}
