import BenchClientKit
import Courier
import Foundation
public import SessionClientKit

extension Session: URLLoadingSession {}

extension SessionClient where Loader == Session {
    /// Courier's `Session`, sized for the workload: as many connections and running transfers as the workload
    /// keeps in flight, downloads staged in the output folder so that the final move is a rename.
    /// `COURIER_BENCH_LOOPS` sets the engine's loop count.
    static func courier(plan: TransferPlan) -> SessionClient {
        var configuration = SessionConfiguration.ephemeral
        configuration.httpMaximumConnectionsPerHost = plan.workload.concurrency
        configuration.maximumConcurrentTransfers = plan.workload.concurrency
        configuration.temporaryDirectory = plan.output
        if let loops = ProcessInfo.processInfo.environment["COURIER_BENCH_LOOPS"].flatMap(Int.init) {
            configuration.engineLoopCount = loops
        }
        return SessionClient(plan: plan, session: Session(configuration: configuration))
    }
}
