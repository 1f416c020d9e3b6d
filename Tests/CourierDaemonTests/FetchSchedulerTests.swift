import CourierDaemon
import Foundation
import Testing

/// The background fetch scheduler on a virtual clock: a week of use replayed in microseconds.
@Suite("background fetch scheduling")
struct FetchSchedulerTests {
    static let monday = Date(timeIntervalSince1970: 1_795_392_000)  // 2026-11-23 00:00 UTC, a Monday

    static var policy: FetchScheduler.Policy {
        var policy = FetchScheduler.Policy()
        policy.timeZone = TimeZone(identifier: "UTC")!
        return policy
    }

    static func at(day: Int, _ hour: Int, _ minute: Int = 0) -> Date {
        monday.addingTimeInterval(Double(day) * 86_400 + Double(hour) * 3600 + Double(minute) * 60)
    }

    static func hourAndMinute(_ date: Date) -> (Int, Int) {
        let seconds = Int(date.timeIntervalSince(monday)) % 86_400
        return (seconds / 3600, seconds % 3600 / 60)
    }

    /// One fetch the replay made.
    struct Fetch {
        var app: String
        var at: Date
        var day: Int
    }

    /// Replays `days` days: each app in `use` comes to the foreground at those hours every day; each wake-up fetches
    /// the apps due, which answer as `answers` says. Returns every fetch, and how many wake-ups there were.
    static func replay(
        days: Int,
        apps: [String],
        use hours: [Int],
        answers: [String: FetchScheduler.Outcome]
    ) -> (fetches: [Fetch], wakeUps: Int) {
        var scheduler = FetchScheduler(policy: policy)
        for app in apps {
            scheduler.setMinimumInterval(0, of: app)
        }
        var uses = (0..<days).flatMap { day in hours.map { at(day: day, $0) } }
        let end = at(day: days, 0)
        var now = monday
        var fetches: [Fetch] = []
        var wakeUps = 0
        while now < end {
            let wake = scheduler.nextWake(after: now) ?? end
            if let use = uses.first, use <= wake {
                uses.removeFirst()
                now = use
                for app in apps {
                    scheduler.recordForeground(of: app, at: use)
                }
                continue
            }
            now = wake
            guard now < end else {
                break
            }
            let due = scheduler.due(at: now)
            #expect(!due.isEmpty, "woken at \(now) with nothing due")
            wakeUps += 1
            for app in due {
                let outcome = answers[app] ?? .newData
                scheduler.recordFetch(of: app, at: now, duration: 2, bytes: 10_000, outcome: outcome)
                fetches.append(Fetch(app: app, at: now, day: Int(now.timeIntervalSince(monday) / 86_400)))
            }
            // Time moves on while the apps fetch.
            now = now.addingTimeInterval(1)
        }
        return (fetches, wakeUps)
    }

    @Test("never by default; .minimum is the policy's minimum; a longer interval is kept")
    func intervals() {
        var scheduler = FetchScheduler(policy: Self.policy)
        scheduler.recordForeground(of: "news", at: Self.monday)
        #expect(scheduler.nextFetch(of: "news", after: Self.monday) == nil)
        #expect(scheduler.nextWake(after: Self.monday) == nil)
        scheduler.setMinimumInterval(0, of: "news")
        #expect(scheduler.effectiveInterval(of: "news") == 900)
        scheduler.setMinimumInterval(3600, of: "news")
        #expect(scheduler.effectiveInterval(of: "news") == 3600)
        scheduler.setMinimumInterval(nil, of: "news")
        #expect(scheduler.effectiveInterval(of: "news") == nil)
    }

    @Test("a week of use at 8:00 and 18:00: once learned, fetches land just before those times and none at night")
    func weekOfUse() {
        let (fetches, _) = Self.replay(days: 7, apps: ["news"], use: [8, 18], answers: [:])
        let learned = fetches.filter { $0.day >= 2 }
        #expect(!learned.isEmpty)
        for fetch in learned {
            let (hour, minute) = Self.hourAndMinute(fetch.at)
            let before8 = hour == 7 && minute >= 40
            let before18 = hour == 17 && minute >= 40
            #expect(before8 || before18, "a fetch at \(hour):\(minute) on day \(fetch.day)")
        }
        // Two fetches a day once learned: one before each use.
        for day in 2..<7 {
            #expect(learned.filter { $0.day == day }.count == 2, "day \(day)")
        }
        // Quiet hours (23:00-06:00): nothing once learned.
        #expect(!learned.contains { (0..<6).contains(Self.hourAndMinute($0.at).0) || Self.hourAndMinute($0.at).0 == 23 })
        let perDay = (0..<7).map { day in fetches.filter { $0.day == day }.count }
        print("fetch scheduler: week of use at 8:00 and 18:00, fetches per day \(perDay)")
    }

