import CSupport
import CourierConcurrency
import CourierTestSupport
import Foundation
import Testing

/// The C engine against the real test server, through its C API only.
@Suite("C engine", .blockingWaits)
struct EngineTests {
    @Test("many small GETs over two loops: every byte, exactly one completion each")
    func manySmallRequests() async throws {
        try await withEngine(loops: 2, maxHostConnections: 32) { engine, server in
            var ids: [(UInt64, Int)] = []
            for seed in 0..<600 {
                let (id, error) = engine.submit(server.url("/bytes/\(1000 + seed)?seed=\(seed)").absoluteString)
                #expect(error == CR_OK)
                ids.append((id, seed))
            }
            try await engine.waitForCompletion(ids.map(\.0))
            for (id, seed) in ids {
                let record = engine.record(id)
                #expect(record.error == CR_OK)
                #expect(record.status == 200)
                #expect(record.responseCount == 1)
                #expect(record.body == TestServer.bytes(count: 1000 + seed, seed: seed))
                #expect(record.eventsAfterCompletion == 0)
            }
            #expect(ids.contains { engine.record($0.0).reusedConnection })
            let stats = engine.stats()
            #expect(stats.completed == 600)
            #expect(stats.active == 0 && stats.queued == 0)
        }
    }

    @Test("a download goes to the file through the writer thread")
    func downloadToFile() async throws {
        try await withEngine { engine, server in
            let file = TemporaryFile()
            defer { file.remove() }
            let size = 5_000_000
            let (id, _) = engine.submit(
                server.url("/bytes/\(size)?seed=7").absoluteString, sink: CR_SINK_FILE, sinkFD: file.openForWriting())
            try await engine.waitForCompletion([id])
            let record = engine.record(id)
            #expect(record.error == CR_OK)
            #expect(record.bytesOnDisk == Int64(size))
            #expect(record.progressEvents > 0)
            #expect(file.contents() == TestServer.bytes(count: size, seed: 7))
        }
    }

    @Test("a cut body is a short-body error with what arrived on disk; a ranged resume completes it")
    func cutThenResume() async throws {
        try await withEngine { engine, server in
            let file = TemporaryFile()
            defer { file.remove() }
            let size = 1_000_000
            let expected = TestServer.bytes(count: size, seed: 3)
            let (first, _) = engine.submit(
                server.url("/bytes/\(size)?seed=3&cut=300000").absoluteString, sink: CR_SINK_FILE,
                sinkFD: file.openForWriting())
            try await engine.waitForCompletion([first])
            let cut = engine.record(first)
            #expect(cut.error == CR_ERR_SHORT_BODY)
            #expect(cut.bytesOnDisk == 300_000)
            #expect(file.contents() == expected.prefix(300_000))

            let (second, _) = engine.submit(
                server.url("/bytes/\(size)?seed=3").absoluteString, headers: ["If-Range: \"\(size)-3\""],
                sink: CR_SINK_FILE, sinkFD: file.openForWriting(), resumeOffset: 300_000)
            try await engine.waitForCompletion([second])
            let resumed = engine.record(second)
            #expect(resumed.error == CR_OK)
            #expect(resumed.status == 206)
            #expect(resumed.responseOffset == 300_000)
            #expect(resumed.bytesOnDisk == Int64(size))
            #expect(file.contents() == expected)
            #expect(server.requests.last?.header("Range") == "bytes=300000-")
        }
    }

    @Test("a server that ignores Range, or a changed entity, restarts the file from zero")
    func resumeRestartsOnFullResponse() async throws {
        try await withEngine { engine, server in
            for query in ["ignoreRange=1", "etag=changed"] {
                let file = TemporaryFile()
                defer { file.remove() }
                file.write(Data(repeating: 0xEE, count: 4000))  // foreign bytes that must not survive
                let (id, _) = engine.submit(
                    server.url("/bytes/10000?seed=5&\(query)").absoluteString, headers: ["If-Range: \"10000-5\""],
                    sink: CR_SINK_FILE, sinkFD: file.openForWriting(), resumeOffset: 4000)
                try await engine.waitForCompletion([id])
                let record = engine.record(id)
                #expect(record.error == CR_OK, "\(query)")
                #expect(record.status == 200, "\(query)")
                #expect(record.responseOffset == 0, "\(query)")
                #expect(file.contents() == TestServer.bytes(count: 10000, seed: 5), "\(query)")
            }
        }
    }

