import CourierConcurrency
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The backend of a session with ``SessionConfiguration/protocolClasses``: each exchange whose request a protocol
/// class accepts is loaded by an instance of it (``InterceptedLoad``), every other one goes to the engine. The task
/// machine cannot tell the difference: an intercepted exchange reports the events an engine transfer would, held
/// responses and decisions included.
final class InterceptingBackend: TransferBackend {
    /// Handles of intercepted loads have the top bit set; the engine's never do (a sequence shifted by 8 bits).
    private static let interceptedBit: UInt64 = 1 << 63

    private let inner: any TransferBackend
    private let protocolClasses: [SessionURLProtocol.Type]
    private let emit: TransferEventHandler
    private let task: @Sendable (Int) -> SessionTask?
    private let loads = LockedValue([UInt64: InterceptedLoad]())
    private let nextHandle = LockedValue<UInt64>(1)

    init(
        _ inner: any TransferBackend,
        protocolClasses: [SessionURLProtocol.Type],
        task: @escaping @Sendable (Int) -> SessionTask?,
        emit: @escaping TransferEventHandler
    ) {
        self.inner = inner
        self.protocolClasses = protocolClasses
        self.task = task
        self.emit = emit
    }

    func submit(_ spec: TransferSpec, as id: TransferID) -> Result<UInt64, CourierError> {
        let request = InterceptedLoad.request(for: spec)
        guard let loader = protocolClasses.first(where: { $0.canInit(with: request) }) else {
            return inner.submit(spec, as: id)
        }
        let handle = nextHandle.withLock { next in
            defer { next += 1 }
            return Self.interceptedBit | next
        }
        let load = InterceptedLoad(handle: handle, id: id, spec: spec, emit: emit) { [weak self] handle in
            self?.loads.withLock { _ = $0.removeValue(forKey: handle) }
        }
        let instance = loader.init(request: loader.canonicalRequest(for: request), cachedResponse: nil, client: load)
        instance.task = task(id.task)
        loads.withLock { $0[handle] = load }
        load.start(instance)
        return .success(handle)
    }

    func cancel(_ transfer: UInt64, producingResumeData: Bool) {
        guard let load = intercepted(transfer) else {
            inner.cancel(transfer, producingResumeData: producingResumeData)
            return
        }
        load.cancel()
    }

    /// An intercepted load is not paced: its protocol reports as it will.
    func pause(_ transfer: UInt64) {
        if transfer & Self.interceptedBit == 0 {
            inner.pause(transfer)
        }
    }

    func resume(_ transfer: UInt64) {
        if transfer & Self.interceptedBit == 0 {
            inner.resume(transfer)
        }
    }

    @discardableResult
    func decide(_ transfer: UInt64, _ decision: TransferDecision) -> CourierError? {
        guard let load = intercepted(transfer) else {
            return inner.decide(transfer, decision)
        }
        return load.decide(decision)
    }

    /// A protocol gets no streamed body: what a task supplies for an intercepted exchange is dropped.
    func supply(_ transfer: UInt64, _ bytes: Data, end: Bool) -> Bool {
        transfer & Self.interceptedBit == 0 ? inner.supply(transfer, bytes, end: end) : true
    }

    private func intercepted(_ transfer: UInt64) -> InterceptedLoad? {
        guard transfer & Self.interceptedBit != 0 else {
            return nil
        }
        return loads.withLock { $0[transfer] }
    }
}
