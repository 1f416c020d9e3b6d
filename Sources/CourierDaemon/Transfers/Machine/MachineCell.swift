/// A task's machine in its runner's table, held by reference: the table holds a pointer a task rather than the
/// machine itself (about 1.6 KB inline, so a dictionary of machines by value, at its load factor, held over 2 KB a
/// queued task before anything else), and an input changes the machine where it is instead of copying it out of the
/// table and back.
///
/// `@unchecked Sendable`: `machine` is read and written only with the runner's state lock held (the table lives in
/// that state, and no cell is handed out of it).
final class MachineCell: @unchecked Sendable {
    var machine: BackgroundTaskMachine

    init(_ machine: BackgroundTaskMachine) {
        self.machine = machine
    }
}
