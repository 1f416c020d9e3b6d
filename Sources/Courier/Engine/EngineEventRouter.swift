internal import CSupport
import Foundation

/// The context object the C callback recovers with `Unmanaged.fromOpaque`. It decodes one batch and hands it
/// to the session's handler; it holds no reference back to the engine.
final class EngineEventRouter: Sendable {
    let handler: Engine.Handler

    init(handler: @escaping Engine.Handler) {
        self.handler = handler
    }

    /// True on a thread that is running the engine's event callback (a loop thread).
    static var isOnLoopThread: Bool {
        pthread_getspecific(loopThreadKey) != nil
    }

    fileprivate static func markLoopThread() {
        if pthread_getspecific(loopThreadKey) == nil {
            pthread_setspecific(loopThreadKey, UnsafeRawPointer(bitPattern: 1))
        }
    }
}

/// Marks loop threads so that teardown never runs `cr_engine_destroy` inside the callback.
private let loopThreadKey: pthread_key_t = {
    var key = pthread_key_t()
    pthread_key_create(&key, nil)
    return key
}()

/// The engine's `on_events` callback: captures nothing, recovers its router from `context`.
let courierEngineEvents: @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<cr_event_s>?, Int) -> Void = {
    context,
    events,
    count in
    guard let context else {
        return
    }
    let router = Unmanaged<EngineEventRouter>.fromOpaque(context).takeUnretainedValue()
    EngineEventRouter.markLoopThread()
    var batch: [TransferEvent] = []
    if let events, count > 0 {
        batch.reserveCapacity(count)
        for index in 0..<count {
            batch.append(TransferEvent(taking: events[index]))
        }
    }
    router.handler(batch)
}
