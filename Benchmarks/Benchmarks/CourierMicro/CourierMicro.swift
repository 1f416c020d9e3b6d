import Benchmark
import BenchmarkSupport
import Courier
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Microbenchmarks of Courier's hot paths, with allocation counts. Thresholds live in Thresholds/ (see README.md):
/// `swift package benchmark thresholds check` fails when a figure regresses past them.
let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .mallocCountTotal, .throughput],
        timeUnits: .microseconds,
        warmupIterations: 10,
        maxDuration: .seconds(3),
        maxIterations: 100_000,
        thresholds: [.mallocCountTotal: .init(relative: [.p90: 5])]
    )

    // Creating and resuming a data task that has to wait for a connection slot: the Swift task object, its
    // registration, the request's deep copy and the command to the loop. One iteration, one task.
    Benchmark("SubmitTask", configuration: .init(scalingFactor: .kilo)) { benchmark in
        let server = try LoopbackServer(stalled: true)
        let session = Session(configuration: .queueing)
        let url = URL(string: "http://127.0.0.1:\(server.port)/queued")!
        session.dataTask(with: url).resume()
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            session.dataTask(with: url).resume()
        }
        benchmark.stopMeasurement()
        session.invalidateAndCancel()
        server.stop()
    }

    // One GET of a 5-byte body on a kept-alive connection, through the async API: submit, the engine's batch of
    // RESPONSE, DATA and COMPLETE events, their delivery to the task and the continuation's resumption.
    Benchmark("SmallRequestEndToEnd") { benchmark in
        let server = try LoopbackServer(stalled: false)
        let session = Session(configuration: .ephemeral)
        let url = URL(string: "http://127.0.0.1:\(server.port)/small")!
        _ = try await session.data(from: url)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(try await session.data(from: url))
        }
        benchmark.stopMeasurement()
        session.finishTasksAndInvalidate()
        server.stop()
    }

    // One event batch delivered to a delegate: a 256 KiB body arrives as DATA events (one batch per loop
    // iteration), each handed to the delegate queue and to `didReceive data`. Measured per request, with the
    // number of batches it took in the benchmark's counter.
    Benchmark("DeliverEventBatches256KiB") { benchmark in
        let server = try LoopbackServer(stalled: false)
        let delegate = CountingDelegate()
        let session = Session(configuration: .ephemeral, delegate: delegate)
        let url = URL(string: "http://127.0.0.1:\(server.port)/large")!
        try await delegate.run(session.dataTask(with: url))
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            try await delegate.run(session.dataTask(with: url))
        }
        benchmark.stopMeasurement()
        session.finishTasksAndInvalidate()
        server.stop()
    }
}

extension SessionConfiguration {
    /// One transfer at a time: every task after the first waits for the slot.
    fileprivate static var queueing: SessionConfiguration {
        var configuration = SessionConfiguration.ephemeral
        configuration.maximumConcurrentTransfers = 1
        configuration.httpMaximumConnectionsPerHost = 1
        configuration.engineLoopCount = 1
        return configuration
    }
}
