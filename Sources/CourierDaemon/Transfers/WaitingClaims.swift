/// The claims of ``TransferSlots`` waiting for a slot, granted by priority, then arrival: one queue per priority, so
/// that granting and withdrawing cost the same with ten thousand waiting as with ten (a single array scanned for the
/// best claim at every release made a session of 10,000 queued downloads quadratic).
struct WaitingClaims {
    private struct Entry {
        var claim: TransferSlots.Claim
        var ticket: UInt64
    }

    /// Each priority's claims in arrival order, from its head; withdrawn ones stay until they reach the head.
    private var queues: [Float: [Entry]] = [:]
    private var heads: [Float: Int] = [:]
    /// The ticket of each waiting attempt's entry (an entry whose ticket is not here was withdrawn: its attempt may
    /// even be waiting again under a newer ticket).
    private var tickets: [ObjectIdentifier: UInt64] = [:]
    private var nextTicket: UInt64 = 0

    var count: Int { tickets.count }
    var isEmpty: Bool { tickets.isEmpty }

    mutating func append(_ claim: TransferSlots.Claim) {
        nextTicket += 1
        tickets[claim.attempt] = nextTicket
        queues[claim.priority, default: []].append(Entry(claim: claim, ticket: nextTicket))
    }

    /// `attempt` no longer waits (a no-op when it does not).
    mutating func withdraw(_ attempt: ObjectIdentifier) {
        tickets[attempt] = nil
    }

    /// The waiting claim of the highest priority that came first, taken out; nil when none waits.
    mutating func takeBest() -> TransferSlots.Claim? {
        for priority in queues.keys.sorted(by: >) {
            guard var queue = queues[priority] else {
                continue
            }
            queues[priority] = nil  // uniquely referenced while it changes
            var head = heads[priority, default: 0]
            var taken: TransferSlots.Claim?
            while head < queue.count, taken == nil {
                let entry = queue[head]
                head += 1
                if tickets[entry.claim.attempt] == entry.ticket {
                    tickets[entry.claim.attempt] = nil
                    taken = entry.claim
                }
            }
            if head == queue.count {
                heads[priority] = nil
            } else {
                if head > 64, head * 2 > queue.count {
                    queue.removeFirst(head)
                    head = 0
                }
                queues[priority] = queue
                heads[priority] = head
            }
            if let taken {
                return taken
            }
        }
        return nil
    }
}
