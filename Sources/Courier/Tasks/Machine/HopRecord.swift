import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One HTTP exchange a task made (a redirect hop, an authentication retry, or the final exchange).
struct HopRecord: Sendable, Equatable {
    var request: TaskRequest
    var start: Date
    var response: TaskResponse?
    /// The exchange was answered from the URL cache, with no transfer.
    var servedFromCache = false
    /// The backend's timings, once the hop's COMPLETE arrived. Held out of line: a hop waiting for a slot stays
    /// small.
    var metrics: TransferMetrics? {
        get { timings?.metrics }
        set { timings = newValue.map(Timings.init) }
    }
    private var timings: Timings?

    private final class Timings: Sendable {
        let metrics: TransferMetrics
        init(_ metrics: TransferMetrics) {
            self.metrics = metrics
        }
    }

    init(request: TaskRequest, start: Date) {
        self.request = request
        self.start = start
    }

    static func == (lhs: HopRecord, rhs: HopRecord) -> Bool {
        lhs.request == rhs.request && lhs.start == rhs.start && lhs.response == rhs.response
            && lhs.servedFromCache == rhs.servedFromCache
            && lhs.metrics == rhs.metrics
    }
}