    @Test("an app that keeps answering .noData is backed off; the one answering .newData quickly is not")
    func backoff() {
        let (fetches, wakeUps) = Self.replay(
            days: 7,
            apps: ["news", "quiet"],
            use: [8, 18],
            answers: ["quiet": .noData]
        )
        let news = fetches.filter { $0.app == "news" && $0.day >= 2 }.count
        let quiet = fetches.filter { $0.app == "quiet" && $0.day >= 2 }.count
        #expect(quiet < news, "news \(news), quiet \(quiet)")
        #expect(quiet >= 1, "a backed-off app is still fetched now and then")
        // Batched: both apps share wake-ups.
        #expect(wakeUps < fetches.count, "wake-ups \(wakeUps), fetches \(fetches.count)")
        print(
            "fetch scheduler: days 3-7, news (.newData) \(news) fetches, quiet (.noData) \(quiet); "
                + "\(fetches.count) fetches in \(wakeUps) wake-ups over the week"
        )
    }

    @Test("overruns back off like .noData; .newData given quickly halves the interval, given slowly does not")
    func answers() {
        var scheduler = FetchScheduler(policy: Self.policy)
        scheduler.setMinimumInterval(3600, of: "app")
        scheduler.recordFetch(of: "app", at: Self.monday, duration: 30, bytes: 0, outcome: .overrun)
        #expect(scheduler.effectiveInterval(of: "app") == 7200)
        scheduler.recordFetch(of: "app", at: Self.monday, duration: 30, bytes: 0, outcome: .overrun)
        #expect(scheduler.effectiveInterval(of: "app") == 14_400)
        #expect(scheduler.nextFetch(of: "app", after: Self.monday)?.reason.contains("backed off after 2") == true)
        scheduler.recordFetch(of: "app", at: Self.monday, duration: 1, bytes: 5000, outcome: .newData)
        #expect(scheduler.effectiveInterval(of: "app") == 1800)
        scheduler.recordFetch(of: "app", at: Self.monday, duration: 25, bytes: 5000, outcome: .newData)
        #expect(scheduler.effectiveInterval(of: "app") == 3600)
        for _ in 0..<60 {
            scheduler.recordFetch(of: "app", at: Self.monday, duration: 1, bytes: 0, outcome: .noData)
        }
        // Capped at a day; the record keeps the last 50 fetches.
        #expect(scheduler.effectiveInterval(of: "app") == 86_400)
        #expect(scheduler.apps["app"]?.fetches.count == 50)
    }

    @Test("an app due soon after another rides along with its wake-up")
    func batching() {
        var scheduler = FetchScheduler(policy: Self.policy)
        scheduler.setMinimumInterval(3600, of: "a")
        scheduler.setMinimumInterval(3600, of: "b")
        scheduler.recordFetch(of: "a", at: Self.monday, duration: 1, bytes: 0, outcome: .failed)
        scheduler.recordFetch(of: "b", at: Self.monday.addingTimeInterval(300), duration: 1, bytes: 0, outcome: .failed)
        let wake = scheduler.nextWake(after: Self.monday.addingTimeInterval(400))
        #expect(wake == Self.monday.addingTimeInterval(3600))
        #expect(scheduler.due(at: wake!) == ["a", "b"])
        #expect(scheduler.due(at: Self.monday.addingTimeInterval(1800)) == [])
    }

    @Test("the scheduler survives the journal: encoded and decoded, it decides the same")
    func codable() throws {
        var scheduler = FetchScheduler(policy: Self.policy)
        scheduler.setMinimumInterval(0, of: "news")
        for day in 0..<3 {
            scheduler.recordForeground(of: "news", at: Self.at(day: day, 8))
        }
        let decoded = try JSONDecoder().decode(FetchScheduler.self, from: JSONEncoder().encode(scheduler))
        #expect(decoded == scheduler)
        let now = Self.at(day: 3, 0)
        #expect(decoded.nextFetch(of: "news", after: now)?.date == Self.at(day: 3, 7, 40))
        #expect(decoded.nextFetch(of: "news", after: now)?.reason.contains("before usual use at 08:00") == true)
    }
}
