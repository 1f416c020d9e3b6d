import Foundation

/// HTTP dates (RFC 9110 §5.6.7): the IMF-fixdate every sender must use (`Sun, 06 Nov 1994 08:49:37 GMT`), and the
/// two obsolete forms a recipient must still accept (RFC 850's `Sunday, 06-Nov-94 08:49:37 GMT` and asctime's
/// `Sun Nov  6 08:49:37 1994`).
enum HTTPDate {
    /// The date, or nil when `text` is none of the three forms (an invalid `Expires` means "already expired" to a
    /// cache, which is the caller's rule, not this one's).
    static func parse(_ text: String) -> Date? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        for format in formats {
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "GMT")
            formatter.dateFormat = format
            if let date = formatter.date(from: trimmed) {
                return date
            }
        }
        return nil
    }

    private static let formats = [
        "EEE, dd MMM yyyy HH:mm:ss zzz", "EEEE, dd-MMM-yy HH:mm:ss zzz", "EEE MMM d HH:mm:ss yyyy",
    ]
}