    @Test("a 206 for another range than asked is refused and the partial file is left alone")
    func wrongRangeIsRefused() async throws {
        try await withEngine { engine, server in
            let file = TemporaryFile()
            defer { file.remove() }
            let partial = TestServer.bytes(count: 10000, seed: 1).prefix(2000)
            file.write(partial)
            // The request asks for 2000- but a Range header of its own makes the server answer 5000-.
            let (id, _) = engine.submit(
                server.url("/bytes/10000?seed=1").absoluteString, headers: ["Range: bytes=5000-"],
                sink: CR_SINK_FILE, sinkFD: file.openForWriting(), resumeOffset: 2000)
            try await engine.waitForCompletion([id])
            let record = engine.record(id)
            // curl sends the request's own Range instead of its own (CURLOPT_RANGE yields to a custom header).
            #expect(server.requests.last?.header("Range") == "bytes=5000-")
            #expect(record.error == CR_ERR_BAD_RANGE)
            #expect(file.contents() == partial)
            #expect(record.bytesOnDisk == 2000)
        }
    }

    @Test("held redirects wait for a decision: allow delivers the 3xx body, cancel ends the transfer")
    func heldRedirect() async throws {
        try await withEngine { engine, server in
            let url = server.url("/redirect-to?url=/bytes/10&status=302").absoluteString
            let (held, _) = engine.submit(url, flags: UInt32(CR_FLAG_HOLD_REDIRECT_AND_AUTH))
            try await engine.wait(for: held) { $0.responseCount == 1 || $0.completed }
            var record = engine.record(held)
            #expect(record.status == 302)
            #expect(record.headers.lowercased().contains("location: /bytes/10"))
            #expect(record.held)
            try await Task.sleep(for: .milliseconds(100))
            #expect(!engine.record(held).completed)
            #expect(engine.record(held).body.isEmpty)
            engine.decide(held, CR_DECIDE_CANCEL)
            try await engine.waitForCompletion([held])
            record = engine.record(held)
            #expect(record.error == CR_ERR_CANCELLED)
            #expect(record.body.isEmpty)
            engine.heldDecision.withLock { $0 = CR_DECIDE_ALLOW }
            let (allowed, _) = engine.submit(url, flags: UInt32(CR_FLAG_HOLD_REDIRECT_AND_AUTH))
            try await engine.waitForCompletion([allowed])
            #expect(engine.record(allowed).error == CR_OK)
            #expect(engine.record(allowed).status == 302)
            #expect(engine.record(allowed).body == Data("redirecting to /bytes/10\n".utf8))
        }
    }

    @Test("pause is a real pause: no bytes flow until resume")
    func pauseAndResume() async throws {
        try await withEngine { engine, server in
            // Unpaused, the whole body takes 50 × 20 ms = 1 s. The pause is sent from the event callback at 400 bytes.
            let size = 10_000
            let (id, _) = engine.submit(server.url("/bytes/\(size)?trickle=200&interval=20").absoluteString)
            engine.pause(id, whenReceived: 400)
            try await engine.wait(for: id) { $0.lastReceived >= 400 }
            // Bytes already on their way when the pause landed may still arrive; then the count stops moving.
            var atPause = -1
            let deadline = ContinuousClock.now + .seconds(10)
            while ContinuousClock.now < deadline {
                let before = engine.record(id).body.count
                try await Task.sleep(for: .milliseconds(300))
                if engine.record(id).body.count == before {
                    atPause = before
                    break
                }
            }
            #expect(atPause >= 400 && atPause < size)
            try await Task.sleep(for: .seconds(1))
            #expect(engine.record(id).body.count == atPause)
            #expect(!engine.record(id).completed)
            engine.resume(id)
            try await engine.waitForCompletion([id])
            #expect(engine.record(id).error == CR_OK)
            #expect(engine.record(id).body == TestServer.bytes(count: size))
        }
    }

