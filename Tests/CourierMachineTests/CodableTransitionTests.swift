import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Inputs and actions are what the daemon backend sends and journals: each must come back equal from JSON.
@Suite("TaskMachine: inputs and actions round-trip through JSON")
struct CodableTransitionTests {
    typealias D = MachineDriver

    static let deadline = Date(timeIntervalSinceReferenceDate: 800_000_060)
    static let error = CourierError(
        .networkConnectionLost,
        "reset by peer",
        curlCode: 56,
        osError: 104,
        failingURL: URL(string: "https://a.example/x")
    )

    static let post = D.request(
        "https://a.example/form?q=1",
        method: "POST",
        headers: ["Content-Type": "application/json", "X-Trace": "t1"],
        body: Data("{\"a\":1}".utf8)
    )

    static let head = D.head(
        206,
        ["Content-Range": "bytes 100-999/1000", "ETag": "\"v1\""],
        cookies: ["a=1; Path=/", "b=2"]
    )

    static let plan = HopPlan(
        hop: 3,
        request: TaskRequest(post),
        resumeOffset: 100,
        authentication: .digest(user: "u", password: "p"),
        priority: 0.75,
        resourceDeadline: deadline,
        staging: D.stagingFile,
        resume: D.resume
    )

    static let event = TransferEvent(
        id: TransferID(task: 42, hop: 3),
        transfer: 103,
        progress: TransferProgress(received: 10, expectedToReceive: 900, sent: 7, expectedToSend: 7),
        payload: .response(held: true, resumeOffset: 100, head: head)
    )

    static var metrics: TransferMetrics {
        var metrics = TransferMetrics()
        metrics.totalMicroseconds = 1234
        metrics.httpVersion = 2
        metrics.reusedConnection = true
        metrics.remoteAddress = "127.0.0.1"
        metrics.remotePort = 8443
        return metrics
    }

    static let inputs: [TaskInput] = [
        .resume,
        .suspend,
        .cancel,
        .backpressure(true),
        .backpressure(false),
        .started(resumeOffset: 100, staging: D.stagingFile, resourceDeadline: deadline),
        .started(resumeOffset: 0, staging: nil, resourceDeadline: nil),
        .failed(CourierError(.cannotResume, "the partial file of the resume data is gone")),
        .submitted(hop: 1, transfer: 101),
        .submitFailed(hop: 2, error),
        .event(hop: 3, event),
        .event(hop: 1, D.event(hop: 1, .data(Data([0, 1, 2, 255])))),
        .event(hop: 1, D.event(hop: 1, .progress, progress: TransferProgress(received: 5, expectedToReceive: -1))),
        .event(hop: 1, D.event(hop: 1, .complete(.success(bytesOnDisk: 1000, metrics: metrics)))),
        .event(hop: 1, D.event(hop: 1, .complete(TransferCompletion(error: error, bytesOnDisk: 5)))),
        .redirectAnswered(hop: 1, TaskRequest(post)),
        .redirectAnswered(hop: 1, nil),
        .challengeAnswered(hop: 1, .credential(user: "user", password: "pä ss")),
        .challengeAnswered(hop: 1, .withoutCredential),
        .challengeAnswered(hop: 1, .cancel),
        .dispositionAnswered(hop: 1, .allow),
        .dispositionAnswered(hop: 1, .cancel),
        .dispositionAnswered(hop: 1, .becomeDownload(staging: D.stagingFile)),
        .heldFailed(hop: 1, CourierError(.cannotOpenFile, "no staging file", osError: 2)),
        .cacheLookedUp(nil),
        .abandon,
    ]

