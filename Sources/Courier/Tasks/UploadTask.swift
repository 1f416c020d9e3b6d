package import Foundation

/// A data task that sends a body from `Data` or from a file; the response body arrives like a data task's.
///
/// An upload offers the server resumption (the IETF draft "Resumable Uploads for HTTP", as URLSession since iOS 17):
/// when the server answers with `104 Upload Resumption Supported` and the upload is then cut off (a lost connection,
/// a timeout), the task asks the server how much it has and sends only the rest, without telling its delegate; the
/// delegate hears the final response of the whole upload.
///
/// `@unchecked Sendable` for the reason given on ``SessionTask``.
public final class UploadTask: DataTask, @unchecked Sendable {
    /// The upload's resource, once the server offered resumption (its `104`'s `Location`); courierd journals it.
    package var resumableUploadResource: URL? {
        storage.withLock { $0.uploadResumption?.url }
    }

    /// An earlier attempt began this upload at `resource` (courierd's journal): the task first asks the server for its
    /// offset there, and starts over if it has nothing. Call before `resume()`.
    package func resumeUpload(at resource: URL) {
        storage.withLock { machine in
            var resumption = UploadResumption(url: resource)
            resumption.probesFirst = true
            machine.uploadResumption = resumption
        }
    }
}
