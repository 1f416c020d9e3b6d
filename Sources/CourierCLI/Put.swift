import ArgumentParser
import Courier
import Foundation

/// `courier put FILE... URL [-X METHOD] [-H "Name: value"]... [--parallel N] [--quiet]`
struct Put: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Upload files, showing progress.",
        usage:
            "courier put <file> ... <url> [--method <method>] [--header <header> ...] [--parallel <n>] [--background] "
            + "[--quiet]",
        discussion: """
            One file and a URL ending in "/" (or with no path): the file's name is appended to the URL, \
            percent-encoded. One file and another URL: the file is sent to that URL exactly. Several files: \
            the URL must end in "/", and each file goes to the URL with its name appended.

            Each file is the body of one request (PUT unless --method says otherwise) with a Content-Length. \
            Any status other than 2xx fails the file (redirects are not followed). A missing or unreadable \
            file, or a directory, fails at once; the other files still go.

            Progress is shown as for `courier get`: one line per running upload on a terminal, otherwise one \
            line per uploaded file and a "progress:" line every 2 seconds, and a summary line on standard \
            output.

            With --background, the uploads are handed to courierd and the command returns at once, printing each \
            task's number: they go on after it exits (leave the files in place until they are sent). \
            `courier logs courier` says what became of each.

            Exit status: 0 when every file was uploaded (or handed over), 1 when any failed, 130 when interrupted \
            (Ctrl-C cancels the uploads), 64 for bad arguments (including a bad URL, before anything is sent).
            """
    )

    @Argument(
        help: ArgumentHelp("The files to upload, then the URL (http or https).", valueName: "file ... url")
    )
    var operands: [String] = []

    @Option(
        name: [.customShort("X"), .customLong("method")],
        help: ArgumentHelp("The request method: letters only, not GET or HEAD.", valueName: "method")
    )
    var method = "PUT"

    @OptionGroup(title: "Requests and connections")
    var request: RequestFlags

    @Option(help: ArgumentHelp("How many uploads run at once (1-256; default 4).", valueName: "n"))
    var parallel: Int?

    @Flag(
        name: [.short, .long],
        help: "Hand the uploads to courierd and return: they go on after this command, and the terminal, are gone."
    )
    var background = false

    @Flag(help: "With --background: wait until the uploads end; exit 1 if any failed (HTTP errors too).")
    var wait = false

    @Flag(name: [.short, .long], help: "Print errors and warnings only.")
    var quiet = false

    /// The files: every operand but the last.
    private var files: [String] { Array(operands.dropLast()) }

    func validate() throws {
        guard operands.count >= 2 else {
            throw ValidationError("Give at least one file and then the URL to upload to.")
        }
        if let parallel, !(1...256).contains(parallel) {
            throw ValidationError("--parallel must be between 1 and 256 (got \(parallel)).")
        }
        if wait && !background {
            throw ValidationError("--wait waits for uploads handed to courierd: give --background too.")
        }
        if background && parallel != nil {
            throw ValidationError("--background does not take --parallel (courierd decides how many run at once).")
        }
        guard !method.isEmpty, method.unicodeScalars.allSatisfy({ $0.isASCII && $0.properties.isAlphabetic }) else {
            throw ValidationError("--method must be letters only (got '\(method)').")
        }
        guard !["GET", "HEAD"].contains(method.uppercased()) else {
            throw ValidationError("--method \(method) cannot send a file; use PUT, POST or another method.")
        }
        if background && request.insecure {
            throw ValidationError("--background does not take --insecure (courierd verifies every server).")
        }
        let base = try Self.baseURL(operands[operands.count - 1])  // At least two operands: checked above.
        if files.count > 1 && !UploadPlan.appendsName(to: base) {
            throw ValidationError(
                "With several files the URL must end in \"/\" (each file's name is appended to it)."
            )
        }
    }

    func run() async throws {
        let base = try Self.baseURL(operands[operands.count - 1])
        let fields = request.allHeaderFields
        let hosts = [base.host].compactMap { $0 }
        let plans = UploadPlan.plans(for: files, to: base, appendingNames: UploadPlan.appendsName(to: base))
        if background {
            try await handToCourierd(plans, headers: fields, hosts: hosts)
            return
        }
        let display = ProgressDisplay(
            mode: ProgressDisplay.mode(quiet: quiet),
            items: plans.map {
                DisplayItem(
                    name: $0.fileURL.lastPathComponent,
                    subject: $0.subject,
                    detail: "-> \($0.url.absoluteString)"
                )
            },
            doneVerb: "uploaded"
        )
        for plan in plans {
            if case .failure(let failure) = plan.size {
                display.emitError("error: \(plan.path): \(failure.description)")
            }
        }

        var configuration = TransferRun.sessionConfiguration(parallel: parallel ?? 4)
        try request.apply(to: &configuration, hosts: hosts)
        if request.insecure {
            display.emitError(RequestFlags.insecureWarning)
        }

        let run = TransferRun(display: display, interruptNotice: "cancelling the uploads")
        let coordinator = UploadCoordinator(
            plans: plans,
            method: method,
            headers: fields,
            acceptsAnyServer: request.insecure,
            events: run.continuation
        )
        let session = Session(configuration: configuration, delegate: coordinator, delegateQueue: nil)
        // --cookie-jar's file holds every cookie of the run when the command exits, whatever its status.
        defer { configuration.httpCookieStorage?.synchronize() }
        try await run.run(session: session, coordinator: coordinator)
    }

    /// `--background`: each readable file becomes an upload task of the tool's background session, its path in the
    /// task's description (``BackgroundSaver`` reports it when the upload ends).
    private func handToCourierd(
        _ plans: [UploadPlan],
        headers: [(name: String, value: String)],
        hosts: [String]
    ) async throws {
        let saver = BackgroundSaver()
        let session = try await BackgroundTransfers.open(delegate: saver) { configuration throws(CommandFailure) in
            try request.apply(to: &configuration, hosts: hosts)
        }
        var handed: [Int] = []
        for plan in plans {
            if case .failure(let failure) = plan.size {
                FileHandle.standardError.write(Data("error: \(plan.path): \(failure.description)\n".utf8))
                continue
            }
            let request = UploadCoordinator.request(for: plan, method: method, headers: headers)
            let task = session.uploadTask(with: request, fromFile: plan.fileURL.standardizedFileURL)
            task.taskDescription = plan.fileURL.standardizedFileURL.path
            if let identifier = BackgroundTransfers.hand(task, in: session, subject: plan.subject) {
                handed.append(identifier)
            }
        }
        try await BackgroundTransfers.summarise(
            handed: handed,
            of: plans.count,
            noun: "upload",
            waiting: wait,
            in: session,
            saver: saver
        )
    }

    /// The URL to upload to, checked: it parses, its scheme is http or https, it has a host.
    static func baseURL(_ text: String) throws -> URLComponents {
        guard let components = URLComponents(string: text), components.url != nil else {
            throw ValidationError("'\(text)' is not a valid URL.")
        }
        guard let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https" else {
            throw ValidationError("'\(text)': unsupported scheme (only http and https can be uploaded to).")
        }
        guard let host = components.host, !host.isEmpty else {
            throw ValidationError("'\(text)' has no host.")
        }
        return components
    }
}
