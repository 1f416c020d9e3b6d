/// A value kept behind a reference, replaced whole when it changes: for a large optional value most tasks never have
/// (connection options, a checkpoint, an entity's response), so that every spec or queued task does not carry its
/// inline size (hundreds of bytes each, nil or not). Compared by value.
package final class Boxed<Value: Sendable & Equatable>: Sendable, Equatable {
    package let value: Value

    package init(_ value: Value) {
        self.value = value
    }

    package static func == (lhs: Boxed, rhs: Boxed) -> Bool {
        lhs === rhs || lhs.value == rhs.value
    }
}
