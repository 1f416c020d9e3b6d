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
            ? final.fileDigest : Self.digest(of: file, length: final.bytesOnDisk, expected.algorithm)
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

    /// The digest of the first `length` bytes of `file`, read now; nil when it cannot be read that far.
    private static func digest(of file: URL, length: Int64, _ algorithm: Checksum.Algorithm) -> Checksum? {
        var bytes = [UInt8](repeating: 0, count: 64)
        let kind = algorithm == .sha256 ? CR_DIGEST_SHA256 : CR_DIGEST_SHA512
        let count = file.path.withCString { cr_file_digest($0, length, kind, &bytes) }
        return count == 0 ? nil : Checksum(algorithm, digest: Data(bytes.prefix(count)))
    }
}
