/// The probe's command line.
///
/// ```
/// LifecycleProbe [--scenario NAME] [--task-ms N] [--slow-ms N]
///                [--budget SECONDS] [--expiration-warning SECONDS] [--delegate-limit SECONDS]
/// ```
///
/// Scenarios (what `applicationDidEnterBackground` does):
/// - `idle` (default): nothing.
/// - `finishing-task`: begins background task "probe-work" and ends it `--task-ms` later (300)
///   from another thread; its expiration handler ends it too.
/// - `never-ending-task`: begins background task "probe-stuck" and never ends it; its expiration
///   handler only prints.
/// - `slow-enter-background`: blocks for `--slow-ms` (10000) before returning.
struct ProbeOptions {
    enum Scenario: String {
        case idle
        case finishingTask = "finishing-task"
        case neverEndingTask = "never-ending-task"
        case slowEnterBackground = "slow-enter-background"
    }

    var scenario = Scenario.idle
    var taskMilliseconds = 300
    var slowMilliseconds = 10_000
    var budget: Duration?
    var expirationWarning: Duration?
    var delegateLimit: Duration?

    static func parse(_ arguments: [String]) -> Result<ProbeOptions, ProbeUsageError> {
        var options = ProbeOptions()
        var iterator = arguments.dropFirst().makeIterator()
        while let flag = iterator.next() {
            guard let value = iterator.next() else {
                return .failure(ProbeUsageError(message: "\(flag) needs a value"))
            }
            switch flag {
            case "--scenario":
                guard let scenario = Scenario(rawValue: value) else {
                    return .failure(ProbeUsageError(message: "unknown scenario \(value)"))
                }
                options.scenario = scenario
            case "--task-ms":
                guard let number = Int(value) else { return .failure(ProbeUsageError(message: "bad \(flag)")) }
                options.taskMilliseconds = number
            case "--slow-ms":
                guard let number = Int(value) else { return .failure(ProbeUsageError(message: "bad \(flag)")) }
                options.slowMilliseconds = number
            case "--budget", "--expiration-warning", "--delegate-limit":
                guard let seconds = Double(value), seconds >= 0 else {
                    return .failure(ProbeUsageError(message: "bad \(flag)"))
                }
                let duration = Duration.milliseconds(Int64(seconds * 1000))
                switch flag {
                case "--budget": options.budget = duration
                case "--expiration-warning": options.expirationWarning = duration
                default: options.delegateLimit = duration
                }
            default:
                return .failure(ProbeUsageError(message: "unknown option \(flag)"))
            }
        }
        return .success(options)
    }
}

struct ProbeUsageError: Error {
    var message: String
}
