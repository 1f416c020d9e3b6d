import Courier
import Foundation
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// Start-up: what an earlier run of courierd left is taken up (its sessions and tasks) or removed (files nothing
/// names any more).
extension DaemonServer {
    /// Deletes the files the journal no longer names, starts a runner for every journaled session and hands it the
    /// session's tasks, starts fetching again the files a power cut damaged after their apps took them (each on its
    /// session's runner's `Session`); then deletes what the earlier run left in the staging directory (partial files
    /// were adopted by then).
    func restoreSessions() {
        // Before any transfer starts: a download finishing meanwhile would be a file the journal does not name yet.
        sweepUnreferencedFiles()
        // Listed before the repairs and the attempts start: they fetch into the staging directory too.
        let leftovers = (try? FileManager.default.contentsOfDirectory(atPath: paths.staging.path)) ?? []
        let damaged = recoverUnsyncedFiles()
        do {
            for (configuration, _) in try journal.sessionConfigurations() {
                let runner = makeRunner(configuration)
                runner.restore(try journal.tasks(session: configuration.identifier))
            }
        } catch {
            logger.error("journaled sessions not restored", metadata: ["error": "\(error)"])
        }
        if !damaged.isEmpty {
            repairs.start(damaged, staging: paths.staging) { [sessions] identifier in
                sessions.runner(identifier)?.session
            }
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

extension DaemonServer {
    /// Takes up the finished downloads an earlier run handed over before they were flushed (``UnsyncedFile``). In the
    /// same boot (courierd was killed, the machine was not), the page cache still holds their bytes: they are queued to
    /// be flushed. After another boot each is read back and checked against its digest: a whole one is queued too; a
    /// damaged or missing one whose app has not acknowledged it makes its task run again from zero (the app hears of it
    /// again, with a whole file); one the app already has is returned, to be fetched again in place (``FileRepairs``).
    func recoverUnsyncedFiles() -> [UnsyncedFile] {
        let files: [UnsyncedFile]
        do {
            files = try journal.unsyncedFiles()
        } catch {
            logger.error("unflushed downloads not read from the journal", metadata: ["error": "\(error)"])
            return []
        }
        var damagedAndHeld: [UnsyncedFile] = []
        for file in files {
            if file.boot == BootIdentifier.current || file.isIntact {
                flusher.enqueue(file.path)
                continue
            }
            let metadata: Logger.Metadata = [
                "session": "\(file.session)", "task": "\(file.task)", "file": "\(file.path)",
            ]
            if file.acknowledged {
                damagedAndHeld.append(file)
                continue
            }
            do {
                try journal.runAgain(file)
                // The damaged file goes once the journal no longer names it on disk.
                journal.sync()
                unlink(file.path)
                logger.notice(
                    "a finished download was damaged by a power cut before its app took it; it runs again",
                    metadata: metadata
                )
            } catch {
                logger.error(
                    "a damaged download could not be set to run again",
                    metadata: metadata.merging(["error": "\(error)"]) { $1 }
                )
            }
        }
        return damagedAndHeld
    }
}
