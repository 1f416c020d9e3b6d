// White-box tests of the pure state machine: stale timer events and phase bookkeeping that the
// public API cannot reach deterministically. (Mutating calls are made outside #expect, whose
// expansion cannot take them.)
@testable import CourierLifecycle
import Testing

@Suite("LifecycleStateMachine (internal)")
struct LifecycleStateMachineInternalTests {
    private func machine() -> LifecycleStateMachine {
        LifecycleStateMachine(
            timing: .init(budget: .seconds(180), expirationWarning: .seconds(5), delegateCallTimeLimit: .seconds(5))
        )
    }

    @Test("timers of an earlier background period are stale")
    func staleTimers() throws {
        var machine = self.machine()
        let launch = machine.launch(intoBackground: false, now: .zero)
        #expect(launch == .launch(backgroundPeriod: nil))
        let followUp = machine.finishLaunching(now: .zero)
        #expect(followUp == .becomeActive)
        _ = machine.beginTask(name: "t", expirationHandler: ExpirationHandler {}, now: .zero)
        let resigning = machine.requestBackground()
        #expect(resigning)
        let entered = machine.enterBackground(now: .seconds(10))
        let entry = try #require(entered)
        #expect(entry.period.expirationTime == .seconds(185))
        #expect(entry.period.deadline == .seconds(190))
        let idle = machine.delegateCallReturned(entry.call)
        #expect(idle == .none)  // a task is open: not idle
        let entering = machine.requestForeground()
        let active = machine.becomeActive()
        #expect(entering && active)

        let handlers = machine.expirationTimeReached(period: entry.period.number)
        #expect(handlers.isEmpty)
        let watchdog = machine.deadlineReached(period: entry.period.number, now: .seconds(190))
        #expect(watchdog == nil)
    }

    @Test("a delegate call that returned cannot be reported by its watchdog")
    func returnedCallIsNotReported() throws {
        var machine = self.machine()
        _ = machine.launch(intoBackground: true, now: .zero)
        guard case .enterBackground(let call) = machine.finishLaunching(now: .zero) else {
            Issue.record("expected to enter the background")
            return
        }
        #expect(call.deadline == .seconds(5))
        let idle = machine.delegateCallReturned(call)
        #expect(idle == .suspend)
        let watchdog = machine.delegateCallDeadlineReached(token: call.token, now: .seconds(5))
        #expect(watchdog == nil)
        #expect(machine.isSuspended)
    }

    @Test("expiration lead: 5 s, capped at a quarter of the budget")
    func expirationLead() {
        let long = LifecycleStateMachine.Timing(
            budget: .seconds(180),
            expirationWarning: .seconds(5),
            delegateCallTimeLimit: .seconds(5)
        )
        #expect(long.expirationLead == .seconds(5))
        let short = LifecycleStateMachine.Timing(
            budget: .seconds(1),
            expirationWarning: .seconds(5),
            delegateCallTimeLimit: .seconds(5)
        )
        #expect(short.expirationLead == .milliseconds(250))
    }
}