    /// Made per use, not kept in a `static let`: a `TaskResponse` (a class) in a multi-payload enum is stored with
    /// the case in its pointer's spare bits, which LeakSanitizer does not read as a pointer, so objects held by a
    /// global array of actions until exit were reported as leaked under `scripts/sanitize.sh address`.
    static func makeActions() -> [TaskAction] {
        [
            .start,
            .submit(plan),
            .submit(
                HopPlan(
                    hop: 1,
                    request: TaskRequest(D.request(D.url)),
                    resumeOffset: 0,
                    authentication: .none,
                    priority: 0.5,
                    resourceDeadline: nil,
                    staging: nil,
                    resume: nil
                )
            ),
            .submit(
                HopPlan(
                    hop: 2,
                    request: TaskRequest(D.request(D.url)),
                    resumeOffset: 0,
                    authentication: .basic(user: "u", password: "p"),
                    priority: 1,
                    resourceDeadline: deadline,
                    staging: nil,
                    resume: nil
                )
            ),
            .cancelTransfer(101),
            .pauseTransfer(102),
            .resumeTransfer(103),
            .decide(101, .allow),
            .decide(101, .cancel),
            .decide(101, .toFile(path: "/tmp/x")),
            .rememberResponse(D.response(D.url, head)),
            .lookUpCache(TaskRequest(post)),
            .storeInCache(
                CacheEntry(
                    response: D.response(D.url, head),
                    body: Data("body".utf8),
                    requestDate: D.epoch,
                    responseDate: D.epoch.addingTimeInterval(0.25),
                    varyingFields: ["accept": "a/b"]
                )
            ),
            .invalidateCache(URL(string: D.url)!),
            .ask(.redirect(hop: 1, response: D.response(D.url, head), proposed: TaskRequest(post))),
            .ask(
                .challenge(
                    hop: 2,
                    TaskChallenge(
                        offer: AuthenticationOffer(scheme: .digest, realm: "r"),
                        url: URL(string: D.url)!,
                        previousFailureCount: 1,
                        response: D.response(D.url, D.head(401))
                    )
                )
            ),
            .ask(
                .challenge(
                    hop: 1,
                    TaskChallenge(
                        offer: AuthenticationOffer(scheme: .basic, realm: nil),
                        url: URL(string: D.url)!,
                        previousFailureCount: 0,
                        response: D.response(D.url, D.head(407))
                    )
                )
            ),
            .ask(.disposition(hop: 1, response: D.response(D.url, D.head(200)))),
            .deliver(.response(D.response(D.url, head))),
            .deliver(.data(Data("body".utf8))),
            .deliver(.sentBodyData(delta: 1, total: 2, expected: 3)),
            .deliver(.wroteData(delta: 4, total: 5, expected: -1)),
            .deliver(.resumed(offset: 100, expectedTotal: 1000)),
            .becomeDownload(transfer: 101, staging: D.stagingFile),
            .finish(.success),
            .finish(.failure(error)),
        ]
    }

    static let actionCount = makeActions().count

    static func roundTrip<Value: Codable>(_ value: Value) throws -> Value {
        let data = try JSONEncoder().encode(value)
        return try JSONDecoder().decode(Value.self, from: data)
    }

    @Test("every input round-trips to an equal value", arguments: inputs)
    func inputRoundTrips(input: TaskInput) throws {
        #expect(try Self.roundTrip(input) == input)
    }

    @Test("every action round-trips to an equal value", arguments: 0..<actionCount)
    func actionRoundTrips(index: Int) throws {
        let action = Self.makeActions()[index]
        #expect(try Self.roundTrip(action) == action, "action \(index): \(action)")
    }

    @Test("a COMPLETE with the file's digest round-trips")
    func completionWithDigest() throws {
        // Made here, not in the static `inputs`: a `Data` held by a global until exit reads as a leak to LSan.
        let input = TaskInput.event(
            hop: 1,
            D.event(
                hop: 1,
                .complete(
                    TransferCompletion(
                        error: nil,
                        bytesOnDisk: 3,
                        digest: Checksum("sha-256=" + String(repeating: "0f", count: 32))
                    )
                )
            )
        )
        #expect(try JSONDecoder().decode(TaskInput.self, from: JSONEncoder().encode(input)) == input)
    }

    @Test("a TransferSpec an earlier version journaled (without the fields added since) decodes with their defaults")
    func earlierSpecDecodes() throws {
        let earlier = #"{"url":"https://a.example/x","method":"GET","headers":["A: b"],"body":{"none":{}},"#
            + #""sink":{"memory":{}},"resumeOffset":0,"holdRedirectAndAuth":true,"askResponse":false,"noBody":false,"#
            + #""decodesContent":true,"http2":true,"authentication":{"none":{}},"idleTimeoutMilliseconds":60000,"#
            + #""totalTimeoutMilliseconds":0,"priority":500}"#
        let spec = try JSONDecoder().decode(TransferSpec.self, from: Data(earlier.utf8))
        #expect(spec.url == "https://a.example/x" && spec.headers == ["A: b"] && spec.priority == 500)
        #expect(spec.segments == 1 && spec.rangeLength == 0 && spec.bodyOffset == 0 && spec.maximumBytesPerSecond == 0)
        #expect(spec.proxyAuthentication == .none && !spec.announcedDigest && spec.digest == nil)
        // And today's round-trips whole.
        var today = spec
        today.segments = 4
        today.segmentMap = [DownloadSegment(start: 0, end: 10, done: 3)]
        today.digest = .sha512
        #expect(try JSONDecoder().decode(TransferSpec.self, from: JSONEncoder().encode(today)) == today)
    }

    @Test("a TaskRequest keeps the URL, method, header fields, body and timeout")
    func codableRequest() throws {
        var request = Self.post
        request.timeoutInterval = 12.5
        let decoded = try Self.roundTrip(TaskRequest(request))
        #expect(decoded == TaskRequest(request))
        #expect(decoded.urlRequest.url == URL(string: "https://a.example/form?q=1"))
        #expect(decoded.urlRequest.httpMethod == "POST")
        #expect(decoded.urlRequest.value(forHTTPHeaderField: "Content-Type") == "application/json")
        #expect(decoded.urlRequest.value(forHTTPHeaderField: "X-Trace") == "t1")
        #expect(decoded.urlRequest.allHTTPHeaderFields?.count == 2)
        #expect(decoded.urlRequest.httpBody == Data("{\"a\":1}".utf8))
        #expect(decoded.urlRequest.timeoutInterval == 12.5)
    }

