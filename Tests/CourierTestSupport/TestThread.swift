#if canImport(Glibc)
import Glibc
#endif

/// Threads of the tests' own, outside Dispatch's pools and Swift concurrency's: for work that blocks (a child
/// process's reaper, a pipe's reader) or that must run however busy those pools are (``BlockingWaitsTrait``'s jobs).
public enum TestThread {
    /// `pthread_create` failing, with its result.
    public struct StartError: Error {
        public var code: Int32
    }

    /// Starts a detached thread running `body`, named `name` (cut to the 15 bytes Linux keeps) for debuggers and
    /// sanitizer reports.
    public static func start(name: String, _ body: @escaping @Sendable () -> Void) throws(StartError) {
        let context = Unmanaged.passRetained(Body(name: name, body: body)).toOpaque()
        var thread = pthread_t()
        let result = pthread_create(
            &thread,
            nil,
            { context in
                let thread = Unmanaged<Body>.fromOpaque(context!).takeRetainedValue()
                _ = GNU.pthread_setname_np(
                    pthread_self(),
                    String(decoding: thread.name.utf8.prefix(15), as: UTF8.self)
                )
                thread.body()
                return nil
            },
            context
        )
        guard result == 0 else {
            Unmanaged<Body>.fromOpaque(context).release()
            throw StartError(code: result)
        }
        pthread_detach(thread)
    }

    /// What a thread runs, passed through `pthread_create`'s context pointer.
    private final class Body: Sendable {
        let name: String
        let body: @Sendable () -> Void

        init(name: String, body: @escaping @Sendable () -> Void) {
            self.name = name
            self.body = body
        }
    }
}
