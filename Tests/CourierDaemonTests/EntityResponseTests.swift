import Courier
import CourierDaemon
import Foundation
import Testing

/// The response an app hears for a background download that courierd finished with ranges.
@Suite("the entity's response of a background download")
struct EntityResponseTests {
    static func response(_ status: Int, _ fields: [(String, String)]) -> IPCMessage.BackgroundResponse {
        IPCMessage.BackgroundResponse(
            url: "http://127.0.0.1:8080/episode.mp3",
            head: ResponseHead(
                status: status,
                httpVersion: "HTTP/2",
                fieldLines: fields.map { .init(name: $0.0, value: $0.1) }
            )
        )
    }

    static let first = response(200, [("Content-Type", "audio/mpeg"), ("ETag", "\"v1\""), ("Content-Length", "1000")])

    @Test("a 200 is what the app hears, unchanged; a 200 is remembered as it is")
    func plain() {
        #expect(EntityResponse.reported(final: Self.first, entity: nil, length: 1000) == Self.first)
        #expect(EntityResponse.remembered(from: Self.first) == Self.first)
    }

    @Test("a 206 after a restart: the app hears the first attempt's 200")
    func rangeAfterRestart() {
        let range = Self.response(
            206,
            [("Content-Range", "bytes 400-999/1000"), ("ETag", "\"v1\""), ("Content-Length", "600")]
        )
        #expect(EntityResponse.reported(final: range, entity: Self.first, length: 1000) == Self.first)
    }

    @Test("a 416 for a file already whole (killed between the last byte and the journal): the first attempt's 200")
    func satisfiedRange() {
        let refused = Self.response(416, [("Content-Type", "text/html"), ("Content-Range", "bytes */1000")])
        #expect(EntityResponse.reported(final: refused, entity: Self.first, length: 1000) == Self.first)
        // With nothing remembered: a 200 of the file's length, without the error page's type.
        let derived = EntityResponse.reported(final: refused, entity: nil, length: 1000)
        #expect(derived.status == 200)
        #expect(derived.head.fieldLines == [.init(name: "Content-Length", value: "1000")])
    }

    @Test("a 206 from the app's resume data is remembered as the 200 it stands for: total length, no range")
    func rememberedRange() {
        let range = Self.response(
            206,
            [
                ("Set-Cookie", "a=1"), ("Content-Range", "bytes 400-999/1000"), ("Set-Cookie", "b=2"),
                ("Content-Length", "600"),
            ]
        )
        let remembered = EntityResponse.remembered(from: range)
        #expect(remembered?.status == 200)
        #expect(remembered?.head.httpVersion == "HTTP/2")
        #expect(
            remembered?.head.fieldLines
                == [
                    .init(name: "Set-Cookie", value: "a=1"), .init(name: "Set-Cookie", value: "b=2"),
                    .init(name: "Content-Length", value: "1000"),
                ]
        )
        #expect(EntityResponse.remembered(from: Self.response(404, [])) == nil)
    }

    @Test("a response journaled in the earlier form (status and joined fields) still decodes")
    func legacyJournal() throws {
        let old = #"{"url":"http://127.0.0.1/x","status":200,"headers":{"ETag":"\"v1\""}}"#
        let decoded = try JSONDecoder().decode(IPCMessage.BackgroundResponse.self, from: Data(old.utf8))
        #expect(decoded.status == 200)
        #expect(decoded.head.value("ETag") == "\"v1\"")
    }
}
