/// What feeds a hop's streamed body and wants to know how much of it the engine took: a ``BodyPump``, or a WebSocket's
/// connection (``WebSocketConnection``), whose frames are the body of its upgraded exchange.
/// ``SessionTask/send(_:work:)`` tells the current hop's supplier the task's `sent` count after every input.
protocol BodySupplier: AnyObject, Sendable {
    /// The hop whose body it supplies.
    var hop: Int { get }
    /// Where that hop's body starts in the whole body (a resumed upload's rest); 0 otherwise.
    var bodyOffset: Int64 { get }
    /// The engine has taken `sent` bytes of the hop's body.
    func taken(_ sent: Int64)
    /// Supplies no more (the task ended, or another hop took over).
    func stop()
}
