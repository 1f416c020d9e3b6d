import Foundation

/// A cap on the bytes per second a session's transfers receive together (``SessionConfiguration/bandwidthLimit``),
/// or courierd's as a whole (`courierd --limit-rate`), optionally only during a time of day (BITS's work hours).
public struct BandwidthLimit: Sendable, Hashable {
    /// Bytes per second; the limit is held on average (a transfer may run ahead by one receive buffer, and by a
    /// quarter of a second's bytes after a pause).
    public var bytesPerSecond: Int64
    /// When the limit applies, in local time; nil: always. Outside it, transfers are not limited.
    public var window: Window?

    public init(bytesPerSecond: Int64, window: Window? = nil) {
        self.bytesPerSecond = bytesPerSecond
        self.window = window
    }

    /// A rate as curl's `--limit-rate` writes it: bytes, or with a suffix `K`, `M` or `G` (powers of 1024;
    /// `2M` is 2,097,152 bytes per second; `1.5M` is allowed); nil when `rate` is not one, or not above zero.
    public init?(rate: String, window: Window? = nil) {
        let text = rate.trimmingCharacters(in: .whitespaces).uppercased()
        let multipliers: [Character: Double] = ["K": 1024, "M": 1024 * 1024, "G": 1024 * 1024 * 1024]
        var number = Substring(text)
        var multiplier = 1.0
        if let last = text.last, let scale = multipliers[last] {
            multiplier = scale
            number = text.dropLast()
        }
        guard let value = Double(number), value.isFinite, value * multiplier >= 1, value * multiplier < 1e15 else {
            return nil
        }
        self.init(bytesPerSecond: Int64(value * multiplier), window: window)
    }

    /// A daily stretch of local time: from `start` to `end` minutes after midnight; one whose end is not after
    /// its start runs past midnight (`22:00-06:00`).
    public struct Window: Sendable, Hashable, CustomStringConvertible {
        public var start: Int
        public var end: Int

        /// Minutes after midnight, each in 0..<1440; nil otherwise.
        public init?(startMinute: Int, endMinute: Int) {
            guard (0..<1440).contains(startMinute), (0..<1440).contains(endMinute), startMinute != endMinute else {
                return nil
            }
            start = startMinute
            end = endMinute
        }

        /// `HH:MM-HH:MM`, 24-hour clock; nil when `text` is not that.
        public init?(_ text: String) {
            let parts = text.split(separator: "-")
            guard parts.count == 2, let start = Self.minutes(parts[0]), let end = Self.minutes(parts[1]) else {
                return nil
            }
            self.init(startMinute: start, endMinute: end)
        }

        public var description: String {
            String(format: "%02d:%02d-%02d:%02d", start / 60, start % 60, end / 60, end % 60)
        }

        /// Whether `date`, in `calendar`'s time zone, falls in the window.
        func contains(_ date: Date, calendar: Calendar = .current) -> Bool {
            let minute = Self.minuteOfDay(date, calendar)
            return start < end ? (start..<end).contains(minute) : minute >= start || minute < end
        }

        /// The next time after `date` at which the window opens or closes.
        func nextBoundary(after date: Date, calendar: Calendar = .current) -> Date {
            let minute = Self.minuteOfDay(date, calendar)
            let midnight = calendar.startOfDay(for: date)
            let candidates = [start, end, start + 1440, end + 1440].filter { $0 > minute }.sorted()
            let next = candidates.first ?? (start + 1440)
            return calendar.date(byAdding: .minute, value: next, to: midnight) ?? date.addingTimeInterval(60)
        }

        private static func minuteOfDay(_ date: Date, _ calendar: Calendar) -> Int {
            let parts = calendar.dateComponents([.hour, .minute], from: date)
            return (parts.hour ?? 0) * 60 + (parts.minute ?? 0)
        }

        private static func minutes(_ text: Substring) -> Int? {
            let pieces = text.split(separator: ":")
            guard pieces.count == 2, let hours = Int(pieces[0]), let minutes = Int(pieces[1]), (0..<24).contains(hours),
                (0..<60).contains(minutes)
            else {
                return nil
            }
            return hours * 60 + minutes
        }
    }
}