    @Test("a TaskRequest keeps the caller's URLRequest in step; one made from a URL builds its URLRequest")
    func taskRequestSources() {
        var given = Self.post
        given.cachePolicy = .reloadIgnoringLocalCacheData
        var request = TaskRequest(given)
        request.setURL(URL(string: "https://b.example/next"))
        request.setMethod("GET")
        request.removeBody()
        request.removeHeaderField("content-type")
        #expect(request.urlRequest.cachePolicy == .reloadIgnoringLocalCacheData)
        #expect(request.urlRequest.url == URL(string: "https://b.example/next"))
        #expect(request.urlRequest.httpMethod == "GET")
        #expect(request.urlRequest.httpBody == nil)
        #expect(request.urlRequest.allHTTPHeaderFields == ["X-Trace": "t1"])
        #expect(request.headerFields == ["X-Trace": "t1"])
        #expect(request.value(forHTTPHeaderField: "x-TRACE") == "t1")

        let plain = TaskRequest(url: URL(string: "https://a.example/f")!)
        #expect(plain.method == "GET")
        #expect(plain.urlRequest.url == URL(string: "https://a.example/f"))
        #expect(plain.urlRequest.httpMethod == "GET")
        #expect(plain.urlRequest.timeoutInterval == TaskRequest.defaultTimeoutInterval)
        #expect(plain == TaskRequest(URLRequest(url: URL(string: "https://a.example/f")!)))
        #expect(TaskRequest(url: nil).urlRequest.url == nil)
    }

    @Test("a TaskRequest of a plain GET comes back equal")
    func codablePlainRequest() throws {
        let request = D.request(D.url)
        #expect(try Self.roundTrip(TaskRequest(request)) == TaskRequest(request))
    }

    @Test("a request without a URL cannot be encoded")
    func requestWithoutURL() {
        var request = D.request(D.url)
        request.url = nil
        #expect(throws: EncodingError.self) {
            _ = try JSONEncoder().encode(TaskRequest(request))
        }
    }

    @Test("a journal of inputs, decoded and replayed into a fresh machine, gives the same actions")
    func journalReplays() throws {
        // A task that is challenged, redirected across origins, and completes after its retired hops.
        var d = D.download()
        var journal: [TimedInput] = []
        var actions: [[TaskAction]] = []
        func record(_ input: TaskInput) {
            journal.append(TimedInput(input: input, at: d.now))
            actions.append(d.apply(input))
        }
        func record(hop: Int, _ payload: TransferEvent.Payload, received: Int64 = 0, expected: Int64 = -1) {
            let progress = TransferProgress(received: received, expectedToReceive: expected)
            record(.event(hop: hop, D.event(hop: hop, payload, progress: progress)))
        }
        let challenge = D.head(401, ["WWW-Authenticate": "Basic realm=\"r\""])
        record(.resume)
        record(.started(resumeOffset: 0, staging: D.stagingFile, resourceDeadline: D.epoch.addingTimeInterval(60)))
        record(.submitted(hop: 1, transfer: 101))
        record(hop: 1, .response(held: true, resumeOffset: 0, head: challenge))
        d.advance(by: 1)
        record(.challengeAnswered(hop: 1, .credential(user: "u", password: "p")))
        record(.submitted(hop: 2, transfer: 102))
        record(hop: 2, .response(held: true, resumeOffset: 0, head: D.head(302, ["Location": "https://b.example/f"])))
        record(.redirectAnswered(hop: 2, TaskRequest(D.request("https://b.example/f"))))
        record(hop: 3, .response(held: false, resumeOffset: 0, head: D.head(200)), expected: 10)
        record(hop: 3, .progress, received: 4, expected: 10)
        record(hop: 1, .complete(.cancelled()))
        record(hop: 3, .complete(.success(bytesOnDisk: 10)), received: 10, expected: 10)
        record(hop: 2, .complete(.cancelled()))
        #expect(actions.last == [.finish(.success)])
        #expect(actions.joined().filter(\.isSubmit).count == 3)

        let decoded = try JSONDecoder().decode([TimedInput].self, from: JSONEncoder().encode(journal))
        #expect(decoded == journal)
        var replay = D.download()
        let replayed = decoded.map { replay.machine.apply($0.input, at: $0.at) }
        #expect(replayed == actions)
        let decodedActions = try JSONDecoder().decode([[TaskAction]].self, from: JSONEncoder().encode(actions))
        #expect(decodedActions == actions)
    }

    struct TimedInput: Codable, Equatable {
        var input: TaskInput
        var at: Date
    }
}
