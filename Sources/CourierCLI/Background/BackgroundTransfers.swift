import ArgumentParser
import Courier
import Foundation
import Logging

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The `courier` tool as a background app of courierd: `courier get --background` and `courier put --background`
/// hand their transfers to courierd in one background session, ``sessionIdentifier``, and return. courierd carries
/// them on after the command exits, the terminal closes or courierd itself is killed and started again; when they
/// end, it launches `courier` in the background (``BackgroundDelivery``), which saves each finished download where
/// it was asked to (the task's description holds the destination path) and reports each transfer's end in the app's
/// log (`courier logs courier`).
enum BackgroundTransfers {
    /// The background session of the tool (one for every command, as an iOS app usually has one).
    static let sessionIdentifier = "courier.transfers"

    /// How long a command waits for the session while another instance of the tool holds it: a relaunched instance
    /// saving files suspends itself once it has, and courierd then hands the session over.
    static let sessionWait: Duration = .seconds(30)

    /// The session's configuration: launch events on, relaunched as the tool's executable alone (which
    /// `main.swift` recognises by courierd's `COURIER_BACKGROUND_LAUNCH`). The session's own diagnostics are
    /// dropped: the tool says what went wrong itself.
    static func configuration() -> SessionConfiguration {
        var configuration = SessionConfiguration.background(withIdentifier: sessionIdentifier)
        configuration.logger = Logger(label: "courier.background") { _ in SwiftLogNoOpLogHandler() }
        return configuration
    }

    /// Opens the tool's session with courierd (starting courierd when none runs), waiting up to ``sessionWait``
    /// while another instance of the tool holds it; `adjust` sets the command's options on its configuration (which
    /// go with each task it hands over). Throws the reason it could not be opened.
    static func open(
        delegate: BackgroundSaver,
        adjusting adjust: (inout SessionConfiguration) throws(CommandFailure) -> Void = { _ in }
    ) async throws(CommandFailure) -> Session {
        var adjusted = configuration()
        try adjust(&adjusted)
        let deadline = ContinuousClock.now + sessionWait
        var said = false
        while true {
            let session = Session(configuration: adjusted, delegate: delegate)
            guard let failure = await session.backgroundOpeningFailure else {
                return session
            }
            session.invalidateAndCancel()
            guard failure.code == .backgroundSessionInUse, ContinuousClock.now < deadline else {
                throw CommandFailure(description: "cannot hand the transfers to courierd: \(failure.message)")
            }
            if !said {
                said = true
                FileHandle.standardError.write(
                    Data("waiting for another courier to give up its background session…\n".utf8)
                )
            }
            try? await Task.sleep(for: .milliseconds(250))
        }
    }

    /// Resumes `task`, waits for courierd's answer (`resume()` itself does not) and says what became of it:
    /// `task N: subject` on standard output, or an error line. Returns the task's identifier when courierd took it.
    static func hand(_ task: SessionTask, in session: Session, subject: String) -> Int? {
        task.resume()
        session.waitForBackgroundAnswers()
        if let error = task.error {
            FileHandle.standardError.write(Data("error: \(subject): \(FailureText.describe(error))\n".utf8))
            return nil
        }
        BackgroundSaver.say("task \(task.taskIdentifier): \(subject)")
        return task.taskIdentifier
    }

    /// The last lines of a handing over: what was handed, and how to follow it; with `waiting` (`--wait`), waits for
    /// the handed tasks to end (this command saves the files then). Throws exit status 1 when a transfer was refused
    /// or, waiting, when one failed (an HTTP error included).
    static func summarise(
        handed: [Int],
        of total: Int,
        noun: String,
        waiting: Bool,
        in session: Session,
        saver: BackgroundSaver
    ) async throws {
        let all = Formatting.count(total, noun)
        let count = handed.count == total ? all : "\(handed.count) of \(all)"
        if waiting {
            BackgroundSaver.say("handed \(count) to courierd; waiting for \(handed.count == 1 ? "it" : "them") to end")
            let allSaved = await saver.waitForEnd(of: Set(handed))
            // The events heard here acknowledged, so that the courier courierd launches next does not hear them again.
            await withCheckedContinuation { left in
                session.leaveBackgroundSession { left.resume() }
            }
            CompletionHook.waitForAll()
            if !allSaved || handed.count < total {
                throw ExitCode.failure
            }
            return
        }
        BackgroundSaver.say(
            "handed \(count) to courierd (session \(sessionIdentifier)); "
                + (handed.isEmpty ? "nothing goes on." : "\(handed.count == 1 ? "it goes" : "they go") on after this "
                + "command exits. Follow with `courier tasks \(sessionIdentifier)`; `courier logs courier` says what "
                + "became of each.")
        )
        if handed.count < total {
            throw ExitCode.failure
        }
    }
}
