import CourierConcurrency
internal import CSupport

/// How many transfer engines this process still has, and how many of their loops closed with libuv handles open:
/// courierd checks both when it stops (none may be left, none may have leaked).
package enum EngineCensus {
    private static let live = WaitableValue(0)

    /// Engines created and not yet destroyed.
    package static var liveEngines: Int {
        live.withLock { $0 }
    }

    /// Loops that had handles open when they closed (`uv_loop_close` said busy), since the process started.
    package static var leakedLoops: Int64 {
        cr_leaked_loop_count()
    }

    /// Blocks until every engine is destroyed or `seconds` have passed; whether none is left.
    package static func waitForNoLiveEngines(atMost seconds: Double) -> Bool {
        live.wait(atMost: seconds) { $0 == 0 }
    }

    static func engineCreated() {
        live.withLock { $0 += 1 }
    }

    static func engineDestroyed() {
        live.withLock { $0 -= 1 }
    }
}
