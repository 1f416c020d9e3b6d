package import Foundation

/// Reads ``TransferConditions`` from the system: power from `/sys/class/power_supply` (the kernel's view, on every
/// Linux: ``PowerSupplies``), metering from NetworkManager's `Metered` property over the system bus where
/// NetworkManager runs (``NetworkManagerMetering``). Both answers are kept a few seconds: courierd asks before every
/// attempt.
///
/// - `COURIER_POWER=ac|battery` overrides what sysfs says (tests, and machines whose sysfs lies).
/// - `COURIER_NETWORK=metered|unmetered` overrides NetworkManager; with neither, the network counts as unmetered.
package struct ConditionReader: Sendable {
    package let environment: [String: String]
    private let powerSupplies: PowerSupplies
    private let networkManager: NetworkManagerMetering

    package init(
        powerSupplyDirectory: URL = URL(fileURLWithPath: "/sys/class/power_supply"),
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) {
        self.environment = environment
        powerSupplies = PowerSupplies(directory: powerSupplyDirectory)
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

    private func onExternalPower() -> Bool {
        switch environment["COURIER_POWER"] {
        case "ac": return true
        case "battery": return false
        default: return powerSupplies.onExternalPower()
        }
    }
}
