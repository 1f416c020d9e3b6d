import Foundation

/// Number formatting for progress lines and the summary. Sizes and rates are binary alike (KiB, MiB, GiB; KiB/s,
/// MiB/s = 2^20 bytes per second), so that a size and its rate read in one unit.
enum Formatting {
    static func bytes(_ count: Int64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(max(count, 0))
        var unit = 0
        while value >= 1024 && unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        if unit == 0 {
            return "\(Int64(value)) B"
        }
        return String(format: value >= 100 ? "%.0f" : "%.1f", value) + " " + units[unit]
    }

    static func rate(_ bytesPerSecond: Double) -> String {
        let mebibytes = bytesPerSecond / 1_048_576
        if mebibytes >= 0.9995 {
            return String(format: "%.1f MiB/s", mebibytes)
        }
        return String(format: "%.0f KiB/s", bytesPerSecond / 1024)
    }

    /// `count` and `noun`, plural unless one: "1 download", "0 downloads", "3 sessions".
    static func count(_ count: Int, _ noun: String) -> String {
        "\(count) \(noun)\(count == 1 ? "" : "s")"
    }

    static func seconds(_ seconds: Double) -> String {
        if seconds < 60 {
            return String(format: "%.2f s", seconds)
        }
        let whole = Int(seconds.rounded())
        return String(format: "%d:%02d", whole / 60, whole % 60)
    }

    static func percent(_ part: Int64, of total: Int64) -> String? {
        guard total > 0 else {
            return nil
        }
        return String(format: "%3.0f%%", min(Double(part) / Double(total) * 100, 100))
    }

    /// `text` cut to at most `width` characters (with `…` when cut), so that a live line never wraps.
    static func fit(_ text: String, width: Int) -> String {
        guard width > 1, text.count > width else {
            return text
        }
        return String(text.prefix(width - 1)) + "…"
    }

    /// `text` padded or cut to exactly `width` characters.
    static func column(_ text: String, width: Int) -> String {
        if text.count > width {
            return String(text.prefix(max(width - 1, 0))) + "…"
        }
        return text + String(repeating: " ", count: width - text.count)
    }

    /// `[=====     ]`, `width` characters in all; `[-----]` when the total is unknown.
    static func bar(_ part: Int64, of total: Int64, width: Int) -> String {
        let inner = width - 2
        guard total > 0 else {
            return "[" + String(repeating: "-", count: inner) + "]"
        }
        let filled = Int(Double(inner) * min(Double(part) / Double(total), 1))
        return "[" + String(repeating: "=", count: filled) + String(repeating: " ", count: inner - filled) + "]"
    }
}
