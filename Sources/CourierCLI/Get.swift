import ArgumentParser
import Courier
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// `courier get URL... [-o FILE | -P DIR] [-i FILE] [--parallel N] [--retry N] [--checksum ALG=HEX]
/// [--limit-rate RATE] [--priority P] [-s N] [--continue] [--force] [--background] …`
struct Get: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Download URLs into a directory (or one URL into a file), showing progress.",
        discussion: """
            Each URL is saved in the output directory (-P, default: the current one) under the last component of \
            its path, made safe: no path separators, no control characters, no leading dots, and "index" when \
            nothing is left. A name the response gives in Content-Disposition (filename*=, else filename=) is used \
            instead, made safe by the same rules (--no-content-disposition ignores it). An existing file is never \
            replaced: the new one is saved as NAME-1, NAME-2, ... (before the extension) unless --force is given. \
            With -o FILE (one URL), the download is saved as FILE exactly, replacing it, as curl -o does; its \
            directory must exist unless --create-dirs is given (as in curl). -P DIR is created when missing.

            An HTTP status other than 2xx (such as 401 or 404, even with an empty body) fails the URL: \
            nothing is saved for it. So does a file whose SHA-256 or SHA-512 is not the one --checksum gives, or not \
            the one the server announced (Repr-Digest, Content-Digest or Digest), checked as the file is written. \
            With --retry N, a URL that fails for a reason that may pass (a timeout, a lost \
            or refused connection, HTTP 408, 429, 500, 502, 503 or 504) is tried again up to N times, after 1 s, \
            2 s, 4 s, ... (or the server's Retry-After, up to 60 s), from the bytes it has when the server allows.

            An interrupted download (Ctrl-C, SIGTERM, SIGHUP, or a failure) is kept as NAME.part, with its \
            Courier resume data in NAME.part.resume, when the server allows resuming it (byte ranges, and a strong \
            ETag or Last-Modified to check the rest against); run the same command again with --continue to go on \
            from there. Otherwise nothing is kept, and the run says why.

            With --background, the downloads are handed to courierd and the command returns at once, printing each \
            task's number: they go on after it exits, after the terminal closes, and after courierd is killed and \
            started again. courierd launches courier in the background when they end, and it saves each file where \
            the command said (chosen from the URL when it was handed over; a file that appeared there meanwhile is \
            never replaced: NAME-N). `courier tasks courier.transfers` shows them, `courier logs courier` what \
            became of each. With --wait, the command stays until they end instead, saves the files itself, and exits \
            as an in-process run does (1 when one failed, an HTTP error included); stopped meanwhile, it leaves them \
            to courierd.

            On a terminal, progress is one line per running transfer, redrawn in place, on standard error. \
            Otherwise it is one line per saved file and a "progress:" line every 2 seconds. A summary line \
            (files, bytes, wall time, throughput) ends the run on standard output.

            Exit status: 0 when every URL was saved (or handed over), 1 when any failed, 130 when interrupted, 64 \
            for bad arguments.
            """
    )

    @Argument(help: ArgumentHelp("The URLs to download (http or https).", valueName: "url"))
    var urls: [String] = []

    @Option(
        name: [.short, .customLong("output")],
        help: ArgumentHelp("Save the one URL as this file (replacing it).", valueName: "file")
    )
    var outputFile: String?

    @Option(
        name: [.customShort("P"), .customLong("output-dir")],
        help: ArgumentHelp("The directory to save into; created when missing (as wget's -P).", valueName: "dir")
    )
    var outputDirectory: String = "."

    @Flag(help: "Create the missing directories of -o FILE (without it, a missing one is an error, as in curl).")
    var createDirs = false

    @Flag(
        name: [.customShort("O"), .customLong("remote-name")],
        help: "Save under the URL's own name (what courier does anyway; accepted for curl's habit)."
    )
    var remoteName = false

    @Option(
        name: [.short, .customLong("input-file")],
        help: ArgumentHelp(
            "Also download the URLs listed in this file, one a line (\"-\": standard input; # starts a comment).",
            valueName: "file"
        )
    )
    var inputFile: String?

    @Option(help: ArgumentHelp("How many transfers run at once (1-256; default 4).", valueName: "n"))
    var parallel: Int?

    @Option(help: ArgumentHelp("Try a URL again up to N times after a failure that may pass.", valueName: "n"))
    var retry: Int = 0

    @Flag(
        name: [.customShort("c"), .customLong("continue")],
        help: "Resume the partial downloads (NAME.part + NAME.part.resume) kept in the output directory."
    )
    var resumePartials = false

    @Option(
        name: .customShort("C"),
        help: ArgumentHelp("With \"-\": --continue, as curl's -C - (no other offset is taken).", valueName: "-")
    )
    var continueAt: String?

    @Option(
        help: ArgumentHelp(
            "The digest the file must have: sha-256=HEX or sha-512=HEX (one URL). Another digest fails the URL.",
            valueName: "algorithm=hex"
        )
    )
    var checksum: String?

    @Option(
        help: ArgumentHelp(
            "The most bytes per second all the downloads receive together: 500K, 2M, 1.5M (powers of 1024) or bytes.",
            valueName: "rate"
        )
    )
    var limitRate: String?

    @Option(
        help: ArgumentHelp(
            "foreground, high, normal (default) or low, as BITS names them: higher ones start first, and "
                + "courierd pauses lower ones for them when all its transfers run.",
            valueName: "priority"
        )
    )
    var priority: TransferPriority = .normal

    @Option(
        name: [.customShort("s"), .long],
        help: ArgumentHelp(
            "Fetch each large file over up to N ranged connections at once (1-16; aria2's -s), where the server "
                + "serves byte ranges.",
            valueName: "n"
        )
    )
    var segments: Int = 1

    @Flag(name: [.short, .long], help: "Replace existing files instead of saving under a -N name.")
    var force = false

    @Flag(
        name: .customLong("content-disposition"),
        inversion: .prefixedNo,
        help: "Save under the name the response's Content-Disposition gives, if any (the default)."
    )
    var contentDisposition = true

    @Flag(
        name: [.short, .long],
        help: "Hand the downloads to courierd and return: they go on after this command, and the terminal, are gone."
    )
    var background = false

    @Flag(
        help: "With --background: wait for the downloads to end, saving them; exit 1 if one failed (HTTP errors too)."
    )
    var wait = false

    @Option(
        help: ArgumentHelp(
            "Run this shell command when each download ends: $1 the saved file (empty after a failure), $2 the URL; "
                + "COURIER_RESULT (saved/failed), COURIER_FILE, COURIER_URL, COURIER_ERROR, COURIER_HTTP_STATUS.",
            valueName: "command"
        )
    )
    var onComplete: String?

    @Flag(name: [.short, .long], help: "Print errors and warnings only.")
    var quiet = false

    @OptionGroup(title: "Requests and connections")
    var request: RequestFlags

    func validate() throws {
        guard !urls.isEmpty || inputFile != nil else {
            throw ValidationError("Give at least one URL (or -i FILE).")
        }
        if let continueAt, continueAt != "-" {
            throw ValidationError("-C takes only \"-\" (continue where the kept partial download stops).")
        }
        if let parallel, !(1...256).contains(parallel) {
            throw ValidationError("--parallel must be between 1 and 256 (got \(parallel)).")
        }
        guard (0...100).contains(retry) else {
            throw ValidationError("--retry must be between 0 and 100 (got \(retry)).")
        }
        if let checksum {
            guard Checksum(checksum) != nil else {
                throw ValidationError("--checksum takes sha-256=HEX (64 digits) or sha-512=HEX (128 digits).")
            }
            guard urls.count == 1 && inputFile == nil else {
                throw ValidationError("--checksum checks one URL's file; give one URL.")
            }
        }
        guard (1...16).contains(segments) else {
            throw ValidationError("--segments must be between 1 and 16 (got \(segments)).")
        }
        if let limitRate, BandwidthLimit(rate: limitRate) == nil {
            throw ValidationError("--limit-rate takes bytes per second: 500K, 2M, 1.5M or 100000 (got \(limitRate)).")
        }
        if outputFile != nil && (urls.count != 1 || inputFile != nil) {
            throw ValidationError("-o FILE saves one URL; for several, give a directory with -P DIR.")
        }
        if wait && !background {
            throw ValidationError("--wait waits for downloads handed to courierd: give --background too.")
        }
        if background {
            let refused = [
                (continues, "--continue (courierd resumes interrupted downloads itself)"),
                (force, "--force (a file courierd finishes never replaces another)"),
                (parallel != nil, "--parallel (courierd decides how many run at once)"),
                (retry > 0, "--retry (courierd retries failed downloads itself)"),
                (limitRate != nil, "--limit-rate (courierd's own --limit-rate caps its transfers)"),
                (request.insecure, "--insecure (courierd verifies every server)"),
            ]
            if let (_, option) = refused.first(where: { $0.0 }) {
                throw ValidationError("--background does not take \(option).")
            }
        }
        for text in urls {
            try Self.checkURL(text)
        }
    }

    /// The request flags on `configuration`; `-H` and `-u` go with every request as the session's header fields.
    private func apply(
        _ request: RequestFlags,
        to configuration: inout SessionConfiguration,
        for urls: [URL]
    ) throws(CommandFailure) {
        try request.apply(to: &configuration, hosts: urls.compactMap(\.host))
        let fields = request.allHeaderFields
        if !fields.isEmpty {
            configuration.httpAdditionalHeaders = Dictionary(fields.map { ($0.name, $0.value) }) { _, last in last }
        }
    }

    /// `--continue`, or curl's `-C -`.
    private var continues: Bool {
        resumePartials || continueAt == "-"
    }

    /// Refuses a URL that does not parse.
    static func checkURL(_ text: String) throws {
        guard URL(string: text) != nil else {
            throw ValidationError("'\(text)' is not a valid URL.")
        }
    }

    /// The URLs to fetch: the arguments, then those of `-i FILE`. A bad line of the file is a bad argument.
    private func allURLs() throws -> [URL] {
        var texts = urls
        if let inputFile {
            let data: Data?
            if inputFile == "-" {
                data = FileHandle.standardInput.readDataToEndOfFile()
            } else {
                data = FileManager.default.contents(atPath: inputFile)
            }
            guard let data else {
                throw ValidationError("-i \(inputFile): cannot read it (missing, or not a readable file).")
            }
            for line in String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline) {
                let text = line.trimmingCharacters(in: .whitespaces)
                if text.isEmpty || text.hasPrefix("#") {
                    continue
                }
                try Self.checkURL(text)
                texts.append(text)
            }
        }
        guard !texts.isEmpty else {
            throw ValidationError("-i \(inputFile ?? "-"): no URL in it.")
        }
        return texts.compactMap { URL(string: $0) }
    }

    /// The directory to save into and, with `-o FILE`, the file's name in it.
    private var destination: (directory: URL, fileName: String?) {
        if let outputFile {
            let file = URL(fileURLWithPath: outputFile).standardizedFileURL
            return (file.deletingLastPathComponent(), file.lastPathComponent)
        }
        return (URL(fileURLWithPath: outputDirectory, isDirectory: true).standardizedFileURL, nil)
    }

    func run() async throws {
        let urls = try allURLs()
        let (directory, fileName) = destination
        if fileName != nil, !createDirs, !FileSystem.isDirectory(directory) {
            let why =
                FileSystem.entryExists(directory) ? "is not a directory" : "does not exist (--create-dirs creates it)"
            throw CommandFailure(description: "cannot save to \(outputFile ?? ""): \(directory.path) \(why)")
        }
        do {
            try FileSystem.makeDirectory(directory)
        } catch {
            throw CommandFailure(description: error.description)
        }
        if background {
            try await handToCourierd(urls, directory: directory, fileName: fileName)
            return
        }
        let staging = directory.appendingPathComponent(".courier-tmp-\(getpid())", isDirectory: true)
        do {
            try FileSystem.makeDirectory(staging)
        } catch {
            throw CommandFailure(description: error.description)
        }
        defer { FileSystem.removeIfPresent(staging) }

        // -o FILE: that name exactly, replacing what is there, whatever the response suggests.
        let overwrite = force || fileName != nil
        let (plans, warnings) = makePlans(urls, in: directory, fileName: fileName, overwrite: overwrite)
        let display = ProgressDisplay(
            mode: ProgressDisplay.mode(quiet: quiet),
            items: plans.map { DisplayItem(name: $0.name, subject: $0.url.absoluteString) },
            doneVerb: "saved"
        )
        for warning in warnings {
            display.emitError("warning: \(warning)")
        }

        var configuration = TransferRun.sessionConfiguration(parallel: parallel ?? 4)
        try apply(request, to: &configuration, for: urls)
        if request.insecure {
            display.emitError(RequestFlags.insecureWarning)
        }
        configuration.bandwidthLimit = limitRate.flatMap { BandwidthLimit(rate: $0) }
        configuration.maximumSegmentsPerDownload = segments
        configuration.resumeDataDirectory = directory
        configuration.temporaryDirectory = staging

        let run = TransferRun(
            display: display,
            interruptNotice: "stopping; what can be resumed is kept for --continue",
            cleanUpBeforeQuitting: { FileSystem.removeIfPresent(staging) }
        )
        let coordinator = DownloadCoordinator(
            plans: plans,
            outputDirectory: directory,
            overwrite: overwrite,
            usesContentDisposition: contentDisposition && fileName == nil,
            retries: retry,
            checksum: checksum.flatMap(Checksum.init),
            priority: priority.value,
            onComplete: onComplete,
            acceptsAnyServer: request.insecure,
            events: run.continuation
        )
        let session = Session(configuration: configuration, delegate: coordinator, delegateQueue: nil)
        // --cookie-jar's file holds every cookie of the run when the command exits, whatever its status.
        defer { configuration.httpCookieStorage?.synchronize() }
        defer { CompletionHook.waitForAll() }
        try await run.run(session: session, coordinator: coordinator)
    }

    /// `--background`: each URL becomes a download task of the tool's background session, its destination path in
    /// the task's description (``BackgroundSaver``).
    private func handToCourierd(_ urls: [URL], directory: URL, fileName: String?) async throws {
        let saver = BackgroundSaver()
        let session = try await BackgroundTransfers.open(delegate: saver) { configuration throws(CommandFailure) in
            try apply(request, to: &configuration, for: urls)
        }
        var reserver = NameReserver(directory: directory, overwrite: false)
        var handed: [Int] = []
        for url in urls {
            let name = fileName ?? reserver.reserve(FileNaming.fileName(for: url))
            let path = directory.appendingPathComponent(name).path
            let task = session.downloadTask(with: url)
            task.taskDescription = path
            task.expectedChecksum = checksum.flatMap(Checksum.init)
            task.priority = priority.value
            task.maximumSegments = segments
            if let onComplete {
                do {
                    try CompletionHook.keep(onComplete, for: task.taskIdentifier)
                } catch {
                    let reason = FileSystem.reason(error)
                    throw CommandFailure(description: "cannot keep the --on-complete command: \(reason)")
                }
            }
            let subject = "\(url.absoluteString) -> \(path)"
            if let identifier = BackgroundTransfers.hand(task, in: session, subject: subject) {
                handed.append(identifier)
            } else {
                _ = CompletionHook.take(for: task.taskIdentifier)
            }
        }
        try await BackgroundTransfers.summarise(
            handed: handed,
            of: urls.count,
            noun: "download",
            waiting: wait,
            in: session,
            saver: saver
        )
    }

    /// Names every URL's destination (`fileName` for the one URL of `-o FILE`) and looks for partial downloads kept by
    /// an earlier run.
    private func makePlans(
        _ urls: [URL],
        in directory: URL,
        fileName: String?,
        overwrite: Bool
    ) -> (plans: [TransferPlan], warnings: [String]) {
        var reserver = NameReserver(directory: directory, overwrite: overwrite)
        let partials = PartialDownloads(directory: directory)
        var plans: [TransferPlan] = []
        var warnings: [String] = []
        for (index, url) in urls.enumerated() {
            let name = reserver.reserve(fileName ?? FileNaming.fileName(for: url))
            var resumeData: Data?
            var hasKeptPartial = false
            switch partials.lookup(name: name, url: url) {
            case .none:
                break
            case .resumable(let data, _):
                hasKeptPartial = true
                if continues {
                    resumeData = data
                } else {
                    warnings.append(
                        "\(name): ignoring the partial download kept in \(FileNaming.partialName(for: name)) "
                            + "(use --continue to resume it)"
                    )
                }
            case .unusable(let reason):
                if continues {
                    warnings.append("\(name): not resuming: \(reason); downloading it again")
                }
            }
            plans.append(
                TransferPlan(
                    index: index,
                    url: url,
                    name: name,
                    resumeData: resumeData,
                    hasKeptPartial: hasKeptPartial
                )
            )
        }
        return (plans, warnings)
    }
}

/// A failure of the whole command (not of one URL), printed as `error: …` with exit status 1
/// (`CourierCommand.exit(reporting:)`).
struct CommandFailure: Error, CustomStringConvertible {
    var description: String
}

/// `--priority`: BITS's four levels as task priorities.
enum TransferPriority: String, ExpressibleByArgument, CaseIterable {
    case foreground, high, normal, low

    var value: Float {
        switch self {
        case .foreground: 1
        case .high: 0.75
        case .normal: SessionTask.defaultPriority
        case .low: 0.25
        }
    }
}
