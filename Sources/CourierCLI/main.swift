import ArgumentParser
import Courier
import Dispatch

#if canImport(Glibc)
import Glibc
#endif

// Launched by courierd (COURIER_BACKGROUND_LAUNCH is set) for the events of the tool's background session, left by
// `courier get --background` or `courier put --background`: the tool runs as a background application then, not as
// a command, and ignores its arguments.
if LaunchOptions.fromProcessEnvironment().launchedIntoBackground {
    BackgroundDelivery.main()
}

// A command. Not `@main` on the command: the application above must run the main dispatch queue itself
// (`Application.main` calls `dispatchMain()`), which an `async` entry point already drains.
Task {
    do {
        var command = try CourierCommand.parseAsRoot()
        if var asyncCommand = command as? any AsyncParsableCommand {
            try await asyncCommand.run()
        } else {
            try command.run()
        }
        CourierCommand.end(0)
    } catch {
        CourierCommand.exit(reporting: error)
    }
}
dispatchMain()
