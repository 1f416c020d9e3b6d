import Foundation
import Testing

@testable import Courier

/// Replays the committed corpus of good and hostile byte streams (`Corpus/make-corpus.py`), then mutations of good
/// frames from a fixed seed: every stream ends in messages or in a typed ``IPCError``, never in a crash.
@Suite("IPC corpus and fuzzing")
struct IPCCorpusTests {
    static let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Corpus")

    static var files: [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: corpus.path)) ?? []
        return names.filter { $0.hasSuffix(".bin") }.sorted()
    }

    /// Messages, or the first error, reading `bytes` in reads of `pieceSize`.
    static func read(_ bytes: Data, pieceSize: Int) -> (messages: [IPCMessage], error: IPCError?) {
        var decoder = IPCFrameDecoder()
        var messages: [IPCMessage] = []
        var offset = bytes.startIndex
        do throws(IPCError) {
            while offset < bytes.endIndex {
                let end = min(offset + pieceSize, bytes.endIndex)
                for frame in try decoder.feed(bytes[offset..<end]) {
                    messages.append(try IPCMessage(frame: frame))
                }
                offset = end
            }
            try decoder.finish()
            return (messages, nil)
        } catch {
            return (messages, error)
        }
    }

    static func caseName(_ error: IPCError) -> String {
        switch error {
        case .oversized: "oversized"
        case .unsupportedVersion: "unsupportedVersion"
        case .unknownType: "unknownType"
        case .malformedPayload: "malformedPayload"
        case .truncated: "truncated"
        }
    }

    @Test("the corpus is there")
    func corpusPresent() {
        #expect(Self.files.count >= 19)
        #expect(Self.files.contains { $0.hasPrefix("ok-") })
    }

    @Test("each corpus stream is read as its name says, in reads of any size", arguments: IPCCorpusTests.files)
    func replay(name: String) throws {
        let bytes = try Data(contentsOf: Self.corpus.appendingPathComponent(name))
        let expected = String(name.prefix { $0 != "-" })
        for pieceSize in [1, 7, 4096, bytes.count + 1] {
            let (messages, error) = Self.read(bytes, pieceSize: pieceSize)
            if expected == "ok" {
                #expect(error == nil, "\(name) in reads of \(pieceSize): \(error.map(String.init(describing:)) ?? "")")
                #expect(!messages.isEmpty)
            } else {
                let said = String(describing: error)
                #expect(error.map(Self.caseName) == expected, "\(name) in reads of \(pieceSize): \(said)")
            }
        }
    }

    /// A long loop of CPU work: it yields its cooperative thread every 500 streams, or it holds one of the pool's two
    /// (on two cores) for the whole loop, tens of seconds while the suite runs.
    @Test("20,000 mutated streams: messages or a typed error, never a crash")
    func mutations() async {
        var generator = SplitMix64(seed: 0xC0_0121_E4)
        let seed = [UInt8](SampleMessages.stream() + SampleMessages.stream(version: IPCFrame.recordVersion))
        var outcomes: [String: Int] = [:]
        for round in 0..<20_000 {
            if round % 500 == 0 {
                await Task.yield()
            }
            var bytes = seed
            for _ in 0..<(1 + Int(generator.next() % 4)) {
                let position = Int(generator.next() % UInt64(bytes.count))
                switch generator.next() % 4 {
                case 0:
                    bytes[position] = UInt8(truncatingIfNeeded: generator.next())
                case 1:
                    bytes.removeSubrange(position..<min(bytes.count, position + Int(generator.next() % 16) + 1))
                case 2:
                    bytes.insert(UInt8(truncatingIfNeeded: generator.next()), at: position)
                default:
                    bytes = Array(bytes[..<position])
                }
                if bytes.isEmpty {
                    bytes = [0]
                }
            }
            let (_, error) = Self.read(Data(bytes), pieceSize: 1 + Int(generator.next() % 64))
            outcomes[error.map(Self.caseName) ?? "ok", default: 0] += 1
        }
        // Mutations hit every kind of refusal (and some come through as other valid messages).
        #expect(outcomes.values.reduce(0, +) == 20_000)
        for kind in ["malformedPayload", "truncated", "unknownType", "unsupportedVersion", "oversized"] {
            #expect(outcomes[kind, default: 0] > 0, "no mutation produced \(kind): \(outcomes)")
        }
    }
}

/// A small deterministic generator, so that a failing mutation can be replayed.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
