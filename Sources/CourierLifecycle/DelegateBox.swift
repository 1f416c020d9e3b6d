/// The application's delegate, boxed for storage in a `Sendable` application.
///
/// `@unchecked Sendable`: the delegate is received as a `sending` parameter (the caller keeps no
/// reference it could use concurrently) and the application calls it only on its serial callback
/// queue, so it is never used from two threads at once. The box itself is immutable.
struct DelegateBox: @unchecked Sendable {
    let delegate: any ApplicationDelegate

    // Generic rather than `sending any ApplicationDelegate`: erasing a `sending some` argument to an
    // existential at the call site loses its `sending`-ness in Swift 6.3 and warns.
    init<Delegate: ApplicationDelegate>(opening delegate: sending Delegate) {
        self.delegate = delegate
    }

    init(_ delegate: sending any ApplicationDelegate) {
        self.delegate = delegate
    }
}
