/// A file the harness generates once and nginx serves (or the clients upload).
public struct Fixture: Sendable, Hashable, Codable {
    public let fileName: String
    public let size: Int

    public static let small = Fixture(fileName: "1k.bin", size: 1 << 10)
    /// What W7's slow responses send (``Workload/bytesPerSecond``).
    public static let slow = Fixture(fileName: "8k.bin", size: 8 << 10)
    public static let upload = Fixture(fileName: "1m.bin", size: 1 << 20)
    public static let medium = Fixture(fileName: "8m.bin", size: 8 << 20)
    public static let huge = Fixture(fileName: "1g.bin", size: 1 << 30)

    public static let all: [Fixture] = [small, slow, upload, medium, huge]
}
