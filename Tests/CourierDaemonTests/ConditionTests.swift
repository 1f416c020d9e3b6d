import CourierDaemon
import Foundation
import Testing

/// Power and metering as courierd reads them, from a sysfs tree made on disk for each case.
@Suite("courierd transfer conditions")
struct ConditionTests {
    /// A `/sys/class/power_supply` lookalike: supply name → attribute → value.
    static func sysfs(_ supplies: [String: [String: String]]) throws -> URL {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("courier-sysfs-\(UUID().uuidString)")
        for (name, attributes) in supplies {
            let supply = root.appendingPathComponent(name)
            try FileManager.default.createDirectory(at: supply, withIntermediateDirectories: true)
            for (attribute, value) in attributes {
                try Data((value + "\n").utf8).write(to: supply.appendingPathComponent(attribute))
            }
        }
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        return root
    }

    static func power(_ supplies: [String: [String: String]], environment: [String: String] = [:]) throws -> Bool {
        let root = try sysfs(supplies)
        defer { try? FileManager.default.removeItem(at: root) }
        return ConditionReader(powerSupplyDirectory: root, environment: environment).read().onExternalPower
    }

    static let mainsOnline = ["AC": ["type": "Mains", "online": "1"]]
    static let onBattery = [
        "AC": ["type": "Mains", "online": "0"],
        "BAT0": ["type": "Battery", "status": "Discharging"],
    ]

    @Test("mains online, no battery at all, or a charging battery: external power")
    func externalPower() throws {
        #expect(try Self.power(Self.mainsOnline))
        #expect(try Self.power([:]))
        #expect(try Self.power(["BAT0": ["type": "Battery", "status": "Charging"]]))
        var pluggedLaptop = Self.onBattery
        pluggedLaptop["AC"] = ["type": "Mains", "online": "1"]
        #expect(try Self.power(pluggedLaptop))
    }

    @Test("a discharging battery with mains offline: on battery")
    func battery() throws {
        #expect(try !Self.power(Self.onBattery))
        #expect(try !Self.power(["BAT1": ["type": "Battery", "status": "Discharging"]]))
    }

    @Test("COURIER_POWER overrides sysfs; COURIER_NETWORK says metered")
    func overrides() throws {
        #expect(try !Self.power(Self.mainsOnline, environment: ["COURIER_POWER": "battery"]))
        #expect(try Self.power(Self.onBattery, environment: ["COURIER_POWER": "ac"]))
        let root = try Self.sysfs([:])
        defer { try? FileManager.default.removeItem(at: root) }
        #expect(ConditionReader(powerSupplyDirectory: root, environment: [:]).read().networkIsMetered == false)
        let metered = ConditionReader(powerSupplyDirectory: root, environment: ["COURIER_NETWORK": "metered"]).read()
        #expect(metered == TransferConditions(onExternalPower: true, networkIsMetered: true))
    }

    @Test("who waits for what, and says why")
    func waiting() {
        let good = TransferConditions(onExternalPower: true, networkIsMetered: false)
        let battery = TransferConditions(onExternalPower: false, networkIsMetered: false)
        let metered = TransferConditions(onExternalPower: true, networkIsMetered: true)
        let both = TransferConditions(onExternalPower: false, networkIsMetered: true)
        let ordinary = TransferRequirements(isDiscretionary: false, allowsExpensiveNetworkAccess: true)
        let discretionary = TransferRequirements(isDiscretionary: true, allowsExpensiveNetworkAccess: true)
        let frugal = TransferRequirements(isDiscretionary: false, allowsExpensiveNetworkAccess: false)
        for conditions in [good, battery, metered, both] {
            #expect(ordinary.waitingReason(under: conditions) == nil)
        }
        #expect(discretionary.waitingReason(under: good) == nil)
        #expect(discretionary.waitingReason(under: battery) == "waiting for external power (discretionary)")
        #expect(discretionary.waitingReason(under: metered) == "waiting for an unmetered network (discretionary)")
        #expect(
            discretionary.waitingReason(under: both)
                == "waiting for external power and an unmetered network (discretionary)"
        )
        #expect(frugal.waitingReason(under: battery) == nil)
        #expect(
            frugal.waitingReason(under: metered)
                == "waiting for an unmetered network (expensive network access not allowed)"
        )
    }
}
