import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("TaskMachine: waiting for connectivity and a delayed start")
struct ConnectivityTransitionTests {
    typealias D = MachineDriver

    static func waiting() -> D {
        var driver = D.download()
        driver.machine.role.waitsForConnectivity = true
        return driver
    }

    static let noRoute = TransferCompletion(error: CourierError(.notConnectedToInternet, "no route"))

    static func fails(_ action: TaskAction, with code: CourierError.Code) -> Bool {
        if case .finish(.failure(let error)) = action { error.code == code } else { false }
    }

    @Test("no network: the shell looks; missing tells the delegate once; returned submits the next hop")
    func waitsThenBegins() {
        var driver = Self.waiting()
        driver.start()
        let looked = driver.complete(Self.noRoute)
        #expect(looked == [.checkConnectivity(hop: 1, url: URL(string: D.url), deadline: driver.deadline)])
        #expect(driver.apply(.connectivity(hop: 1, .missing)) == [.deliver(.waitingForConnectivity)])
        // A second loss (the link came and went): no second call.
        #expect(driver.apply(.connectivity(hop: 1, .returned)).first.map { action in
            if case .submit(let plan) = action { plan.hop == 2 } else { false }
        } == true)
        #expect(driver.apply(.submitted(hop: 2, transfer: D.transfer(2))) == [])
        _ = driver.complete(hop: 2, Self.noRoute)
        #expect(driver.apply(.connectivity(hop: 2, .missing)) == [])
        #expect(driver.machine.phase == .running)
    }

    @Test("a name that does not resolve while a route exists fails; without waitsForConnectivity nothing waits")
    func failuresThatAreNotTheNetwork() {
        var driver = Self.waiting()
        driver.start()
        let unresolved = TransferCompletion(error: CourierError(.cannotFindHost, "no such host"))
        #expect(driver.complete(unresolved).count == 1)
        let ended = driver.apply(.connectivity(hop: 1, .available))
        #expect(ended.contains { Self.fails($0, with: .cannotFindHost) })

        var plain = D.download()
        plain.start()
        #expect(plain.complete(Self.noRoute).contains { if case .finish = $0 { true } else { false } })
        // A refused connection is the host's answer, not the network's absence.
        var refused = Self.waiting()
        refused.start()
        let answer = TransferCompletion(error: CourierError(.cannotConnectToHost, "refused", osError: 111))
        #expect(refused.complete(answer).contains { if case .finish = $0 { true } else { false } })
    }

    @Test("cancelled while waiting for a network: ends cancelled at once; a late finding is ignored")
    func cancelWhileWaiting() {
        var driver = Self.waiting()
        driver.start()
        _ = driver.complete(Self.noRoute)
        _ = driver.apply(.connectivity(hop: 1, .missing))
        let cancelled = driver.apply(.cancel)
        #expect(cancelled.contains { Self.fails($0, with: .cancelled) })
        #expect(driver.apply(.connectivity(hop: 1, .returned)) == [])
    }

    @Test("delayedStart asks once; the answer begins the transfer (with a new request), or cancels it")
    func delayedStart() {
        var driver = D.download()
        driver.start()
        let asked = driver.apply(.event(hop: 1, D.event(hop: 1, .delayedStart)))
        #expect(asked == [.ask(.delayedStart(hop: 1, request: TaskRequest(D.request(D.url))))])
        #expect(driver.apply(.event(hop: 1, D.event(hop: 1, .delayedStart))) == [], "asked once")
        let other = TaskRequest(D.request("https://a.example/other"))
        #expect(driver.apply(.delayedStartAnswered(hop: 1, .beginWith(other))) == [
            .decide(D.transfer(1), .beginDelayed(other))
        ])
        #expect(driver.machine.currentRequest == other)

        var cancelling = D.download()
        cancelling.start()
        _ = cancelling.apply(.event(hop: 1, D.event(hop: 1, .delayedStart)))
        #expect(cancelling.apply(.delayedStartAnswered(hop: 1, .cancel)) == [.cancelTransfer(D.transfer(1))])
    }
}
