import Courier
import CourierConcurrency
package import Foundation

/// Whether NetworkManager says the network is metered: its `Metered` property (`NMMetered`: 0 unknown, 1 yes, 2 no,
/// 3 guessed yes, 4 guessed no), read over the system bus with `busctl`, else `gdbus`. Nil where NetworkManager does
/// not answer (not installed, not running, no system bus, neither tool).
///
/// A read spawns a tool, so the answer is kept for ``maximumAge`` seconds: courierd asks before every attempt.
package final class NetworkManagerMetering: Sendable {
    private struct Cached {
        var answer: Bool?
        var at: Date
    }

    private let environment: [String: String]
    package let maximumAge: TimeInterval
    private let cache = LockedValue<Cached?>(nil)

    /// `environment` is the tools': `DBUS_SYSTEM_BUS_ADDRESS` picks another system bus (tests).
    package init(environment: [String: String], maximumAge: TimeInterval = 5) {
        self.environment = environment
        self.maximumAge = maximumAge
    }

    /// True on a metered network (NetworkManager knows or guesses so), false on an unmetered one, nil when
    /// NetworkManager does not say.
    package func isMetered(now: Date = Date()) -> Bool? {
        if let cached = cache.withLock({ $0 }), now.timeIntervalSince(cached.at) < maximumAge {
            return cached.answer
        }
        let answer = Self.query(environment: environment).flatMap(Self.meaning(of:))
        cache.withLock { $0 = Cached(answer: answer, at: now) }
        return answer
    }

    /// The `Metered` value, from `busctl` (`u 4`) or `gdbus` (`(<uint32 4>,)`).
    private static func query(environment: [String: String]) -> UInt32? {
        let busctl = [
            "busctl", "--system", "get-property", "org.freedesktop.NetworkManager", "/org/freedesktop/NetworkManager",
            "org.freedesktop.NetworkManager", "Metered",
        ]
        if let printed = ProcessSpawner.output(of: busctl, environment: environment), let value = parse(printed) {
            return value
        }
        let gdbus = [
            "gdbus", "call", "--system", "--dest", "org.freedesktop.NetworkManager", "--object-path",
            "/org/freedesktop/NetworkManager", "--method", "org.freedesktop.DBus.Properties.Get",
            "org.freedesktop.NetworkManager", "Metered",
        ]
        return ProcessSpawner.output(of: gdbus, environment: environment).flatMap(parse)
    }

    /// The number in either tool's answer: `u 4` or `(<uint32 4>,)`; nil for anything else (an error message).
    package static func parse(_ printed: String) -> UInt32? {
        let text = printed.trimmingCharacters(in: .whitespacesAndNewlines)
        if text.hasPrefix("u ") {
            return UInt32(text.dropFirst(2))
        }
        if text.hasPrefix("(<uint32 "), text.hasSuffix(">,)") {
            return UInt32(text.dropFirst("(<uint32 ".count).dropLast(">,)".count))
        }
        return nil
    }

    /// `NMMetered`: yes and guessed yes are metered; no and guessed no are not; unknown says nothing.
    package static func meaning(of value: UInt32) -> Bool? {
        switch value {
        case 1, 3: true
        case 2, 4: false
        default: nil
        }
    }
}
