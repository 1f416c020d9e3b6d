import CourierConcurrency
import Foundation

extension SessionTask {
    /// Starts sending hop `hop`'s streamed body into its transfer: the request's `httpBodyStream` or an async
    /// sequence for the first exchange, else a stream the task delegate gives (`needNewBodyStream`, or
    /// `needNewBodyStreamFrom` when a resumed upload goes on from `bodyOffset`). A body that cannot be had fails the
    /// task with `requestBodyStreamExhausted`.
    func startBodyStream(hop: Int, transfer: UInt64, bodyOffset: Int64, work: inout DelegateWork) {
        guard case .stream(let source, let length) = uploadBody else {
            return
        }
        let remaining = length.map { $0 - bodyOffset }
        switch source {
        case .inputStream(let first):
            if bodyOffset == 0, let reader = first.take() {
                pumpBody(reader, hop: hop, transfer: transfer, bodyOffset: bodyOffset, length: remaining)
                return
            }
        case .sequence(let body):
            guard bodyOffset == 0, let reader = body.take() else {
                let reason = "the body (an async sequence) was read by an earlier exchange and cannot be read again"
                send(.heldFailed(hop: hop, CourierError(.requestBodyStreamExhausted, reason)), work: &work)
                return
            }
            pumpBody(reader, hop: hop, transfer: transfer, bodyOffset: bodyOffset, length: remaining)
            return
        case .delegate:
            break
        }
        askForBodyStream(hop: hop, transfer: transfer, bodyOffset: bodyOffset, length: remaining, work: &work)
    }

    /// Asks the task delegate for the body stream of hop `hop`, on the delegate queue.
    private func askForBodyStream(
        hop: Int,
        transfer: UInt64,
        bodyOffset: Int64,
        length: Int64?,
        work: inout DelegateWork
    ) {
        let noStream = CourierError(
            .requestBodyStreamExhausted,
            bodyOffset > 0
                ? "no delegate gave the body stream from offset \(bodyOffset) (needNewBodyStreamFrom)"
                : "no delegate gave the body stream (needNewBodyStream)",
            failingURL: currentURL
        )
        guard hasTaskDelegate else {
            send(.heldFailed(hop: hop, noStream), work: &work)
            return
        }
        let once = OnceFlag()
        let answer: @Sendable (InputStream?) -> Void = { stream in
            guard once.claim() else {
                return
            }
            guard let stream else {
                self.send(.heldFailed(hop: hop, noStream))
                return
            }
            self.pumpBody(
                InputStreamReader(stream),
                hop: hop,
                transfer: transfer,
                bodyOffset: bodyOffset,
                length: length
            )
        }
        work.append { session in
            guard let session, let delegate = self.taskDelegate else {
                answer(nil)
                return
            }
            if bodyOffset > 0 {
                delegate.urlSession(session, task: self, needNewBodyStreamFrom: bodyOffset, completionHandler: answer)
            } else {
                delegate.urlSession(session, task: self, needNewBodyStream: answer)
            }
        }
    }

    /// Starts a pump of `reader` into hop `hop`'s transfer, when that hop is still the task's current one; it
    /// replaces the pump of an earlier hop.
    private func pumpBody(
        _ reader: any BodyReader,
        hop: Int,
        transfer: UInt64,
        bodyOffset: Int64,
        length: Int64?
    ) {
        guard let backend = core.runningBackend else {
            reader.close()
            return
        }
        let pump = BodyPump(hop: hop, bodyOffset: bodyOffset)
        let replaced = storage.withLock { machine -> (current: Bool, earlier: (any BodySupplier)?) in
            guard machine.hop == hop, machine.phase == .running else {
                return (false, nil)
            }
            defer { machine.bodySupplier = pump }
            return (true, machine.bodySupplier)
        }
        replaced.earlier?.stop()
        guard replaced.current else {
            reader.close()
            return
        }
        pump.start(reader: reader, backend: backend, transfer: transfer, length: length) { [weak self] error in
            self?.send(.heldFailed(hop: hop, error))
        }
    }
}

extension TaskMachine {
    /// The current hop's body supplier and what the engine took of that hop's body, to tell it after an input.
    var bodySupplierProgress: (supplier: any BodySupplier, taken: Int64)? {
        guard let supplier = bodySupplier, supplier.hop == hop else {
            return nil
        }
        return (supplier, sent - supplier.bodyOffset)
    }
}
