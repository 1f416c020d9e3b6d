import CSupport
import CourierTestSupport
import Foundation
import Testing

/// A held RESPONSE is answered before the transfer ends, whatever its body: the end of a response with no body to
/// pause on (empty, chunked-empty, HEAD, 204, 304) waits for the decision like a body does (docs/response-path.md).
@Suite("C engine: held responses", .blockingWaits)
struct HeldResponseTests {
    /// Every response shape with no body bytes, and the flag that makes the engine hold it.
    static let bodiless: [(path: String, method: String, flags: UInt32, status: Int32)] = [
        ("/redirect-to?url=/bytes/10&body=empty", "GET", UInt32(CR_FLAG_HOLD_REDIRECT_AND_AUTH), 302),
        ("/redirect-to?url=/bytes/10&body=chunked-empty", "GET", UInt32(CR_FLAG_HOLD_REDIRECT_AND_AUTH), 302),
        ("/redirect-to?url=/bytes/10", "HEAD", UInt32(CR_FLAG_HOLD_REDIRECT_AND_AUTH), 302),
        ("/basic-auth/u/p?body=empty", "GET", UInt32(CR_FLAG_HOLD_REDIRECT_AND_AUTH), 401),
        ("/status/204", "GET", UInt32(CR_FLAG_ASK_RESPONSE), 204),
        ("/status/304", "GET", UInt32(CR_FLAG_ASK_RESPONSE), 304),
        ("/bytes/0", "GET", UInt32(CR_FLAG_ASK_RESPONSE), 200),
        ("/bytes/100", "HEAD", UInt32(CR_FLAG_ASK_RESPONSE), 200),
    ]

    @Test("a bodiless held response does not complete before the decision; allow then completes it")
    func waitsForDecision() async throws {
        try await withEngine { engine, server in
            for shape in Self.bodiless {
                let url = server.url(shape.path).absoluteString
                let (id, _) = engine.submit(url, method: shape.method, flags: shape.flags)
                try await engine.wait(for: id) { $0.responseCount == 1 || $0.completed }
                #expect(engine.record(id).held, "\(shape.method) \(shape.path)")
                #expect(engine.record(id).status == shape.status, "\(shape.method) \(shape.path)")
                // Long enough for the whole exchange to be over on loopback many times.
                try await Task.sleep(for: .milliseconds(150))
                #expect(!engine.record(id).completed, "\(shape.method) \(shape.path): completed while held")
                engine.decide(id, CR_DECIDE_ALLOW)
                try await engine.waitForCompletion([id], timeout: .seconds(10))
                let record = engine.record(id)
                #expect(record.error == CR_OK, "\(shape.method) \(shape.path)")
                #expect(record.eventsWhileHeld == 0, "\(shape.method) \(shape.path)")
                #expect(record.body.isEmpty)
            }
        }
    }

    @Test("a bodiless held response ends cancelled by a cancel decision or by cancel, exactly once")
    func cancelWhileDeciding() async throws {
        try await withEngine { engine, server in
            let url = server.url("/redirect-to?url=/bytes/10&body=empty").absoluteString
            for viaDecision in [true, false] {
                let (id, _) = engine.submit(url, flags: UInt32(CR_FLAG_HOLD_REDIRECT_AND_AUTH))
                try await engine.wait(for: id) { $0.responseCount == 1 }
                try await Task.sleep(for: .milliseconds(50))
                if viaDecision {
                    engine.decide(id, CR_DECIDE_CANCEL)
                } else {
                    engine.cancel(id)
                }
                // A second command for the same transfer finds it gone and does nothing.
                engine.cancel(id)
                try await engine.waitForCompletion([id], timeout: .seconds(10))
                try await Task.sleep(for: .milliseconds(50))
                let record = engine.record(id)
                #expect(record.error == CR_ERR_CANCELLED)
                #expect(record.eventsAfterCompletion == 0)
            }
        }
    }

    @Test("to-file on a bodiless held response completes with an empty file and closes the descriptor")
    func toFileWhileDeciding() async throws {
        try await withEngine { engine, server in
            let file = TemporaryFile()
            defer { file.remove() }
            let (id, _) = engine.submit(server.url("/bytes/0").absoluteString, flags: UInt32(CR_FLAG_ASK_RESPONSE))
            try await engine.wait(for: id) { $0.responseCount == 1 }
            engine.decide(id, CR_DECIDE_TO_FILE, fd: file.openForWriting())
            try await engine.waitForCompletion([id], timeout: .seconds(10))
            #expect(engine.record(id).error == CR_OK)
            #expect(engine.record(id).bytesOnDisk == 0)
            #expect(file.contents().isEmpty)
        }
    }

    @Test("destroying the engine with a response held and decided by nobody leaks no loop")
    func destroyWhileDeciding() async throws {
        try await withEngine { engine, server in
            let (id, _) = engine.submit(
                server.url("/redirect-to?url=/bytes/10&body=empty").absoluteString,
                flags: UInt32(CR_FLAG_HOLD_REDIRECT_AND_AUTH)
            )
            try await engine.wait(for: id) { $0.responseCount == 1 }
            try await Task.sleep(for: .milliseconds(50))
            engine.destroy()
            #expect(cr_leaked_loop_count() == 0)
        }
    }
}
