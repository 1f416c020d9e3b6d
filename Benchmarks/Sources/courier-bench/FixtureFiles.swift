import BenchmarkSupport
import Foundation

/// Writes the fixture files once (pseudo-random bytes, so that nothing on the path can compress them) and keeps
/// them between runs when their size is already right.
enum FixtureFiles {
    /// Writes `fixtures` that are not in `folder` yet: only what the selected workloads read (a run without W3
    /// never writes the 1 GiB file), and always the 1 KiB file the start RSS is measured with.
    static func prepare(_ fixtures: [Fixture], in folder: URL, log: (String) -> Void) throws {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        var generator = SplitMix64(seed: 0xC0_0121E5)
        // One random MiB, repeated: enough entropy that no layer can compress it, cheap to write 1 GiB of.
        var block = [UInt8](repeating: 0, count: 1 << 20)
        for index in stride(from: 0, to: block.count, by: 8) {
            withUnsafeBytes(of: generator.next()) { word in
                for offset in 0..<8 { block[index + offset] = word[offset] }
            }
        }
        for fixture in Fixture.all where fixtures.contains(fixture) || fixture == Workload.w1.fixture {
            let path = folder.appendingPathComponent(fixture.fileName).path
            if let size = (try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber,
                size.intValue == fixture.size
            {
                continue
            }
            log("writing \(fixture.fileName) (\(fixture.size) bytes)")
            guard FileManager.default.createFile(atPath: path, contents: nil),
                let handle = FileHandle(forWritingAtPath: path)
            else {
                throw HarnessError("cannot create \(path)")
            }
            var remaining = fixture.size
            while remaining > 0 {
                let chunk = min(remaining, block.count)
                try handle.write(contentsOf: block[0..<chunk])
                remaining -= chunk
            }
            try handle.close()
        }
    }
}

extension FixtureFiles {
    /// Reads `fixture` once, untimed, so that the run after it finds the whole file in the page cache. This VM
    /// drops page cache it has not touched lately (its buffers and cache stay near 1.4 GiB with 22 GiB free), and
    /// nginx then reads the fixture from disk inside a client's timed run: one 1 GiB download (W3) took 10.5 s
    /// instead of 0.8 s as the first run of a harness run, with 2.6 s of CPU.
    static func warm(_ fixture: Fixture, in folder: URL) throws {
        let path = folder.appendingPathComponent(fixture.fileName).path
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw HarnessError("cannot read \(path)")
        }
        defer { try? handle.close() }
        while let chunk = try handle.read(upToCount: 8 << 20), !chunk.isEmpty {}
    }
}

/// A small deterministic generator for the fixture bytes.
struct SplitMix64 {
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
