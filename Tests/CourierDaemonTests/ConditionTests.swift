import Courier
import CourierDaemon
import Foundation
import CourierTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Power and metering as courierd reads them: from a sysfs tree made on disk for each case, and from a NetworkManager
/// stand-in on a private bus (Tests/Fixtures/NetworkManager).
@Suite("courierd transfer conditions", .blockingWaits)
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
        let noNetworkManager = ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/courier-test-bus"]
        #expect(ConditionReader(powerSupplyDirectory: root, environment: noNetworkManager).read().networkIsMetered == false)
        let metered = ConditionReader(powerSupplyDirectory: root, environment: ["COURIER_NETWORK": "metered"]).read()
        #expect(metered == TransferConditions(onExternalPower: true, networkIsMetered: true))
    }

    static var busToolsPresent: Bool {
        ["/usr/bin/dbus-daemon", "/usr/bin/busctl", "/usr/bin/python3"].allSatisfy {
            FileManager.default.isExecutableFile(atPath: $0)
        } && FileManager.default.fileExists(atPath: "/usr/lib/python3/dist-packages/jeepney")
    }

    @Test("busctl's and gdbus's answers are read; anything else is no answer")
    func networkManagerAnswers() {
        #expect(NetworkManagerMetering.parse("u 4\n") == 4)
        #expect(NetworkManagerMetering.parse("(<uint32 1>,)\n") == 1)
        #expect(NetworkManagerMetering.parse("Failed to connect to bus: No such file or directory") == nil)
        #expect(NetworkManagerMetering.parse("u x") == nil)
        #expect([0, 1, 2, 3, 4, 5].map(NetworkManagerMetering.meaning(of:)) == [nil, true, false, true, false, nil])
    }

    @Test(
        "NetworkManager's Metered property, read over a system bus: yes and guessed yes are metered; COURIER_NETWORK overrides it",
        .enabled(if: busToolsPresent, "needs dbus-daemon, busctl and python3-jeepney (scripts/test.sh installs them)")
    )
    func networkManagerOnABus() throws {
        let bus = try PrivateBus()
        let environment = ["DBUS_SYSTEM_BUS_ADDRESS": bus.address]
        #expect(NetworkManagerMetering(environment: environment).isMetered() == nil, "no NetworkManager on the bus yet")
        for (value, expected) in [(1, true), (2, false), (3, true), (4, false), (0, nil)] as [(UInt32, Bool?)] {
            let networkManager = try bus.networkManager(metered: value)
            defer {
                networkManager.send(SIGKILL)
                _ = networkManager.wait(timeout: .seconds(10))
            }
            #expect(NetworkManagerMetering(environment: environment).isMetered() == expected, "Metered = \(value)")
            let root = try Self.sysfs([:])
            defer { try? FileManager.default.removeItem(at: root) }
            let reader = ConditionReader(powerSupplyDirectory: root, environment: environment)
            #expect(reader.read().networkIsMetered == (expected ?? false))
            var overridden = environment
            overridden["COURIER_NETWORK"] = "unmetered"
            #expect(ConditionReader(powerSupplyDirectory: root, environment: overridden).read().networkIsMetered == false)
        }
    }

    @Test(
        "courierd on a network NetworkManager calls metered: a task that may not use expensive networks waits, and says why",
        .enabled(if: busToolsPresent, "needs dbus-daemon, busctl and python3-jeepney (scripts/test.sh installs them)")
    )
    func meteredNetworkHoldsTasks() throws {
        let bus = try PrivateBus()
        let networkManager = try bus.networkManager(metered: 1)
        defer {
            networkManager.send(SIGKILL)
            _ = networkManager.wait(timeout: .seconds(10))
        }
        let daemon = Daemon(environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus.address])
        defer { daemon.cleanup() }
        try daemon.start()
        var session = BackgroundTransferTests.session
        session.allowsExpensiveNetworkAccess = false
        var (client, _) = try Client.opening(session, on: daemon)
        try BackgroundTransferTests.create(
            BackgroundTransferTests.download(1, URL(string: "http://127.0.0.1:9/x")!),
            on: &client
        )
        let snapshots = try client.tasks(of: BackgroundTransferTests.identifier) { $0.first?.waitingReason != nil }
        #expect(snapshots.first?.waitingReason == "waiting for an unmetered network (expensive network access not allowed)")
        client.close()
        #expect(daemon.stop() == .exited(0))
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

    @Test("a discretionary task that declares itself small (countOfBytesClientExpectsTo…, 1 MiB at most) waits for nothing")
    func declaredSizes() {
        let both = TransferConditions(onExternalPower: false, networkIsMetered: true)
        func discretionary(_ bytes: Int64?, expensive: Bool = true) -> TransferRequirements {
            TransferRequirements(isDiscretionary: true, allowsExpensiveNetworkAccess: expensive, expectedBytes: bytes)
        }
        #expect(discretionary(64 << 10).waitingReason(under: both) == nil)
        #expect(discretionary(TransferRequirements.smallTransfer).waitingReason(under: both) == nil)
        #expect(
            discretionary(TransferRequirements.smallTransfer + 1).waitingReason(under: both)
                == "waiting for external power and an unmetered network (discretionary)"
        )
        #expect(discretionary(nil).waitingReason(under: both)?.hasSuffix("(discretionary)") == true)
        // Small, but its session allows no expensive network: it still waits on a metered one.
        #expect(
            discretionary(1024, expensive: false).waitingReason(under: both)
                == "waiting for an unmetered network (expensive network access not allowed)"
        )
    }
}