    @Test("a body arriving in small pieces is handed over in buffers of its size, not of the rest of the body")
    func slowBodyBuffersFitted() async throws {
        try await withEngine { engine, server in
            // 10,000 bytes in pieces of 200: each batch's buffer was made for what was left of the body (up to 10 KB).
            let size = 10_000
            let (id, _) = engine.submit(server.url("/bytes/\(size)?trickle=200&interval=20").absoluteString)
            try await engine.waitForCompletion([id])
            let record = engine.record(id)
            #expect(record.error == CR_OK)
            #expect(record.body == TestServer.bytes(count: size))
            #expect(record.dataEvents > 10)
            // Fitted (events.c, fit_data): at most the 4 KiB a batch may keep, and the allocator's rounding.
            #expect(record.largestDataSlack <= 4096 + 32)
        }
    }

    @Test("idle timeout fires on a stalled body; cancel ends a running transfer once")
    func idleTimeoutAndCancel() async throws {
        try await withEngine { engine, server in
            let (stalled, _) = engine.submit(server.url("/bytes/1000?stall=5000").absoluteString, idleTimeoutMs: 300)
            // A stall far longer than any scheduling delay, so only the cancel can end it.
            let (cancelled, _) = engine.submit(server.url("/bytes/1000?stall=60000").absoluteString)
            try await engine.wait(for: cancelled) { $0.responseCount == 1 }
            engine.cancel(cancelled)
            engine.cancel(cancelled)
            try await engine.waitForCompletion([stalled, cancelled], timeout: .seconds(30))
            #expect(engine.record(stalled).error == CR_ERR_TIMED_OUT)
            #expect(engine.record(cancelled).error == CR_ERR_CANCELLED)
            #expect(engine.record(cancelled).eventsAfterCompletion == 0)
        }
    }

    @Test("uploads from memory and from a file arrive whole")
    func uploads() async throws {
        try await withEngine { engine, server in
            let payload = TestServer.bytes(count: 3_000_000, seed: 9)
            let file = TemporaryFile()
            defer { file.remove() }
            file.write(payload)
            let (fromMemory, _) = engine.submit(server.url("/upload").absoluteString, method: "PUT", body: payload)
            let fd = open(file.path, O_RDONLY)
            let (fromFile, _) = engine.submit(
                server.url("/upload").absoluteString, method: "POST", bodyFile: (fd, Int64(payload.count)))
            try await engine.waitForCompletion([fromMemory, fromFile])
            for id in [fromMemory, fromFile] {
                let record = engine.record(id)
                #expect(record.error == CR_OK)
                let json = try JSONSerialization.jsonObject(with: record.body) as? [String: Any]
                #expect(json?["length"] as? Int == payload.count)
            }
        }
    }

    @Test("bad URLs are refused at submit with a typed error")
    func badURLs() async throws {
        try await withEngine { engine, _ in
            #expect(engine.submit("ftp://127.0.0.1/file").error == CR_ERR_UNSUPPORTED_URL)
            #expect(engine.submit("http://[::1").error == CR_ERR_BAD_URL)
            #expect(engine.submit("").error == CR_ERR_BAD_URL)
            #expect(engine.submit("not a url").error == CR_ERR_BAD_URL)
        }
    }

    @Test("a server that sends garbage, or nobody listening, is a typed error")
    func hostileAndMissingServers() async throws {
        try await withRawServer(response: Data("SSH-2.0-OpenSSH\r\ngarbage\r\n".utf8), closeAfter: true) { raw in
            try await withEngine { engine, _ in
                let (garbage, _) = engine.submit(raw.url("/x").absoluteString)
                let (refused, _) = engine.submit("http://127.0.0.1:1/nothing")
                try await engine.waitForCompletion([garbage, refused])
                #expect(engine.record(garbage).error == CR_ERR_BAD_RESPONSE)
                #expect(engine.record(refused).error == CR_ERR_CANNOT_CONNECT)
            }
        }
    }

