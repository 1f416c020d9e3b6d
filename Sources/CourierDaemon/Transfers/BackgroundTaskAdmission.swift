package import Courier
package import Foundation

/// The rules a task must meet before courierd journals it (docs/background-model.md; Apple's background session
/// rules): HTTP(S) only, uploads from a file that exists (the daemon keeps a copy, so the app may delete its own),
/// no identifier reused. A refusal is the `CourierError` the app's `resume()` reports.
package enum BackgroundTaskAdmission {
    /// Checks `task` and returns it as the journal will keep it (an upload names the daemon's copy of its file).
    package static func admit(
        _ task: IPCMessage.BackgroundTask,
        uploadsDirectory: URL
    ) -> Result<IPCMessage.BackgroundTask, CourierError> {
        let request = task.request
        // The rules of every task: an absolute http(s) URL with a host.
        if let refusal = SessionTask.validate(request) {
            return .failure(refusal)
        }
        let url = request.url
        var admitted = task
        switch task.kind {
        case .download, .data:
            // A data task (beyond Apple) runs as a download to courierd's file; the app reads the body from it.
            admitted.uploadFile = nil
        case .upload:
            guard let source = task.uploadFile, source.hasPrefix("/") else {
                return .failure(BackgroundTaskRules.uploadNotFromFile(url))
            }
            let copy = uploadsDirectory.appendingPathComponent("\(UUID().uuidString).upload", isDirectory: false)
            do {
                try DurableDirectory.make(uploadsDirectory)
                try FileManager.default.copyItem(at: URL(fileURLWithPath: source), to: copy)
            } catch {
                let exists = FileManager.default.fileExists(atPath: source)
                return .failure(
                    CourierError(
                        exists ? .cannotReadFile : .fileDoesNotExist,
                        exists ? "cannot copy the upload file \(source): \(error)" : "no upload file at \(source)",
                        failingURL: url
                    )
                )
            }
            _ = DurableFile.sync(copy.path)
            DurableDirectory.sync(uploadsDirectory.path)
            admitted.uploadFile = copy.path
        }
        return .success(admitted)
    }
}
