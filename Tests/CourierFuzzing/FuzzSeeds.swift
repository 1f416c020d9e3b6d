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
        case .engineResponse: Self.responseSeeds
        }
    }

    /// Real responses' shapes: lengths, chunked framing with trailers, gzip and deflate bodies, interim responses,
    /// redirects, challenges, a close-delimited body, a body where none may be.
    private static var responseSeeds: [Data] {
        let gzip = Data(hex: "1f8b0800000000000203cb48cdc9c9d751c840a2b800e7426e5214000000")
        let deflate = Data(hex: "789ccb48cdc9c9d751c840a2b8004b0706df")
        let text: [String] = [
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\nETag: \"v1\"\r\n\r\nhello",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\n"
                + "X-Trailer: 1\r\n\r\n",
            "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n"
                + "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
            "HTTP/1.1 301 Moved Permanently\r\nLocation: http://127.0.0.1/elsewhere\r\nContent-Length: 0\r\n\r\n",
            "HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Digest realm=\"r\", nonce=\"n\", qop=\"auth\"\r\n"
                + "Content-Length: 0\r\n\r\n",
            "HTTP/1.0 200 OK\r\nContent-Type: application/octet-stream\r\n\r\nuntil the connection closes",
            "HTTP/1.1 204 No Content\r\nContent-Length: 4\r\n\r\nbody",
            "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-4/10\r\nContent-Length: 5\r\n\r\nhello",
        ]
        var seeds = text.map { Data($0.utf8) }
        for (coding, body) in [("gzip", gzip), ("deflate", deflate)] {
            let head = "HTTP/1.1 200 OK\r\nContent-Encoding: \(coding)\r\nContent-Length: \(body.count)\r\n\r\n"
            seeds.append(Data(head.utf8) + body)
        }
        let chunkedGzip = "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n"
            + String(gzip.count, radix: 16) + "\r\n"
        seeds.append(Data(chunkedGzip.utf8) + gzip + Data("\r\n0\r\n\r\n".utf8))
        return seeds
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
        // Each in both versions: JSON payloads and record-format ones.
        return [IPCFrame.jsonVersion, IPCFrame.recordVersion].flatMap { version in
            messages.compactMap { try? $0.frame(version: version).encoded }
        }
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

extension Data {
    /// Bytes written as lower-case hex digits in pairs (seeds only: malformed text stops at the first bad pair).
    fileprivate init(hex: String) {
        var bytes: [UInt8] = []
        var digits = hex.utf8.makeIterator()
        while let high = digits.next(), let low = digits.next(),
            let byte = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16)
        {
            bytes.append(byte)
        }
        self.init(bytes)
    }
}