    @Test("TLS: HTTP/2 with the test CA; the same server without it is untrusted")
    func tlsAndHTTP2() async throws {
        try await withEngine(server: .init(tls: true), trustingServer: true) { trusting, server in
            let url = server.url("/bytes/70000?seed=2").absoluteString
            let ids = (0..<20).map { _ in trusting.submit(url, flags: UInt32(CR_FLAG_HTTP2)).id }
            try await trusting.waitForCompletion(ids)
            for id in ids {
                #expect(trusting.record(id).error == CR_OK)
                #expect(trusting.record(id).httpVersion == 20)
                #expect(trusting.record(id).body == TestServer.bytes(count: 70000, seed: 2))
            }
            // Multiplexed: one connection per loop at most, not one per request.
            #expect(server.connectionCount <= 2)
            trusting.destroy()

            try await withEngine(on: server) { plain, _ in
                let (untrusted, _) = plain.submit(url, flags: UInt32(CR_FLAG_HTTP2))
                try await plain.waitForCompletion([untrusted])
                #expect(plain.record(untrusted).error == CR_ERR_TLS_UNTRUSTED)
            }
        }
    }

    @Test("destroying the engine with transfers running and queued leaks no loop and no handle")
    func destroyWhileBusy() async throws {
        try await withEngine(loops: 2, maxActive: 4) { engine, server in
            let ids = (0..<200).map { _ in
                engine.submit(server.url("/bytes/100000?trickle=1000&interval=10").absoluteString).id
            }
            try await engine.wait(for: ids[0]) { $0.lastReceived > 0 }
            #expect(engine.stats().queued > 0)
            engine.destroy()
            #expect(cr_leaked_loop_count() == 0)
            // Every socket the engine had is closed: the server sees no connection left open.
            let deadline = ContinuousClock.now + .seconds(5)
            while server.openConnectionCount > 0 && ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(10))
            }
            #expect(server.openConnectionCount == 0)
        }
    }

    @Test("the session-wide cap bounds running transfers; the rest wait cheaply")
    func activeCap() async throws {
        try await withEngine(loops: 2, maxActive: 7) { engine, server in
            let ids = (0..<28).map { _ in engine.submit(server.url("/bytes/2000?delay=200").absoluteString).id }
            // Sampled for the whole run: never above the cap. (A sample can miss the peak when the machine is
            // busy.)
            while !ids.allSatisfy({ engine.record($0).completed }) {
                #expect(engine.stats().active <= 7)
                try await Task.sleep(for: .milliseconds(5))
            }
            // The server sees it exactly: the cap is reached and never passed (a finished transfer's connection is
            // reused by the next one admitted, so open connections follow running transfers).
            #expect(server.peakOpenConnectionCount == 7)
            try await engine.waitForCompletion(ids)
            #expect(ids.allSatisfy { engine.record($0).error == CR_OK })
        }
    }

    @Test("withEngine destroys the engine and shuts the server down when its body throws")
    func cleanupWhenBodyThrows() async throws {
        struct Failure: Error {}
        let captured = LockedValue<(EngineHarness, TestServer)?>(nil)
        await #expect(throws: Failure.self) {
            try await withEngine { engine, server in
                captured.withLock { $0 = (engine, server) }
                // A transfer still running when the body fails.
                _ = engine.submit(server.url("/bytes/1000?stall=60000").absoluteString)
                throw Failure()
            }
        }
        let (engine, server) = try #require(captured.withLock { $0 })
        #expect(engine.isDestroyed)
        // The server is gone: its port refuses connections.
        try await withEngine(on: server) { probe, _ in
            let (id, _) = probe.submit(server.url("/bytes/10").absoluteString)
            try await probe.waitForCompletion([id], timeout: .seconds(10))
            #expect(probe.record(id).error == CR_ERR_CANNOT_CONNECT)
        }
    }

    @Test("the per-host connection limit is exact across loops", arguments: [1, 3])
    func hostLimit(limit: Int32) async throws {
        try await withEngine(loops: 2, maxHostConnections: limit) { engine, server in
            let ids = (0..<24).map { _ in engine.submit(server.url("/bytes/2000?delay=30").absoluteString).id }
            try await engine.waitForCompletion(ids)
            #expect(ids.allSatisfy { engine.record($0).error == CR_OK })
            #expect(server.peakOpenConnectionCount <= Int(limit))
        }
    }
}
