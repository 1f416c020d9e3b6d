/// What the machine offers right now that discretionary transfers care about (docs/background-model.md #7).
package struct TransferConditions: Sendable, Equatable {
    /// Mains power, or a machine with no battery at all (a server, a VM).
    package var onExternalPower: Bool
    /// The network is metered (a phone's hotspot, a capped link): expensive.
    package var networkIsMetered: Bool

    package init(onExternalPower: Bool, networkIsMetered: Bool) {
        self.onExternalPower = onExternalPower
        self.networkIsMetered = networkIsMetered
    }
}

/// What one background task asks of the conditions before it may move bytes.
package struct TransferRequirements: Sendable, Equatable {
    /// `isDiscretionary`, or a task created while its app was in the background: waits for external power and an
    /// unmetered network.
    package var isDiscretionary: Bool
    /// `allowsExpensiveNetworkAccess`: when false, the task waits on a metered network.
    package var allowsExpensiveNetworkAccess: Bool
    /// What the app expects the task to move (`countOfBytesClientExpectsTo…`), when it said.
    package var expectedBytes: Int64?

    /// The most a discretionary task may declare and still run at once: a transfer this small costs nothing worth
    /// waiting for power or an unmetered network.
    package static let smallTransfer: Int64 = 1 << 20

    /// A task created while its app was in the background is discretionary whatever its session says.
    package init(
        isDiscretionary: Bool,
        allowsExpensiveNetworkAccess: Bool,
        createdInBackground: Bool = false,
        expectedBytes: Int64? = nil
    ) {
        self.isDiscretionary = isDiscretionary || createdInBackground
        self.allowsExpensiveNetworkAccess = allowsExpensiveNetworkAccess
        self.createdInBackground = createdInBackground
        self.expectedBytes = expectedBytes
    }

    /// Why it is discretionary, when it is: said in the waiting reason.
    private var createdInBackground: Bool

    /// Why the task must wait under `conditions` (shown by `courier tasks`), or nil when it may run.
    package func waitingReason(under conditions: TransferConditions) -> String? {
        var reasons: [String] = []
        // A discretionary task that declared itself small waits for nothing (a large or undeclared one does).
        let waitsAsDiscretionary = isDiscretionary && (expectedBytes.map { $0 > Self.smallTransfer } ?? true)
        if waitsAsDiscretionary && !conditions.onExternalPower {
            reasons.append("external power")
        }
        if conditions.networkIsMetered && (waitsAsDiscretionary || !allowsExpensiveNetworkAccess) {
            reasons.append("an unmetered network")
        }
        guard !reasons.isEmpty else {
            return nil
        }
        let cause =
            if !waitsAsDiscretionary {
                "expensive network access not allowed"
            } else if createdInBackground {
                "discretionary: created while the app was in the background"
            } else if isDiscretionary {
                "discretionary"
            } else {
                "expensive network access not allowed"
            }
        return "waiting for \(reasons.joined(separator: " and ")) (\(cause))"
    }
}
