import CourierDaemon
import Foundation
import Testing

/// Pushes as courierd takes them: checked like APNs checks them, then rate limited and coalesced per app.
@Suite("push payloads and budget")
struct PushTests {
    static func parse(_ json: String, type: String? = nil, priority: String? = nil) -> Result<PushNotification, PushError> {
        PushNotification.parse(Data(json.utf8), pushType: type, priority: priority)
    }

    static func reason(_ result: Result<PushNotification, PushError>) -> String? {
        if case .failure(let error) = result { error.reason } else { nil }
    }

    @Test("a silent push, an alert (string or title and body): parsed, with the payload kept as sent")
    func accepted() throws {
        let silent = try Self.parse(#"{"aps":{"content-available":1},"content-id":"42"}"#).get()
        #expect(silent.kind == .background)
        #expect(silent.priority == 5)
        #expect(silent.contentAvailable)
        #expect(String(decoding: silent.payload, as: UTF8.self).contains(#""content-id":"42""#))
        let alert = try Self.parse(#"{"aps":{"alert":"New episode"}}"#).get()
        #expect(alert.kind == .alert)
        #expect(alert.priority == 10)
        #expect(alert.alertBody == "New episode")
        let titled = try Self.parse(#"{"aps":{"alert":{"title":"Podcasts","body":"Episode 42"},"content-available":1}}"#, priority: "5").get()
        #expect(titled.kind == .alert)
        #expect(titled.contentAvailable)
        #expect(titled.alertTitle == "Podcasts")
        #expect(titled.priority == 5)
    }

    @Test("bad payloads get APNs's reasons: empty, too large, not JSON, not an object, no aps, nothing to do, wrong type or priority")
    func refused() {
        #expect(Self.reason(Self.parse("")) == "PayloadEmpty")
        let large = #"{"aps":{"content-available":1},"pad":""# + String(repeating: "x", count: 5000) + #""}"#
        let tooLarge = Self.parse(large)
        #expect(Self.reason(tooLarge) == "PayloadTooLarge")
        if case .failure(let error) = tooLarge {
            #expect(error.status == 413)
        }
        #expect(Self.reason(Self.parse("{\"aps\":")) == "BadPayload")
        #expect(Self.reason(Self.parse("[1,2]")) == "BadPayload")
        #expect(Self.reason(Self.parse(#"{"content-id":"42"}"#)) == "MissingAps")
        #expect(Self.reason(Self.parse(#"{"aps":"yes"}"#)) == "MissingAps")
        #expect(Self.reason(Self.parse(#"{"aps":{"content-available":0}}"#)) == "BadPayload")
        #expect(Self.reason(Self.parse(#"{"aps":{"content-available":1}}"#, priority: "10")) == "BadPriority")
        #expect(Self.reason(Self.parse(#"{"aps":{"alert":"x"}}"#, priority: "7")) == "BadPriority")
        #expect(Self.reason(Self.parse(#"{"aps":{"alert":"x"}}"#, priority: "soon")) == "BadPriority")
        #expect(Self.reason(Self.parse(#"{"aps":{"content-available":1}}"#, type: "voip")) == "InvalidPushType")
        #expect(Self.reason(Self.parse(#"{"aps":{"alert":"x","content-available":1}}"#, type: "background")) == "BadPayload")
        #expect(Self.reason(Self.parse(#"{"aps":{"alert":"x"}}"#, type: "background")) == "BadPayload")
    }

    // Computed, not a stored static: LeakSanitizer cannot follow the Data inside a lazily initialised global.
    static var silent: PushNotification {
        try! PushNotification.parse(Data(#"{"aps":{"content-available":1}}"#.utf8)).get()
    }
    static let start = Date(timeIntervalSince1970: 1_795_392_000)

    /// Offers `pushes` (each at its time) to one app whose handler takes `handling` seconds; delivers whatever the
    /// budget lets through. Returns the deliveries: when, and how many pushes each stood for.
    static func simulate(
        pushes: [Date],
        handling: TimeInterval,
        until end: Date,
        budget: PushBudget = PushBudget()
    ) -> [(at: Date, pushes: Int)] {
        var budget = budget
        var deliveries: [(Date, Int)] = []
        var busyUntil: Date?
        var offers = pushes.sorted()
        var now = start
        while now <= end {
            let next = [offers.first, busyUntil, budget.nextDue(after: now)].compactMap { $0 }.min()
            guard let next, next <= end else {
                break
            }
            now = max(now, next)
            if let done = busyUntil, done <= now {
                budget.finished("app", at: now)
                busyUntil = nil
            }
            while let offer = offers.first, offer <= now {
                offers.removeFirst()
                if budget.offer(silent, to: "app", at: now) == .deliver {
                    deliveries.append((now, 1))
                    busyUntil = now.addingTimeInterval(handling)
                }
            }
            if busyUntil == nil {
                for due in budget.takeDue(at: now) {
                    deliveries.append((now, due.pushes))
                    busyUntil = now.addingTimeInterval(handling)
                }
            }
        }
        return deliveries
    }

    @Test("a burst of 50 silent pushes: one delivery at once, the rest coalesced into one when the app is done")
    func burst() {
        let pushes = (0..<50).map { Self.start.addingTimeInterval(Double($0) * 0.01) }
        let deliveries = Self.simulate(pushes: pushes, handling: 2, until: Self.start.addingTimeInterval(3600))
        #expect(deliveries.map(\.pushes) == [1, 49])
        #expect(deliveries.last.map { $0.at.timeIntervalSince(Self.start) } == 2)
        print("push budget: a burst of 50 pushes in 0.5 s -> \(deliveries.count) deliveries \(deliveries.map(\.pushes))")
    }

    @Test("a flood (a push every 30 s for 3 hours): 3 at once, then one per refill, every push accounted for")
    func flood() {
        let pushes = (0..<360).map { Self.start.addingTimeInterval(Double($0) * 30) }
        let end = Self.start.addingTimeInterval(3 * 3600)
        let deliveries = Self.simulate(pushes: pushes, handling: 2, until: end)
        // 3 in the bucket, then one every 20 minutes.
        #expect(deliveries.count <= 3 + 3 * 3 + 1, "\(deliveries.count)")
        #expect(deliveries.count >= 3 * 3)
        let inFirstHour = deliveries.filter { $0.at < Self.start.addingTimeInterval(3600) }.count
        #expect(inFirstHour <= 6)
        // The last push may still be waiting at the end; every other push was delivered or coalesced.
        #expect(deliveries.map(\.pushes).reduce(0, +) >= 359)
        print(
            "push budget: a push every 30 s for 3 h (360) -> \(deliveries.count) deliveries, "
                + "\(inFirstHour) in the first hour"
        )
    }
}
