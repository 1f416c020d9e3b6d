import CourierConcurrency
package import Foundation

/// Whether the machine runs on external power, from the kernel's `/sys/class/power_supply`: mains online, or no
/// battery at all; a battery that is not discharging counts as external power too (it is charging or full, so
/// something feeds it).
///
/// A read lists the directory and reads a file or two per supply, and courierd asks before every attempt: the answer
/// is kept for ``maximumAge`` seconds (W6's 10,000 attempts read it 10,000 times, five system calls each).
package final class PowerSupplies: Sendable {
    private struct Cached {
        var onExternalPower: Bool
        var at: Date
    }

    package let directory: URL
    package let maximumAge: TimeInterval
    private let cache = LockedValue<Cached?>(nil)

    package init(directory: URL, maximumAge: TimeInterval = 1) {
        self.directory = directory
        self.maximumAge = maximumAge
    }

    package func onExternalPower(now: Date = Date()) -> Bool {
        if let cached = cache.withLock({ $0 }), now.timeIntervalSince(cached.at) < maximumAge {
            return cached.onExternalPower
        }
        let answer = read()
        cache.withLock { $0 = Cached(onExternalPower: answer, at: now) }
        return answer
    }

    private func read() -> Bool {
        let supplies = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        var sawBattery = false
        var batteryDischarging = false
        for name in supplies {
            let supply = directory.appendingPathComponent(name, isDirectory: true)
            switch value("type", of: supply) {
            case "Mains", "USB":
                if value("online", of: supply) == "1" {
                    return true
                }
            case "Battery":
                sawBattery = true
                if value("status", of: supply) == "Discharging" {
                    batteryDischarging = true
                }
            default:
                continue
            }
        }
        return !sawBattery || !batteryDischarging
    }

    private func value(_ attribute: String, of supply: URL) -> String? {
        let file = supply.appendingPathComponent(attribute, isDirectory: false)
        guard let data = FileManager.default.contents(atPath: file.path) else {
            return nil
        }
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
