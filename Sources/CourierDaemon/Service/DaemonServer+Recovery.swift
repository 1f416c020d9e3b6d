import Courier
import Foundation
import Logging

/// Start-up: what an earlier run of courierd left is taken up (its sessions and tasks) or removed (files nothing
/// names any more).
extension DaemonServer {
    /// Deletes the files the journal no longer names, starts a runner for every journaled session and hands it the
    /// session's tasks; then deletes what the earlier run left in the staging directory (partial files were adopted
    /// by then).
    func restoreSessions() {
        // Before any transfer starts: a download finishing meanwhile would be a file the journal does not name yet.
        sweepUnreferencedFiles()
        let leftovers = (try? FileManager.default.contentsOfDirectory(atPath: paths.staging.path)) ?? []
        do {
            for (configuration, _) in try journal.sessionConfigurations() {
                let runner = makeRunner(configuration)
                runner.restore(try journal.tasks(session: configuration.identifier))
            }
        } catch {
            logger.error("journaled sessions not restored", metadata: ["error": "\(error)"])
        }
        for name in leftovers {
            try? FileManager.default.removeItem(at: paths.staging.appendingPathComponent(name))
        }
    }

    /// Deletes what an earlier run left behind when it was killed between a journal write and a file operation: a
    /// finished download or an upload copy the journal no longer names, a partial file no checkpoint names. Partial
    /// files younger than a week are kept: resume data an app holds may name them.
    func sweepUnreferencedFiles() {
        guard let referenced = try? journal.referencedFiles() else {
            return
        }
        let weekAgo = Date().addingTimeInterval(-7 * 24 * 3600)
        var removed = 0
        for directory in [paths.downloads, paths.uploads, paths.partials] {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
            for name in names {
                let file = directory.appendingPathComponent(name)
                guard !referenced.contains(file.path) else {
                    continue
                }
                if directory == paths.partials {
                    let modified = (try? FileManager.default.attributesOfItem(atPath: file.path))?[.modificationDate]
                    guard let modified = modified as? Date, modified < weekAgo else {
                        continue
                    }
                }
                if (try? FileManager.default.removeItem(at: file)) != nil {
                    removed += 1
                }
            }
        }
        if removed > 0 {
            logger.info("removed files an earlier run left behind", metadata: ["count": "\(removed)"])
        }
    }
}
