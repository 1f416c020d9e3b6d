import Foundation

/// Resumable uploads (``UploadResumption``): the offer, the offset probe after a cut, the append of the rest.
extension TaskMachine {
    /// An informational response: a `104` with a `Location` offers resuming this upload there.
    mutating func uploadOffered(_ head: ResponseHead) {
        guard role.kind == .upload, head.status == 104, uploadResumption == nil, let base = currentURL,
            let location = head.value("Location"), let url = URL(string: location, relativeTo: base)?.absoluteURL,
            url.scheme?.lowercased() == base.scheme?.lowercased()
        else {
            return
        }
        uploadResumption = UploadResumption(url: url)
    }

    /// The exchange that was sending the body ended: when it was cut off and the server offered resumption, the task
    /// asks the server for its offset instead of failing (true: a hop was submitted, or the task ended). Also ends
    /// the probe: a success sends the rest from the offset, a failure ends the task with the cut's error.
    mutating func resumeUpload(after completion: TransferCompletion, at now: Date, into actions: inout TaskActions) -> Bool {
        guard var resumption = uploadResumption, forcedOutcome == nil, !cancelRequested else {
            return false
        }
        if case .probing(let probe) = resumption.phase, probe == hop {
            guard completion.error == nil, let offset = resumption.offset, offset >= 0,
                expectedToSend < 0 || offset <= expectedToSend
            else {
                if resumption.failure == nil {
                    // Probed first (an earlier attempt's resource) and the server has nothing: start over.
                    uploadResumption = nil
                    submitHop(originalRequest, resumeOffset: 0, authentication: authentication, at: now, into: &actions)
                    return true
                }
                complete(.failure(resumption.failure ?? completion.error ?? Self.unresumable(currentURL)), into: &actions)
                return true
            }
            let previous = sent
            resumption.phase = .appending(hop: hop + 1, offset: offset)
            uploadResumption = resumption
            let request = resumption.append(from: offset)
            submitHop(request, resumeOffset: 0, authentication: authentication, at: now, into: &actions)
            // Progress never goes back: bytes sent before the cut that the server lost count again only once the
            // append passes them.
            sent = max(previous, offset)
            reportedSent = max(reportedSent, sent)
            return true
        }
        guard finalResponse == nil, let error = completion.error, UploadResumption.resumes(after: error),
            resumption.attempts < UploadResumption.maximumAttempts
        else {
            return false
        }
        let previous = (sent, reportedSent)
        resumption.attempts += 1
        resumption.failure = error
        resumption.offset = nil
        resumption.phase = .probing(hop: hop + 1)
        uploadResumption = resumption
        submitHop(resumption.probe(), resumeOffset: 0, authentication: authentication, at: now, into: &actions)
        (sent, reportedSent) = previous
        return true
    }

    /// The probe's response: its `Upload-Offset` is kept, nothing is delivered or asked (a held one goes on). False
    /// for any other response.
    mutating func probed(_ head: ResponseHead, held: Bool, into actions: inout TaskActions) -> Bool {
        guard case .probing(let probe)? = uploadResumption?.phase, probe == hop else {
            return false
        }
        if held {
            actions.append(.decide(transfer, .allow))
        }
        if (200...299).contains(head.status),
            let offset = head.value("Upload-Offset").flatMap({ Int64($0.trimmingCharacters(in: .whitespaces)) })
        {
            uploadResumption?.offset = offset
        }
        return true
    }

    /// The first exchange of a task whose upload an earlier attempt began (``UploadResumption/probesFirst``).
    mutating func probeFirst(_ resumption: UploadResumption, at now: Date, into actions: inout TaskActions) {
        var probing = resumption
        probing.probesFirst = false
        probing.attempts += 1
        probing.phase = .probing(hop: hop + 1)
        uploadResumption = probing
        submitHop(probing.probe(), resumeOffset: 0, authentication: authentication, at: now, into: &actions)
    }

    private static func unresumable(_ url: URL?) -> CourierError {
        CourierError(.networkConnectionLost, "the upload was cut off and could not be resumed", failingURL: url)
    }
}
