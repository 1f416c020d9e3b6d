package import Courier
package import Foundation

/// How far one background transfer got, as journaled every few seconds and megabytes while it runs.
///
/// After a crash of courierd a download resumes from ``partial``. Which prefix of the partial file is trusted
/// depends on what crashed: when only the daemon died (the same ``boot``), every byte it wrote is in the page cache
/// and the file's length is exact; after a crash of the machine only the ``durableBytes``, flushed with `fsync`
/// before this checkpoint was journaled, are.
package struct TransferCheckpoint: Codable, Sendable, Equatable {
    package var received: Int64 = 0
    package var expectedToReceive: Int64 = -1
    package var sent: Int64 = 0
    package var expectedToSend: Int64 = -1
    /// The download's partial file and how to resume it; nil for uploads and for downloads that cannot resume.
    package var partial: PartialDownload?
    /// The prefix of the partial file that was on disk (`fsync`ed) when the checkpoint was journaled.
    package var durableBytes: Int64 = 0
    /// The kernel's boot identifier when the checkpoint was taken.
    package var boot: String?
    package var at: Date
    /// A download's response for the whole entity, from its first attempt that got one (``EntityResponse``): what
    /// the app hears when a later attempt ends with a 206 or a 416.
    package var entity: IPCMessage.BackgroundResponse?
    /// A resumable upload's resource (the server's `104` `Location`): the next attempt asks it for its offset and
    /// sends the rest.
    package var uploadResource: String?

    package init(
        received: Int64 = 0,
        expectedToReceive: Int64 = -1,
        sent: Int64 = 0,
        expectedToSend: Int64 = -1,
        partial: PartialDownload? = nil,
        durableBytes: Int64 = 0,
        boot: String? = BootIdentifier.current,
        at: Date = Date(),
        entity: IPCMessage.BackgroundResponse? = nil
    ) {
        self.received = received
        self.expectedToReceive = expectedToReceive
        self.sent = sent
        self.expectedToSend = expectedToSend
        self.partial = partial
        self.durableBytes = durableBytes
        self.boot = boot
        self.at = at
        self.entity = entity
    }

    /// The bytes of the partial file to resume from, given its length now.
    package func trustedPrefix(fileLength: Int64, currentBoot: String? = BootIdentifier.current) -> Int64 {
        guard partial != nil else {
            return 0
        }
        if let boot, boot == currentBoot {
            return fileLength
        }
        return min(fileLength, durableBytes)
    }
}

/// `/proc/sys/kernel/random/boot_id`: changes with every boot of the machine. `COURIER_BOOT_ID`, when set, stands
/// for it (tests start courierd on the state a power cut leaves as though the machine had booted again).
package enum BootIdentifier {
    package static let current: String? = {
        if let simulated = ProcessInfo.processInfo.environment["COURIER_BOOT_ID"], !simulated.isEmpty {
            return simulated
        }
        guard let data = FileManager.default.contents(atPath: "/proc/sys/kernel/random/boot_id") else {
            return nil
        }
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }()
}
