/// The actions one input produced, in order.
///
/// Most inputs produce none, one or two actions; those are kept inline, so applying an input allocates nothing on
/// the hot path (one array per input cost 4 allocations per small request). A third action and later ones go to an
/// array.
struct TaskActions: Sendable {
    private var first: TaskAction?
    private var second: TaskAction?
    private var more: [TaskAction] = []
    /// Kept beside the actions: testing `first == nil` copies a large enum through its value witness (2 % of the
    /// caller's thread on W1).
    private(set) var count = 0

    init() {}

    var isEmpty: Bool {
        count == 0
    }

    mutating func append(_ action: TaskAction) {
        switch count {
        case 0:
            first = action
        case 1:
            second = action
        default:
            more.append(action)
        }
        count += 1
    }

    /// Calls `body` with each action in order, without copying the list.
    func forEach(_ body: (borrowing TaskAction) -> Void) {
        if count > 0, let first {
            body(first)
        }
        if count > 1, let second {
            body(second)
        }
        for action in more {
            body(action)
        }
    }

    /// The actions as an array (tests).
    var elements: [TaskAction] {
        var elements: [TaskAction] = []
        forEach { elements.append(copy $0) }
        return elements
    }
}
