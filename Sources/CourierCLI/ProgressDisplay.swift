import Courier
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// How the progress display names one transfer.
struct DisplayItem: Sendable {
    /// The name on its live progress line and its done line (a file name).
    var name: String
    /// What its `error:` lines start with: the URL for `get`, `FILE -> URL` for `put`.
    var subject: String
    /// Said after the name on its done line (`-> URL` for `put`), if anything.
    var detail: String?
}

/// Everything `courier get` and `courier put` print while they run.
///
/// - `live`: standard error (or standard output) is a terminal. One line per running transfer (name, bar,
///   percent, bytes, rate) and a total line are redrawn in place with ANSI escapes; finished transfers
///   (`saved NAME …`, `uploaded NAME -> URL …`), notices and errors scroll above them.
/// - `plain`: not a terminal. One line per finished transfer, a `progress:` line every few seconds, errors.
/// - `quiet`: errors and warnings only.
///
/// Errors and warnings always go to standard error; the final summary goes to standard output.
/// Only the main loop uses a display, so it needs no lock.
final class ProgressDisplay {
    enum Mode: Equatable {
        case live(fd: Int32)
        case plain
        case quiet
    }

    /// `live` on standard error if it is a terminal, else on standard output if that one is, else `plain`.
    static func mode(quiet: Bool) -> Mode {
        if quiet {
            return .quiet
        }
        let term = ProcessInfo.processInfo.environment["TERM"] ?? ""
        if term != "dumb" {
            if isatty(STDERR_FILENO) == 1 {
                return .live(fd: STDERR_FILENO)
            }
            if isatty(STDOUT_FILENO) == 1 {
                return .live(fd: STDOUT_FILENO)
            }
        }
        return .plain
    }

    let mode: Mode
    private let items: [DisplayItem]
    /// The first word of a done line: `saved` or `uploaded`.
    private let doneVerb: String
    private let plainInterval: Duration = .seconds(2)
    /// Lines of the live region currently on screen.
    private var regionHeight = 0
    private var lastPlainProgress: ContinuousClock.Instant
    /// Per transfer: the last sample and a smoothed rate, for the live lines.
    private var samples: [Int: (bytes: Int64, at: ContinuousClock.Instant, rate: Double)] = [:]
    private var totalSample: (bytes: Int64, at: ContinuousClock.Instant, rate: Double)?

    init(mode: Mode, items: [DisplayItem], doneVerb: String) {
        self.mode = mode
        self.items = items
        self.doneVerb = doneVerb
        self.lastPlainProgress = .now
    }

    /// Prints the reports of `snapshot` and, when live, redraws the running transfers.
    func update(_ snapshot: RunSnapshot) {
        let now = ContinuousClock.now
        updateRates(snapshot, now: now)
        var permanent = ""
        for report in snapshot.reports {
            switch report {
            case .succeeded(let index):
                guard mode != .quiet else {
                    continue
                }
                permanent += doneLine(items[index], snapshot.transfers[index]) + "\n"
            case .notice(let text):
                guard mode != .quiet else {
                    continue
                }
                permanent += text + "\n"
            case .failed(let index, let message):
                errorLine("error: \(items[index].subject): \(message)", into: &permanent)
            case .warning(let text):
                errorLine("warning: \(text)", into: &permanent)
            }
        }
        switch mode {
        case .live(let fd):
            redraw(fd: fd, permanent: permanent, snapshot: snapshot, now: now)
        case .plain:
            var text = permanent
            if now - lastPlainProgress >= plainInterval && snapshot.remaining > 0 {
                lastPlainProgress = now
                text += "progress: " + totalsText(snapshot, now: now) + "\n"
            }
            output(text, to: STDOUT_FILENO)
        case .quiet:
            break
        }
    }

    /// Removes the live region; call before printing the summary.
    func finish() {
        if case .live(let fd) = mode, regionHeight > 0 {
            output("\u{1B}[\(regionHeight)F\u{1B}[J", to: fd)
            regionHeight = 0
        }
    }

    /// Prints the summary line to standard output (not with `--quiet`).
    func summary(_ text: String) {
        guard mode != .quiet else {
            return
        }
        output(text + "\n", to: STDOUT_FILENO)
    }

    /// Prints a line to standard error, keeping the live region intact.
    func emitError(_ line: String) {
        if case .live(let fd) = mode, fd == STDERR_FILENO {
            clearRegion(fd: fd)
        }
        output(line + "\n", to: STDERR_FILENO)
    }

    /// An error line: part of the next redraw when the live region is on standard error, else printed now.
    private func errorLine(_ line: String, into permanent: inout String) {
        if case .live(let fd) = mode, fd == STDERR_FILENO {
            permanent += line + "\n"
        } else {
            output(line + "\n", to: STDERR_FILENO)
        }
    }

    // MARK: Live region

    private func clearRegion(fd: Int32) {
        if regionHeight > 0 {
            output("\u{1B}[\(regionHeight)F\u{1B}[J", to: fd)
            regionHeight = 0
        }
    }

    private func redraw(fd: Int32, permanent: String, snapshot: RunSnapshot, now: ContinuousClock.Instant) {
        let (columns, rows) = Self.terminalSize(fd: fd)
        var text = ""
        if regionHeight > 0 {
            text += "\u{1B}[\(regionHeight)F\u{1B}[J"
        }
        text += permanent
        let running = snapshot.transfers.indices.filter { snapshot.transfers[$0].phase == .running }
        let room = max(1, min(rows - 3, 12))
        var lines: [String] = []
        for index in running.prefix(room) {
            lines.append(transferLine(index, snapshot.transfers[index], columns: columns))
        }
        if running.count > room {
            lines.append("  … and \(running.count - room) more running")
        }
        if snapshot.remaining > 0 {
            lines.append("  " + totalsText(snapshot, now: now))
        }
        for line in lines {
            text += Formatting.fit(line, width: columns - 1) + "\n"
        }
        regionHeight = lines.count
        output(text, to: fd)
    }

