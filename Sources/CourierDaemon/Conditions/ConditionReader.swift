package import Foundation

/// Reads ``TransferConditions`` from the system: power from `/sys/class/power_supply` (the kernel's view, on every
/// Linux), metering from NetworkManager's `Metered` property over the system bus where NetworkManager runs
/// (``NetworkManagerMetering``).
///
/// - `COURIER_POWER=ac|battery` overrides what sysfs says (tests, and machines whose sysfs lies).
/// - `COURIER_NETWORK=metered|unmetered` overrides NetworkManager; with neither, the network counts as unmetered.
package struct ConditionReader: Sendable {
    package var powerSupplyDirectory: URL
    package var environment: [String: String]
    private let networkManager: NetworkManagerMetering

    package init(
        powerSupplyDirectory: URL = URL(fileURLWithPath: "/sys/class/power_supply"),
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) {
        self.powerSupplyDirectory = powerSupplyDirectory
        self.environment = environment
        networkManager = NetworkManagerMetering(environment: environment)
    }

    package func read() -> TransferConditions {
        TransferConditions(onExternalPower: onExternalPower(), networkIsMetered: networkIsMetered())
    }

    private func networkIsMetered() -> Bool {
        switch environment["COURIER_NETWORK"] {
        case "metered": return true
        case "unmetered": return false
        default: return networkManager.isMetered() ?? false
        }
    }

    /// Mains online, or no battery at all; a battery that is not discharging counts as external power too (it is
    /// charging or full, so something feeds it).
    private func onExternalPower() -> Bool {
        switch environment["COURIER_POWER"] {
        case "ac": return true
        case "battery": return false
        default: break
        }
        let supplies = (try? FileManager.default.contentsOfDirectory(atPath: powerSupplyDirectory.path)) ?? []
        var sawBattery = false
        var batteryDischarging = false
        for name in supplies {
            let supply = powerSupplyDirectory.appendingPathComponent(name)
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
        let file = supply.appendingPathComponent(attribute)
        guard let data = FileManager.default.contents(atPath: file.path) else {
            return nil
        }
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
