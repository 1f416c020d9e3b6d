public import BenchClientKit
public import Courier
import Foundation

extension SessionConfiguration {
    /// Courier's session for a benchmark run, whichever API calls it: ephemeral, as many connections and running
    /// transfers as the workload keeps in flight, downloads staged in the output folder so that the final move is a
    /// rename. `COURIER_BENCH_LOOPS` sets the engine's loop count.
    public static func benchmark(for plan: TransferPlan) -> SessionConfiguration {
        var configuration = SessionConfiguration.ephemeral
        configuration.httpMaximumConnectionsPerHost = plan.workload.concurrency
        configuration.maximumConcurrentTransfers = plan.workload.concurrency
        configuration.temporaryDirectory = plan.output
        if let loops = ProcessInfo.processInfo.environment["COURIER_BENCH_LOOPS"].flatMap(Int.init) {
            configuration.engineLoopCount = loops
        }
        if let authority = plan.certificateAuthority, let pem = try? Data(contentsOf: authority) {
            configuration.trustedCertificateAuthorities = .pem(pem)
        }
        return configuration
    }
}
