import Courier
import CourierTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The in-process engine's disk writer on a file system that fills (docs/reliability.md): a small tmpfs (root only:
/// mounting needs it) as the session's staging and resume-data directory.
@Suite("A full disk under the in-process engine", .blockingWaits, .timeLimit(.minutes(1)))
struct DiskFullTests {
    @Test(
        "the staging disk fills: insufficientSpace with resume data, which finishes the download once there is room",
        .enabled(if: geteuid() == 0, "mounting a tmpfs needs root")
    )
    func stagingDiskFills() async throws {
        try await withServer { server in
            let directory = FileManager.default.temporaryDirectory
                .appendingPathComponent("courier-full-\(UUID().uuidString)", isDirectory: true)
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            guard mount("tmpfs", directory.path, "tmpfs", 0, "size=1m,mode=0700") == 0 else {
                Issue.record("cannot mount a tmpfs at \(directory.path): errno \(errno)")
                return
            }
            defer {
                umount2(directory.path, Int32(MNT_DETACH))
                try? FileManager.default.removeItem(at: directory)
            }
            var configuration = testConfiguration()
            configuration.temporaryDirectory = directory
            configuration.resumeDataDirectory = directory
            let session = Session(configuration: configuration)
            defer { session.invalidateAndCancel() }
            let count = 3 << 20
            let url = server.url("/bytes/\(count)")

            var failure: CourierError?
            do {
                _ = try await session.download(from: url)
            } catch {
                failure = error as? CourierError
            }
            #expect(failure?.code == .insufficientSpace, "\(String(describing: failure))")
            let resumeData = try #require(failure?.resumeData, "no resume data with \(String(describing: failure))")

            // Room returns (the tmpfs grows): the download goes on from its partial file.
            #expect(mount("tmpfs", directory.path, "tmpfs", UInt(MS_REMOUNT), "size=8m,mode=0700") == 0)
            server.removeAllRequests()
            let (file, _) = try await session.download(resumeFrom: resumeData)
            #expect(try fileContents(file) == TestServer.bytes(count: count, seed: 0))
            let range = server.requests.last?.header("Range")
            #expect(
                range.map { $0.hasPrefix("bytes=") && $0 != "bytes=0-" } == true,
                "Range: \(String(describing: range))"
            )
        }
    }
}
