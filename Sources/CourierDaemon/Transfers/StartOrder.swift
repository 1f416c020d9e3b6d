/// The order in which courierd makes the attempts that are ready together: a higher priority first, then what the
/// app declared smaller (`countOfBytesClientExpectsToSend` + `…ToReceive`; an undeclared size last), then the older
/// task. The engine starts each priority level's queue in the order the attempts reach it.
package enum StartOrder {
    package static func startsBefore(_ first: JournaledTask, _ second: JournaledTask) -> Bool {
        if first.spec.priority != second.spec.priority {
            return first.spec.priority > second.spec.priority
        }
        let firstSize = first.spec.spec.task?.clientExpectedBytes ?? .max
        let secondSize = second.spec.spec.task?.clientExpectedBytes ?? .max
        if firstSize != secondSize {
            return firstSize < secondSize
        }
        return first.identifier < second.identifier
    }
}
