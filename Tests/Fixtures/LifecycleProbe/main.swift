// LifecycleProbe: a small real program for the lifecycle process tests. It runs an Application
// under `Application.main`, prints every transition as a line on stdout, and is driven by real
// signals (SIGTSTP, SIGCONT, SIGTERM). See ProbeOptions for its command line.
import CourierLifecycle

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

let options: ProbeOptions
switch ProbeOptions.parse(CommandLine.arguments) {
case .success(let parsed):
    options = parsed
case .failure(let error):
    writeUsageError(error.message)
    exit(64)
}

var configuration = Application.Configuration()
if let budget = options.budget {
    configuration.backgroundTimeBudget = budget
}
if let warning = options.expirationWarning {
    configuration.expirationWarning = warning
}
if let limit = options.delegateLimit {
    configuration.delegateCallTimeLimit = limit
}
// The real process control, with a line before and after each real stop and before exiting.
configuration.processControl = ProcessControl(
    suspend: {
        emit("suspending")
        ProcessControl.system.suspend()
        emit("resumed")
    },
    exit: { status in
        emit("exiting status=\(status)")
        ProcessControl.system.exit(status)
    },
    terminate: { report in
        ProcessControl.system.terminate(report)
    }
)

Application.main(delegate: ProbeDelegate(options: options), configuration: configuration)
