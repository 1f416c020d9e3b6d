import CourierFuzzing
import Foundation
import Testing

/// Every committed fuzz input (Tests/Fuzz: the corpus libFuzzer grew, and each input that once crashed), and each
/// target's seeds, run through its target (docs/reliability.md): what was found stays fixed. libFuzzer itself runs in
/// scripts/fuzz.sh.
@Suite("fuzz corpus replay")
struct FuzzCorpusTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fuzz")

    @Test("every committed input and seed of every fuzz target runs without a crash", arguments: FuzzTarget.allCases)
    func replay(_ target: FuzzTarget) throws {
        var inputs = target.seeds
        for folder in ["Corpus", "Crashes"] {
            let directory = Self.root.appendingPathComponent(folder).appendingPathComponent(target.rawValue)
            for name in (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? [] {
                inputs.append(try Data(contentsOf: directory.appendingPathComponent(name)))
            }
        }
        #expect(!inputs.isEmpty)
        for input in inputs {
            target.run(input)
        }
    }
}
