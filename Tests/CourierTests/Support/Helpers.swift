import Courier
import CourierTestSupport
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Starts a server, runs `body`, and shuts the server down whatever happens. In the HTTP/2 pass
/// (`COURIER_TEST_PROTOCOL=h2`) a plain server serves HTTPS with HTTP/2 instead (``TestProtocol``).
func withServer<T>(
    _ configuration: TestServer.Configuration = .init(),
    _ body: (TestServer) async throws -> T
) async throws -> T {
    let server = try await TestServer.start(configuration.forCurrentProtocol())
    do {
        let result = try await body(server)
        try await server.shutdown()
        return result
    } catch {
        try? await server.shutdown()
        throw error
    }
}

/// An ephemeral configuration with short timeouts so that a broken test fails quickly.
func testConfiguration() -> SessionConfiguration {
    var configuration = SessionConfiguration.ephemeral
    configuration.timeoutIntervalForRequest = 20
    configuration.engineLoopCount = 2
    configuration.resumeDataDirectory = FileManager.default.temporaryDirectory
        .appendingPathComponent("courier-test-resume", isDirectory: true)
    if TestProtocol.current == .http2, let authority = try? TestCertificateAuthority.shared() {
        configuration.trustedCertificateAuthorities = .pem(authority.pem)
    }
    return configuration
}

/// A test that does not run in the HTTP/2 pass, for the reason given.
func onlyOverHTTP1(_ reason: Comment) -> ConditionTrait {
    .enabled(if: TestProtocol.current == .http1, reason)
}

/// A session with a recording delegate on a known queue.
func makeRecordingSession(
    _ configuration: SessionConfiguration = testConfiguration()
) -> (Session, RecordingDelegate) {
    let delegate = RecordingDelegate()
    let queue = OperationQueue()
    queue.maxConcurrentOperationCount = 1
    delegate.expectQueue(queue)
    let session = Session(configuration: configuration, delegate: delegate, delegateQueue: queue)
    return (session, delegate)
}

extension HTTPURLResponse {
    func header(_ name: String) -> String? {
        value(forHTTPHeaderField: name)
    }
}

/// Sanitizers multiply memory use (shadow memory, quarantines).
let memoryBoundFactor = runningUnderSanitizer ? 8 : 1

/// The resident set size of this process, in bytes.
func residentMemory() -> Int {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else {
        return 0
    }
    for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
        let digits = line.split(separator: " ").compactMap { Int($0) }.first ?? 0
        return digits * 1024
    }
    return 0
}

/// Descriptors of this process that belong to one session's work: TCP sockets connected to `port` (the test's own
/// server), and files under `directory` (the session's temporary directory). Other tests running in parallel open and
/// close descriptors of their own all the time, so a count of all of them says nothing about one session.
func openDescriptors(connectedToPort port: Int, orUnder directory: URL) -> Int {
    var inodes: Set<String> = []
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        // Read to its end: a /proc table says it is empty, and a read by its size stops at the first page.
        guard let data = FileHandle(forReadingAtPath: table)?.readDataToEndOfFile(),
            let text = String(data: data, encoding: .utf8)
        else { continue }
        for line in text.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ")
            // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
            guard fields.count > 9, let remotePort = fields[2].split(separator: ":").last.flatMap({ Int($0, radix: 16) })
            else { continue }
            if remotePort == port {
                inodes.insert(String(fields[9]))
            }
        }
    }
    let prefix = directory.resolvingSymlinksInPath().path
    let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
    return names.filter { name in
        guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(name)") else {
            return false
        }
        if target.hasPrefix("socket:["), let inode = target.dropFirst(8).split(separator: "]").first {
            return inodes.contains(String(inode))
        }
        return target.hasPrefix(prefix)
    }.count
}

func jsonObject(_ data: Data) -> [String: Any] {
    (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:]
}

extension CourierError.Code {
    static func of(_ error: (any Error)?) -> CourierError.Code? {
        (error as? CourierError)?.code
    }
}

/// Runs `total` operations, `inFlight` at a time (each new one starts when one ends, so the later ones find
/// connections the earlier ones used), and returns what failed: the operation's own description of a wrong
/// result, or the error it threw.
func inWaves(
    total: Int,
    inFlight: Int,
    _ operation: @escaping @Sendable (Int) async throws -> String?
) async throws -> [String] {
    try await withThrowingTaskGroup(of: String?.self) { group in
        var next = 0
        var failures: [String] = []
        func add() {
            let index = next
            next += 1
            group.addTask {
                do {
                    return try await operation(index).map { "#\(index): \($0)" }
                } catch {
                    return "#\(index): \(error)"
                }
            }
        }
        while next < min(inFlight, total) {
            add()
        }
        while let failure = try await group.next() {
            if let failure {
                failures.append(failure)
            }
            if next < total {
                add()
            }
        }
        return failures
    }
}
