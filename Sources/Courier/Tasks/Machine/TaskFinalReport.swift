import Foundation
import Tracing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What a task reports at its end, taken from its machine once, after ``TaskAction/finish(_:)``.
struct TaskFinalReport: Sendable {
    var response: TaskResponse?
    var chunks: [Data]
    var staging: URL?
    var hops: [HopRecord]
    var startDate: Date?
    var redirectCount: Int
    var bytesOnDisk: Int64
    var bodyOffset: Int64
    var resumeSource: ResumeData?
    var resumeDataHandler: (@Sendable (Data?) -> Void)?
    var originalRequest: TaskRequest?
    var currentRequest: TaskRequest?
    var expectedChecksum: Checksum?
    var fileDigest: Checksum?
    var segmentMap: [DownloadSegment]?
    var span: (any Span)?
    /// ``SessionTask/progress``, when someone asked for it.
    var progress: Progress?
    /// The task has a delegate of its own (``SessionTask/delegate``).
    var hasOwnDelegate: Bool
}

extension TaskMachine {
    /// The end report; moves the collected body and the resume-data handler out, so they are used once.
    mutating func takeFinalReport() -> TaskFinalReport {
        let report = TaskFinalReport(
            response: finalResponse,
            chunks: bodyChunks,
            staging: staging,
            hops: hops,
            startDate: startDate,
            redirectCount: redirectCount,
            bytesOnDisk: bytesOnDisk,
            bodyOffset: bodyOffset,
            resumeSource: resumeSource,
            resumeDataHandler: resumeDataHandler,
            originalRequest: originalRequest,
            currentRequest: currentRequest,
            expectedChecksum: expectedChecksum,
            fileDigest: fileDigest,
            segmentMap: segmentMap,
            span: span,
            progress: progress,
            hasOwnDelegate: ownDelegate != nil
        )
        bodyChunks = []
        resumeDataHandler = nil
        return report
    }
}
