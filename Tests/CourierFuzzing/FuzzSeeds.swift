import Courier
import CourierDaemon
import CourierIPC
package import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Inputs each fuzz target starts from, made from real values (encoded by the same code that writes them), so that
/// libFuzzer begins inside the formats rather than having to find them; `scripts/fuzz.sh` adds them to the corpus of
/// each run, and the test command replays them with the committed corpus.
extension FuzzTarget {
    package var seeds: [Data] {
        switch self {
        case .ipcFrames: Self.ipcSeeds
        case .pushPayload:
            [
                #"{"aps":{"content-available":1},"id":42}"#,
                "background 5\n" + #"{"aps":{"content-available":1}}"#,
                "alert 10\n" + #"{"aps":{"alert":{"title":"Hi","body":"There"},"sound":"default","badge":3}}"#,
                #"{"aps":{"alert":"plain text","content-available":1},"extra":[1,2.5,null,true,{"a":"b"}]}"#,
            ].map { Data($0.utf8) }
        case .pushRequest:
            [
                "POST /3/device/0123abcd HTTP/1.1\r\nHost: 127.0.0.1\r\napns-push-type: background\r\n"
                    + "apns-priority: 5\r\napns-id: 1-2-3\r\ncontent-length: 33",
                "GET / HTTP/1.0\r\nContent-Length: 0",
            ].map { Data($0.utf8) }
        case .resumeData:
            [
                #"""
                {"format": "courier-resume/1", "url": "http://127.0.0.1:8080/a.bin", "method": "GET",
                 "headers": {"Accept": "*/*"}, "file": "courier-1.partial", "bytesOnDisk": 1024,
                 "validator": "\"abc\"", "expectedLength": 4096}
                """#,
                #"""
                {"format": "courier-resume/1", "url": "https://example.invalid/b", "originalURL": "https://e.invalid/",
                 "method": "GET", "headers": {}, "file": "p", "bytesOnDisk": 0,
                 "validator": "Tue, 15 Nov 1994 08:12:31 GMT",
                 "segments": [{"start": 0, "end": 1048575, "done": 1000}, {"start": 1048576, "end": 2097151, "done": 0}]}
                """#,
            ].map { Data($0.utf8) }
        case .contentDisposition:
            [
                #"attachment; filename="report.pdf""#,
                "attachment; filename*=UTF-8''na%C3%AFve%20file.txt; filename=naive.txt",
                "inline; filename*=ISO-8859-1''%A3%20rates.txt",
                #"attachment; filename="a\"b.txt"; size=10"#,
            ].map { Data($0.utf8) }
        case .responseHead:
            [
                "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nETag: \"x\"\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\n\r\n",
                "HTTP/2 206\r\ncontent-range: bytes 0-9/100\r\naccept-ranges: bytes\r\n\r\n",
                "HTTP/1.0 301 Moved\r\nLocation: /x\r\n folded: value\r\n\r\n",
            ].map { Data([100]) + Data($0.utf8) }
        case .journalRecord: Self.journalSeeds
        }
    }

    private static var ipcSeeds: [Data] {
        let spec = IPCMessage.BackgroundTask(
            identifier: 7,
            kind: .download,
            request: TaskRequest(URLRequest(url: URL(string: "http://127.0.0.1:8080/bytes/10")!)),
            taskDescription: "seed"
        )
        let head = ResponseHead(status: 200, fieldLines: [.init(name: "Content-Length", value: "10")])
        let progress = TransferProgress(received: 10, expectedToReceive: 10)
        let events: [IPCMessage.SequencedEvent] = [
            .init(sequence: 1, task: 7, event: .init(.progress, progress: progress)),
            .init(
                sequence: 2,
                task: 7,
                event: .init(.response(held: false, resumeOffset: 0, head: head), progress: progress)
            ),
            .init(sequence: 3, task: 7, event: .init(.downloaded(path: "/tmp/x.download"), progress: progress)),
            .init(sequence: 4, task: 7, event: .init(.complete(TransferCompletion(error: nil)), progress: progress)),
        ]
        let messages: [IPCMessage] = [
            .hello(.init(app: "com.example.seed", pid: 42, launchCommand: ["/usr/bin/app"], inForeground: true)),
            .openSession(.init(request: 1, identifier: "com.example.seed.background")),
            .createTask(.init(request: 2, session: "com.example.seed.background", task: spec)),
            .events(.init(session: "com.example.seed.background", events: events, finished: true)),
            .acknowledge(.init(session: "com.example.seed.background", through: 4)),
            .command(
                .init(request: 3, session: "com.example.seed.background", task: 7, verb: .cancelProducingResumeData)
            ),
        ]
        return messages.compactMap { try? $0.frame().encoded }
    }

    private static var journalSeeds: [Data] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let task = IPCMessage.BackgroundTask(
            identifier: 3,
            kind: .upload,
            request: TaskRequest(URLRequest(url: URL(string: "http://127.0.0.1:1/put")!)),
            uploadFile: "/tmp/u.upload",
            resumeData: Data("{}".utf8),
            taskDescription: "seed",
            priority: 0.75
        )
        let checkpoint = TransferCheckpoint(received: 100, expectedToReceive: 1000, durableBytes: 50, boot: "b00t")
        let failure = CourierError(.timedOut, "idle", failingURL: URL(string: "http://127.0.0.1:1/"))
        let event = IPCMessage.BackgroundEvent(.complete(TransferCompletion(error: failure)), progress: .init())
        var seeds: [Data] = []
        seeds += (try? encoder.encode(task)).map { [Data([0]) + $0] } ?? []
        seeds += (try? encoder.encode(checkpoint)).map { [Data([1]) + $0] } ?? []
        seeds += (try? encoder.encode(event)).map { [Data([2]) + $0] } ?? []
        seeds +=
            (try? encoder.encode(IPCMessage.OpenSession(request: 1, identifier: "s"))).map { [Data([3]) + $0] } ?? []
        seeds += (try? encoder.encode(task.spec)).map { [Data([6]) + $0] } ?? []
        return seeds
    }
}
