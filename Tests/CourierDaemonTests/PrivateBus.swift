import CourierConcurrency
import CourierTestSupport
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A private D-Bus bus (`dbus-daemon --session`, which any test may start): its address, for
/// `DBUS_SESSION_BUS_ADDRESS` or `DBUS_SYSTEM_BUS_ADDRESS`. Stopped when released.
final class PrivateBus: Sendable {
    let address: String
    private let daemon: ChildProcess

    init() throws {
        let printed = LockedValue(Data())
        let gotAddress = DispatchSemaphore(value: 0)
        daemon = try ChildProcess(
            "/usr/bin/dbus-daemon",
            arguments: ["--session", "--nofork", "--print-address=1"],
            environment: ProcessInfo.processInfo.environment,
            standardOutput: .stream { chunk in
                let line = printed.withLock { printed in
                    printed.append(chunk)
                    return printed.contains(0x0A)
                }
                if line {
                    gotAddress.signal()
                }
            }
        )
        guard gotAddress.wait(timeout: .now() + 10) == .success else {
            daemon.send(SIGKILL)
            throw POSIXError(.ETIMEDOUT)
        }
        let text = printed.withLock { String(decoding: $0, as: UTF8.self) }
        address = text.split(separator: "\n").first.map(String.init) ?? ""
    }

    /// Runs `Tests/Fixtures/NetworkManager/fake-networkmanager.py` on this bus, answering `Metered` with `metered`;
    /// returns once it owns its name. Kill it when done.
    func networkManager(metered: UInt32) throws -> ChildProcess {
        let script = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/NetworkManager/fake-networkmanager.py").path
        let ready = DispatchSemaphore(value: 0)
        let child = try ChildProcess(
            "/usr/bin/python3",
            arguments: [script, address, String(metered)],
            environment: ProcessInfo.processInfo.environment,
            standardOutput: .stream { chunk in
                if String(decoding: chunk, as: UTF8.self).contains("ready") {
                    ready.signal()
                }
            },
            standardError: .inherit
        )
        guard ready.wait(timeout: .now() + 10) == .success else {
            child.send(SIGKILL)
            throw POSIXError(.ETIMEDOUT)
        }
        return child
    }

    deinit {
        daemon.send(SIGTERM)
        _ = daemon.wait(timeout: .seconds(10))
    }
}

/// `dbus-monitor` on a private bus, watching the freedesktop Notifications interface (the `Notify` calls courierd's
/// helper makes). Stopped when released.
final class NotificationWatch: Sendable {
    private let monitor: ChildProcess
    private let seen = LockedValue(Data())

    init(_ bus: PrivateBus) throws {
        let seen = self.seen
        monitor = try ChildProcess(
            "/usr/bin/dbus-monitor",
            arguments: ["--address", bus.address, "interface='org.freedesktop.Notifications'"],
            environment: ProcessInfo.processInfo.environment,
            standardOutput: .stream { chunk in seen.withLock { $0.append(chunk) } }
        )
    }

    /// What the monitor printed so far.
    var text: String {
        seen.withLock { String(decoding: $0, as: UTF8.self) }
    }

    deinit {
        monitor.send(SIGTERM)
        _ = monitor.wait(timeout: .seconds(10))
    }
}
