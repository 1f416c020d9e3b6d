import ArgumentParser
import Courier
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// `courier get URL... [-o DIR] [--parallel N] [--continue] [--force] [--no-content-disposition] [--quiet]`
struct Get: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Download URLs into a directory, showing progress.",
        discussion: """
            Each URL is saved in the output directory under the last component of its path, made safe: \
            no path separators, no control characters, no leading dots, and "index" when nothing is left. \
            A name the response gives in Content-Disposition (filename*=, else filename=) is used instead, \
            made safe by the same rules (--no-content-disposition ignores it). An existing file is never \
            replaced: the new one is saved as NAME-1, NAME-2, ... (before the extension) unless --force is \
            given.

            An HTTP status other than 2xx (such as 401 or 404, even with an empty body) fails the URL: \
            nothing is saved for it.

            An interrupted download (Ctrl-C, SIGTERM, SIGHUP, or a failure after which the server allows resuming) \
            is kept as NAME.part, with its Courier resume data in NAME.part.resume. Run the same command \
            again with --continue to go on from there.

            On a terminal, progress is one line per running transfer, redrawn in place, on standard error. \
            Otherwise it is one line per saved file and a "progress:" line every 2 seconds. A summary line \
            (files, bytes, wall time, throughput) ends the run on standard output.

            Exit status: 0 when every URL was saved, 1 when any failed, 130 when interrupted, 64 for bad \
            arguments.
            """
    )

    @Argument(help: ArgumentHelp("The URLs to download (http or https).", valueName: "url"))
    var urls: [String]

    @Option(
        name: [.short, .customLong("output")],
        help: ArgumentHelp("The directory to save into; created when missing.", valueName: "dir")
    )
    var output: String = "."

    @Option(help: ArgumentHelp("How many transfers run at once (1-256).", valueName: "n"))
    var parallel: Int = 4

    @Flag(
        name: [.customShort("c"), .customLong("continue")],
        help: "Resume the partial downloads (NAME.part + NAME.part.resume) kept in the output directory."
    )
    var resumePartials = false

    @Flag(name: [.short, .long], help: "Replace existing files instead of saving under a -N name.")
    var force = false

    @Flag(
        name: .customLong("content-disposition"),
        inversion: .prefixedNo,
        help: "Save under the name the response's Content-Disposition gives, if any (the default)."
    )
    var contentDisposition = true

    @Flag(name: [.short, .long], help: "Print errors and warnings only.")
    var quiet = false

    func validate() throws {
        guard !urls.isEmpty else {
            throw ValidationError("Give at least one URL.")
        }
        guard (1...256).contains(parallel) else {
            throw ValidationError("--parallel must be between 1 and 256 (got \(parallel)).")
        }
        for text in urls where URL(string: text) == nil {
            throw ValidationError("'\(text)' is not a valid URL.")
        }
    }

    func run() async throws {
        _ = FileSystem.creationMask  // Read the umask before any other thread runs.
        let outputDirectory = URL(fileURLWithPath: output, isDirectory: true).standardizedFileURL
        let staging = outputDirectory.appendingPathComponent(".courier-tmp-\(getpid())", isDirectory: true)
        do {
            try FileSystem.makeDirectory(outputDirectory)
            try FileSystem.makeDirectory(staging)
        } catch {
            throw CommandFailure(description: error.description)
        }
        defer { FileSystem.removeIfPresent(staging) }

        let (plans, warnings) = makePlans(in: outputDirectory)
        let display = ProgressDisplay(
            mode: ProgressDisplay.mode(quiet: quiet),
            items: plans.map { DisplayItem(name: $0.name, subject: $0.url.absoluteString) },
            doneVerb: "saved"
        )
        for warning in warnings {
            display.emitError("warning: \(warning)")
        }

        var configuration = TransferRun.sessionConfiguration(parallel: parallel)
        configuration.resumeDataDirectory = outputDirectory
        configuration.temporaryDirectory = staging

        let run = TransferRun(
            display: display,
            interruptNotice: "stopping, keeping partial downloads for --continue",
            cleanUpBeforeQuitting: { FileSystem.removeIfPresent(staging) }
        )
        let coordinator = DownloadCoordinator(
            plans: plans,
            outputDirectory: outputDirectory,
            overwrite: force,
            usesContentDisposition: contentDisposition,
            events: run.continuation
        )
        let session = Session(configuration: configuration, delegate: coordinator, delegateQueue: nil)
        try await run.run(session: session, coordinator: coordinator)
    }

    /// Names every URL's destination and looks for partial downloads kept by an earlier run.
    private func makePlans(in directory: URL) -> (plans: [TransferPlan], warnings: [String]) {
        var reserver = NameReserver(directory: directory, overwrite: force)
        let partials = PartialDownloads(directory: directory)
        var plans: [TransferPlan] = []
        var warnings: [String] = []
        for (index, text) in urls.enumerated() {
            guard let url = URL(string: text) else {
                continue  // Rejected by validate().
            }
            let name = reserver.reserve(FileNaming.fileName(for: url))
            var resumeData: Data?
            var hasKeptPartial = false
            switch partials.lookup(name: name, url: url) {
            case .none:
                break
            case .resumable(let data, _):
                hasKeptPartial = true
                if resumePartials {
                    resumeData = data
                } else {
                    warnings.append(
                        "\(name): ignoring the partial download kept in \(FileNaming.partialName(for: name)) "
                            + "(use --continue to resume it)"
                    )
                }
            case .unusable(let reason):
                if resumePartials {
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

/// A failure of the whole command (not of one URL), printed by ArgumentParser as `Error: …` with exit status 1.
struct CommandFailure: Error, CustomStringConvertible {
    var description: String
}
