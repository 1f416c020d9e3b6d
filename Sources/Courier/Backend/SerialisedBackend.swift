import Foundation

/// A backend in front of another that carries every value across the seam through its encoding, as the daemon
/// backend does over its socket: specs, identities and decisions on the way in, event batches on the way out.
///
/// Chosen by `COURIER_TRANSFER_BACKEND=serialised` in the environment; the test command runs the session and task
/// tests with it, so that a field the encoding loses fails a test instead of a background transfer. A value that
/// does not come back equal is refused with `CourierError.Code.unknown`: a submit fails, and an event becomes a
/// failed COMPLETE of its transfer.
final class SerialisedBackend: TransferBackend {
    private let inner: any TransferBackend

    init(_ inner: any TransferBackend) {
        self.inner = inner
    }

    /// True when the environment asks for it (read once per process).
    static let isSelected = ProcessInfo.processInfo.environment["COURIER_TRANSFER_BACKEND"] == "serialised"

    func submit(_ spec: TransferSpec, as id: TransferID) -> Result<UInt64, CourierError> {
        do throws(CourierError) {
            return inner.submit(try Self.carry(spec), as: try Self.carry(id))
        } catch {
            return .failure(error)
        }
    }

    func cancel(_ transfer: UInt64, producingResumeData: Bool) {
        inner.cancel(transfer, producingResumeData: producingResumeData)
    }

    func pause(_ transfer: UInt64) {
        inner.pause(transfer)
    }

    func resume(_ transfer: UInt64) {
        inner.resume(transfer)
    }

    func supply(_ transfer: UInt64, _ bytes: Data, end: Bool) -> Bool {
        inner.supply(transfer, bytes, end: end)
    }

    @discardableResult
    func decide(_ transfer: UInt64, _ decision: TransferDecision) -> CourierError? {
        do throws(CourierError) {
            return inner.decide(transfer, try Self.carry(decision))
        } catch {
            inner.decide(transfer, .cancel)
            return error
        }
    }

    /// The batch as the other side of the seam sees it.
    static func carry(_ batch: [TransferEvent]) -> [TransferEvent] {
        batch.map { event in
            do throws(CourierError) {
                return try carry(event)
            } catch {
                var failed = event
                failed.payload = .complete(TransferCompletion(error: error))
                return failed
            }
        }
    }

    /// `value` encoded and decoded again; it must come back equal.
    static func carry<Value: Codable & Equatable>(_ value: Value) throws(CourierError) -> Value {
        let decoded: Value
        do {
            decoded = try JSONDecoder().decode(Value.self, from: JSONEncoder().encode(value))
        } catch {
            throw CourierError(.unknown, "a \(Value.self) did not survive its encoding: \(error)")
        }
        guard decoded == value else {
            throw CourierError(.unknown, "a \(Value.self) changed through its encoding")
        }
        return decoded
    }
}
