/// The actions one input produced, in order.
///
/// Most inputs produce none, one or two actions; those are kept inline, so applying an input allocates nothing on
/// the hot path (one array per input cost 4 allocations per small request). A third action and later ones go to an
/// array.
struct TaskActions: Sequence, Sendable {
    private var first: TaskAction?
    private var second: TaskAction?
    private var more: [TaskAction] = []

    init() {}

    var isEmpty: Bool {
        first == nil
    }

    mutating func append(_ action: TaskAction) {
        if first == nil {
            first = action
        } else if second == nil {
            second = action
        } else {
            more.append(action)
        }
    }

    func makeIterator() -> Iterator {
        Iterator(actions: self)
    }

    struct Iterator: IteratorProtocol {
        fileprivate let actions: TaskActions
        private var index = 0

        fileprivate init(actions: TaskActions) {
            self.actions = actions
        }

        mutating func next() -> TaskAction? {
            defer { index += 1 }
            switch index {
            case 0: return actions.first
            case 1: return actions.second
            default: return index - 2 < actions.more.count ? actions.more[index - 2] : nil
            }
        }
    }
}
