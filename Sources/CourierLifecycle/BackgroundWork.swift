/// Background work courierd asked for.
package struct BackgroundWork: Sendable, Equatable {
    package enum Kind: String, Sendable {
        case fetch
        case remoteNotification
    }

    package var kind: Kind
    /// courierd's number for the wake; nil for work the process was launched for.
    package var wake: UInt64?

    package init(kind: Kind, wake: UInt64?) {
        self.kind = kind
        self.wake = wake
    }
}
