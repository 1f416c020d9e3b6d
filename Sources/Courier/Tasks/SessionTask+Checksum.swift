import CSupport
import Foundation

extension SessionTask {
    /// The error of a downloaded file whose digest is not the expected one (``DownloadTask/expectedChecksum``, else
    /// the one its response announced); nil when it matches or nothing was expected. The engine's digest is used
    /// when it made one of that algorithm; otherwise (a resumed file that was already whole) the file is read.
    /// A background session's files were checked by courierd.
    func checksumMismatch(_ final: TaskFinalReport, _ file: URL) -> CourierError? {
        guard core.configuration.identifier == nil else {
            return nil
        }
        let announced = final.response.map { Checksum.announced(by: $0.head) } ?? []
        let expected =
            final.expectedChecksum
            ?? announced.first { $0.algorithm == final.fileDigest?.algorithm } ?? announced.first
        guard let expected else {
            return nil
        }
        let actual =
            final.fileDigest?.algorithm == expected.algorithm
            ? final.fileDigest : Checksum(of: file.path, length: final.bytesOnDisk, expected.algorithm)
        guard actual != expected else {
            return nil
        }
        let source = final.expectedChecksum == nil ? "the server announced" : "expected"
        return CourierError(
            .checksumMismatch,
            "the downloaded file's \(expected.algorithm.rawValue) is \(actual?.hex ?? "unreadable"); \(source) "
                + expected.hex,
            failingURL: final.response?.url
        )
    }
}

extension Checksum {
    /// The digest of the first `length` bytes of the file at `path`, read now (by the engine's code: SHA-NI and SSE4.2
    /// where the processor has them); nil when it cannot be read that far.
    package init?(of path: String, length: Int64, _ algorithm: Algorithm) {
        var bytes = [UInt8](repeating: 0, count: 64)
        let kind =
            switch algorithm {
            case .sha256: CR_DIGEST_SHA256
            case .sha512: CR_DIGEST_SHA512
            case .crc32c: CR_DIGEST_CRC32C
            }
        let count = path.withCString { cr_file_digest($0, length, kind, &bytes) }
        guard count > 0 else {
            return nil
        }
        self.init(algorithm, digest: Data(bytes.prefix(count)))
    }
}
