package import Foundation

/// When courierd wakes apps for a background fetch (docs/background-model.md #14, docs/lifecycle.md): never for an app
/// whose minimum interval is "never" (the default); otherwise shortly before the times of day the app is usually
/// brought to the foreground, learned from its history, and never more often than its interval. An app that keeps
/// answering `.noData` (or overruns its time) is backed off; one that answers `.newData` quickly is favoured. Apps
/// due close together are woken together.
///
/// A value with no clock: every call takes the time, so a test replays a week of use in microseconds. Codable, so
/// courierd can journal it.
package struct FetchScheduler: Sendable, Codable, Equatable {
    package struct Policy: Sendable, Codable, Equatable {
        /// What `.minimum` means: the shortest interval between two fetches of one app.
        package var minimumInterval: TimeInterval = 15 * 60
        /// Usage is learned per slot of the day, this long.
        package var slotLength: TimeInterval = 15 * 60
        /// How long before a usual time of use the fetch is placed.
        package var lead: TimeInterval = 20 * 60
        /// Days of foreground history kept.
        package var historyDays = 14
        /// A slot is a usual time of use when the app came to the foreground in it on at least this share of the
        /// days observed, and on two days at least.
        package var usualShare = 0.3
        /// An app due within this window after another one's wake-up is woken with it.
        package var batchWindow: TimeInterval = 10 * 60
        /// The longest a streak of `.noData` answers or overruns stretches an app's interval to.
        package var maximumBackoffInterval: TimeInterval = 24 * 3600
        /// Until a usual time of use is learned, fetches are at least this far apart (an app never brought to the
        /// foreground is not fetched every few minutes through the night).
        package var unlearnedInterval: TimeInterval = 3600
        /// A `.newData` answer within this time halves the app's interval (not below ``minimumInterval``).
        package var quickAnswer: TimeInterval = 10
        /// The time zone of "time of day".
        package var timeZone = TimeZone.current

        package init() {}
    }

    /// How a fetch went, as the app's completion handler said (or did not).
    package enum Outcome: String, Sendable, Codable, Equatable {
        case newData
        case noData
        case failed
        /// The handler was not called within the app's time.
        case overrun
    }

    /// One fetch, for `courier apps`.
    package struct FetchRecord: Sendable, Codable, Equatable {
        package var at: Date
        package var duration: TimeInterval
        package var bytes: Int64
        package var outcome: Outcome
    }

    /// What courierd knows of one app.
    package struct App: Sendable, Codable, Equatable {
        /// nil: never fetch (the default); otherwise at least this long between fetches.
        package var minimumInterval: TimeInterval?
        /// When the app came to the foreground, oldest first, within the history kept.
        package var foregrounds: [Date] = []
        /// `.noData` answers and overruns since the last `.newData` (or `.failed`, which says nothing either way).
        package var unproductiveStreak = 0
        /// The last answer was `.newData`, given quickly.
        package var favoured = false
        /// The most recent fetches, oldest first (at most 50).
        package var fetches: [FetchRecord] = []
        /// When the app first asked for fetches: the first one comes an interval after, not at once.
        package var registeredAt: Date?
    }

    package var policy: Policy
    package private(set) var apps: [String: App] = [:]

    package init(policy: Policy = Policy()) {
        self.policy = policy
    }

    // MARK: What the apps tell

    /// `setMinimumBackgroundFetchInterval`: nil for never, 0 for `.minimum`, else seconds (at least the minimum).
    /// `date`, when given, is when the app asked: the first fetch comes an interval later.
    package mutating func setMinimumInterval(_ interval: TimeInterval?, of app: String, at date: Date? = nil) {
        var record = apps[app, default: App()]
        record.minimumInterval = interval.map { max($0, policy.minimumInterval) }
        if interval != nil, record.registeredAt == nil {
            record.registeredAt = date
        }
        apps[app] = record
    }

    /// The user brought `app` to the foreground at `date`.
    package mutating func recordForeground(of app: String, at date: Date) {
        var record = apps[app, default: App()]
        record.foregrounds.append(date)
        let horizon = date.addingTimeInterval(-Double(policy.historyDays) * 86_400)
        record.foregrounds.removeAll { $0 < horizon }
        apps[app] = record
    }

    /// A fetch of `app` started at `date` ended with `outcome` after `duration`, having moved `bytes`.
    package mutating func recordFetch(
        of app: String,
        at date: Date,
        duration: TimeInterval,
        bytes: Int64,
        outcome: Outcome
    ) {
        var record = apps[app, default: App()]
        record.fetches.append(FetchRecord(at: date, duration: duration, bytes: bytes, outcome: outcome))
        if record.fetches.count > 50 {
            record.fetches.removeFirst(record.fetches.count - 50)
        }
        switch outcome {
        case .newData:
            record.unproductiveStreak = 0
            record.favoured = duration <= policy.quickAnswer
        case .noData, .overrun:
            record.unproductiveStreak += 1
            record.favoured = false
        case .failed:
            record.favoured = false
        }
        apps[app] = record
    }

    // MARK: When to fetch

    /// The interval `app` gets now: its minimum, halved when favoured, doubled per unproductive answer in a row.
    package func effectiveInterval(of app: String) -> TimeInterval? {
        guard let record = apps[app], let base = record.minimumInterval else {
            return nil
        }
        if record.unproductiveStreak > 0 {
            let stretched = base * pow(2, Double(min(record.unproductiveStreak, 40)))
            return min(policy.maximumBackoffInterval, stretched)
        }
        return record.favoured ? max(policy.minimumInterval, base / 2) : base
    }

    /// When `app` should next be fetched (at or after `now`), and why; nil when it is never fetched.
    package func nextFetch(of app: String, after now: Date) -> (date: Date, reason: String)? {
        guard let record = apps[app], let interval = effectiveInterval(of: app) else {
            return nil
        }
        let usual = usualSlots(of: record, now: now)
        let spacing = usual.isEmpty ? max(interval, policy.unlearnedInterval) : interval
        let earliest = max(now, (record.fetches.last?.at ?? record.registeredAt)?.addingTimeInterval(spacing) ?? now)
        var reason = record.unproductiveStreak > 0
            ? "backed off after \(record.unproductiveStreak) fetches without new data"
            : "every \(Self.describe(spacing))"
        guard !usual.isEmpty else {
            return (earliest, reason + " (no usual time of use learned yet)")
        }
        // The next usual time of use still ahead of `earliest` that no fetch has prepared yet: its fetch window
        // opens `lead` before it (a wake-up that comes late, inside the window, fetches at once).
        let calendar = self.calendar
        let startOfDay = calendar.startOfDay(for: earliest)
        let lastFetch = record.fetches.last?.at
        for day in 0...1 {
            guard let dayStart = calendar.date(byAdding: .day, value: day, to: startOfDay) else {
                continue
            }
            for slot in usual {
                let use = dayStart.addingTimeInterval(Double(slot) * policy.slotLength)
                let window = use.addingTimeInterval(-policy.lead)
                guard use > earliest, lastFetch.map({ $0 < window }) ?? true else {
                    continue
                }
                reason += ", before usual use at \(Self.timeOfDay(use, calendar: calendar))"
                return (max(window, earliest), reason)
            }
        }
        return (earliest, reason)
    }

    /// The apps to wake at `now`: every app due by now, and, if any is, those due within the batch window after it;
    /// none of `excluded` (apps courierd cannot wake now: a fetch under way, in the foreground).
    package func due(at now: Date, excluding excluded: Set<String> = []) -> [String] {
        let times = apps.keys.compactMap { app in nextFetch(of: app, after: now).map { (app, $0.date) } }
        guard times.contains(where: { $0.1 <= now }) else {
            return []
        }
        return times.filter { $0.1 <= now.addingTimeInterval(policy.batchWindow) && !excluded.contains($0.0) }
            .map(\.0).sorted()
    }

    /// The next time any app but `excluded` is due (when courierd should look again), or nil when none is ever
    /// fetched.
    package func nextWake(after now: Date, excluding excluded: Set<String> = []) -> Date? {
        apps.keys.filter { !excluded.contains($0) }.compactMap { nextFetch(of: $0, after: now)?.date }.min()
    }

    // MARK: Learning

    /// The slots of the day (by index, ascending) in which the app was brought to the foreground on enough days.
    private func usualSlots(of record: App, now: Date) -> [Int] {
        let calendar = self.calendar
        let recent = record.foregrounds.filter { $0 <= now }
        guard let first = recent.first else {
            return []
        }
        let observedDays = min(
            policy.historyDays,
            (calendar.dateComponents([.day], from: calendar.startOfDay(for: first), to: now).day ?? 0) + 1
        )
        let needed = max(2, Int((policy.usualShare * Double(observedDays)).rounded(.up)))
        var daysBySlot: [Int: Set<Date>] = [:]
        for date in recent {
            let day = calendar.startOfDay(for: date)
            let slot = Int(date.timeIntervalSince(day) / policy.slotLength)
            daysBySlot[slot, default: []].insert(day)
        }
        return daysBySlot.filter { $0.value.count >= needed }.map(\.key).sorted()
    }

    private var calendar: Calendar {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = policy.timeZone
        return calendar
    }

    private static func timeOfDay(_ date: Date, calendar: Calendar) -> String {
        let parts = calendar.dateComponents([.hour, .minute], from: date)
        return String(format: "%02d:%02d", parts.hour ?? 0, parts.minute ?? 0)
    }

    private static func describe(_ interval: TimeInterval) -> String {
        interval >= 3600 && interval.truncatingRemainder(dividingBy: 3600) == 0
            ? "\(Int(interval / 3600)) h" : "\(Int(interval / 60)) min"
    }
}