    private func transferLine(_ index: Int, _ transfer: TransferProgress, columns: Int) -> String {
        let rate = Formatting.rate(samples[index]?.rate ?? 0)
        let percent = Formatting.percent(transfer.written, of: transfer.expected) ?? "   ?"
        let size =
            transfer.expected >= 0
            ? "\(Formatting.bytes(transfer.written)) / \(Formatting.bytes(transfer.expected))"
            : Formatting.bytes(transfer.written)
        let rateColumn = String(repeating: " ", count: max(0, 11 - rate.count)) + rate
        let tail = "\(percent)  \(Formatting.column(size, width: 21))  \(rateColumn)"
        let barWidth = columns >= 100 ? 24 : (columns >= 80 ? 12 : 0)
        let fixed = 2 + 2 + (barWidth > 0 ? barWidth + 2 : 0) + tail.count + 1
        let nameWidth = max(8, min(40, columns - fixed))
        let name = transfer.name ?? items[index].name
        var line = "  " + Formatting.column(name, width: nameWidth) + "  "
        if barWidth > 0 {
            line += Formatting.bar(transfer.written, of: transfer.expected, width: barWidth) + "  "
        }
        return line + tail
    }

    // MARK: Text

    /// `saved NAME  SIZE in T, RATE` (with `(INTENDED exists)` when saved under a `-N` name), or
    /// `uploaded NAME -> URL  SIZE in T, RATE`.
    private func doneLine(_ item: DisplayItem, _ transfer: TransferProgress) -> String {
        let intended = transfer.name ?? item.name
        var line = "\(doneVerb) \(transfer.savedAs ?? intended)"
        if let savedAs = transfer.savedAs, savedAs != intended {
            line += " (\(intended) exists)"
        }
        if let detail = item.detail {
            line += " \(detail)"
        }
        line += "  \(Formatting.bytes(transfer.written))"
        if let start = transfer.startedAt, let end = transfer.endedAt {
            let seconds = (end - start).inSeconds
            if seconds > 0 {
                line += " in \(Formatting.seconds(seconds)), "
                line += Formatting.rate(Double(transfer.receivedThisRun) / seconds)
            }
        }
        if transfer.resumedOffset > 0 {
            line += " (resumed at \(Formatting.bytes(transfer.resumedOffset)))"
        }
        return line
    }

    private func totalsText(_ snapshot: RunSnapshot, now: ContinuousClock.Instant) -> String {
        let done = snapshot.transfers.count { $0.phase == .succeeded }
        var written: Int64 = 0
        var expected: Int64 = 0
        var allKnown = true
        for transfer in snapshot.transfers {
            written += transfer.written
            if transfer.expected >= 0 {
                expected += transfer.expected
            } else {
                allKnown = false
            }
        }
        let failed = snapshot.transfers.count { $0.phase == .failed }
        var text = "\(done)/\(snapshot.transfers.count) files"
        if failed > 0 {
            text += " (\(failed) failed)"
        }
        text += ", \(Formatting.bytes(written))"
        if allKnown, let percent = Formatting.percent(written, of: expected) {
            text += " of \(Formatting.bytes(expected)) (\(percent.trimmingCharacters(in: .whitespaces)))"
        }
        text += ", \(Formatting.rate(totalSample?.rate ?? 0))"
        text += ", \(Formatting.seconds((now - snapshot.startedAt).inSeconds))"
        return text
    }

    private func updateRates(_ snapshot: RunSnapshot, now: ContinuousClock.Instant) {
        for (index, transfer) in snapshot.transfers.enumerated() where transfer.phase == .running {
            let bytes = transfer.receivedThisRun
            if let sample = samples[index] {
                let elapsed = (now - sample.at).inSeconds
                if elapsed >= 0.2 {
                    let instant = Double(bytes - sample.bytes) / elapsed
                    samples[index] = (bytes, now, sample.rate == 0 ? instant : sample.rate * 0.6 + instant * 0.4)
                }
            } else {
                samples[index] = (bytes, now, 0)
            }
        }
        for (index, transfer) in snapshot.transfers.enumerated() where transfer.isFinished {
            samples[index] = nil
        }
        let total = snapshot.transfers.reduce(Int64(0)) { $0 + $1.receivedThisRun }
        if let sample = totalSample {
            let elapsed = (now - sample.at).inSeconds
            if elapsed >= 0.2 {
                let instant = Double(total - sample.bytes) / elapsed
                totalSample = (total, now, sample.rate == 0 ? instant : sample.rate * 0.6 + instant * 0.4)
            }
        } else {
            totalSample = (total, now, 0)
        }
    }

    // MARK: Output

    private static func terminalSize(fd: Int32) -> (columns: Int, rows: Int) {
        var size = winsize()
        let result = withUnsafeMutablePointer(to: &size) { ioctl(fd, UInt(TIOCGWINSZ), $0) }
        if result == 0, size.ws_col > 0, size.ws_row > 0 {
            return (Int(size.ws_col), Int(size.ws_row))
        }
        return (80, 24)
    }

    private func output(_ text: String, to fd: Int32) {
        guard !text.isEmpty else {
            return
        }
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let count = bytes.withUnsafeBytes { buffer in
                write(fd, buffer.baseAddress! + offset, buffer.count - offset)
            }
            if count < 0 {
                if errno == EINTR {
                    continue
                }
                return
            }
            offset += count
        }
    }
}
