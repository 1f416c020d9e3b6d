import Foundation

extension TaskMachine {
    /// One backend event of hop `eventHop`.
    mutating func handle(_ event: TransferEvent, hop eventHop: Int, at now: Date, into actions: inout TaskActions) {
        if handedOver {
            // Routed here before the registry named the download task: it goes on to the download task.
            actions.append(.forward(hop: eventHop, event))
            return
        }
        guard eventHop == hop, phase == .running, !retiredHops.contains(eventHop) else {
            // A retired hop's (or a late) event: only its COMPLETE matters, for the metrics and the end.
            if case .complete(let completion) = event.payload {
                retiredHopCompleted(eventHop, completion: completion, into: &actions)
            }
            return
        }
        adopt(transfer: event.transfer, hop: eventHop, into: &actions)
        switch event.payload {
        case .data(let data):
            received += Int64(data.count)
        case .progress, .response, .complete:
            received = max(received, event.progress.received)
        case .resumed(let offset, _):
            // The count starts again where the backend resumed (0 for a changed entity).
            received = offset
            reportedReceived = offset
        case .relocated, .downloaded, .delayedStart, .segments, .informational:
            break
        }
        if event.progress.expectedToReceive >= 0 {
            expectedToReceive = event.progress.expectedToReceive
        }
        let sendOffset = role.kind == .upload ? uploadResumption?.sendOffset ?? 0 : 0
        sent = max(sent, sendOffset + event.progress.sent)
        if event.progress.expectedToSend >= 0 {
            expectedToSend = sendOffset + event.progress.expectedToSend
        }
        switch event.payload {
        case .response(let held, let resumeOffset, let head):
            receivedResponse(head, held: held, resumeOffset: resumeOffset, at: now, into: &actions)
        case .data(let data):
            if role.cacheMode != nil {
                keepForCache(data)
            }
            if role.collectsBody {
                bodyChunks.append(data)
            } else {
                actions.append(.deliver(.data(data)))
                paceDelivery(of: data.count, into: &actions)
            }
        case .progress:
            reportProgress(into: &actions)
        case .resumed(let offset, let expectedTotal):
            backendResumed = true
            actions.append(.deliver(.resumed(offset: offset, expectedTotal: expectedTotal)))
        case .relocated(let url):
            if let target = URL(string: url) {
                currentRequest?.setURL(target)
            }
        case .downloaded:
            // The daemon backend put the file in the task's sink before handing this on.
            break
        case .segments(let segments):
            segmentMap = segments
        case .informational(let head):
            uploadOffered(head)
            if let url = currentURL {
                actions.append(.deliver(.informational(TaskResponse(url: url, head: head))))
            }
        case .delayedStart:
            guard awaiting == nil, let request = currentRequest else {
                return
            }
            awaiting = .delayedStart
            actions.append(.ask(.delayedStart(hop: hop, request: request)))
        case .complete(let completion):
            reportProgress(into: &actions)
            transferCompleted(completion, at: now, into: &actions)
        }
    }

    // MARK: Progress

    /// Coalesced progress: at most one report of each kind per PROGRESS or COMPLETE event.
    private mutating func reportProgress(into actions: inout TaskActions) {
        let sentDelta = sent - reportedSent
        let receivedDelta = received - reportedReceived
        reportedSent = sent
        reportedReceived = received
        if sentDelta > 0 || receivedDelta > 0 {
            TransferCounter.add(max(0, sentDelta) + max(0, receivedDelta))
        }
        if sentDelta > 0 {
            actions.append(.deliver(.sentBodyData(delta: sentDelta, total: sent, expected: expectedToSend)))
        }
        if receivedDelta > 0 && role.kind == .download {
            let expected = expectedToReceive >= 0 ? bodyOffset + expectedToReceive : SessionTask.transferSizeUnknown
            actions.append(
                .deliver(.wroteData(delta: receivedDelta, total: bodyOffset + received, expected: expected))
            )
        }
    }

    // MARK: Completion

    private mutating func transferCompleted(
        _ completion: TransferCompletion,
        at now: Date,
        into actions: inout TaskActions
    ) {
        recordMetrics(completion.metrics, hop: hop)
        transfer = 0
        bytesOnDisk = completion.bytesOnDisk
        if let digest = completion.digest {
            fileDigest = digest
        }
        if let report = completion.peerTrust, forcedOutcome == nil, !cancelRequested, let url = currentURL {
            // The hop stopped before its request for the delegate to judge its server; it is submitted again (as the
            // same hop) once the session decided.
            awaiting = .serverTrust
            actions.append(.ask(.serverTrust(hop: hop, url: url, report)))
            return
        }
        if role.waitsForConnectivity, forcedOutcome == nil, !cancelRequested, finalResponse == nil,
            let error = completion.error, Self.mayBeMissingNetwork(error)
        {
            // Nothing arrived from the server: the hop may have found no network. The shell looks.
            connectivityFailure = error
            actions.append(.checkConnectivity(hop: hop, url: currentURL, deadline: resourceDeadline))
            return
        }
        if role.kind == .upload, resumeUpload(after: completion, at: now, into: &actions) {
            return
        }
        let url = currentURL
        let outcome: TaskOutcome
        if let forcedOutcome {
            outcome = forcedOutcome
        } else if var error = completion.error {
            if completion.wasCancelled && cancelRequested {
                // The backend's resume data stays (courierd's, for `cancel(byProducingResumeData:)` in a background
                // session); the in-process engine's cancellations carry none.
                let resumeData = error.resumeData
                error = CourierError(.cancelled, "cancelled")
                error.resumeData = resumeData
            } else if error.code == .timedOut, let resourceDeadline, now >= resourceDeadline {
                error.message = "the resource timeout expired"
            }
            error.failingURL = url
            outcome = .failure(error)
        } else {
            outcome = .success
            if role.cacheMode != nil {
                cacheTransferSucceeded(into: &actions)
            }
        }
        complete(outcome, into: &actions)
    }

    private mutating func retiredHopCompleted(
        _ retired: Int,
        completion: TransferCompletion,
        into actions: inout TaskActions
    ) {
        guard retiredHops.remove(retired) != nil else {
            return
        }
        recordMetrics(completion.metrics, hop: retired)
        guard retiredHops.isEmpty, let pendingOutcome else {
            return
        }
        self.pendingOutcome = nil
        finish(pendingOutcome, into: &actions)
    }

    private mutating func recordMetrics(_ metrics: TransferMetrics, hop number: Int) {
        if number >= 1 && number <= hops.count {
            hops[number - 1].metrics = metrics
        }
    }

    /// Ends the task with `outcome` once every retired hop reported its COMPLETE (so no backend write to the
    /// staging file can still be pending and every hop's metrics are in).
    mutating func complete(_ outcome: TaskOutcome, into actions: inout TaskActions) {
        guard phase != .completed else {
            return
        }
        if retiredHops.isEmpty {
            finish(outcome, into: &actions)
        } else {
            enter(.finishing)
            pendingOutcome = outcome
        }
    }

    /// Reports the end: exactly once.
    mutating func finish(_ outcome: TaskOutcome, into actions: inout TaskActions) {
        guard phase != .completed else {
            return
        }
        enter(.completed)
        awaiting = nil
        actions.append(.finish(outcome))
    }

    // MARK: Server trust

    /// The answer to a server-trust challenge of the current hop, which ended before its request.
    mutating func serverTrustAnswered(
        _ answer: ServerTrustAnswer,
        hop number: Int,
        at now: Date,
        into actions: inout TaskActions
    ) {
        guard awaitedAnswer(hop: number) == .serverTrust, transfer == 0 else {
            return
        }
        awaiting = nil
        switch answer {
        case .proceed:
            submitHop(
                currentRequest,
                resumeOffset: requestedResumeOffset,
                authentication: authentication,
                conditions: hopConditions,
                again: true,
                at: now,
                into: &actions
            )
        case .refuse(var error):
            error.failingURL = currentURL
            complete(.failure(error), into: &actions)
        case .cancel:
            cancelRequested = true
            let error = CourierError(.cancelled, "the server trust challenge was cancelled", failingURL: currentURL)
            complete(.failure(error), into: &actions)
        }
    }

    // MARK: Waiting for connectivity

    /// A failure that no network at all explains: no route (`notConnectedToInternet`, `EHOSTUNREACH`), or a name
    /// that could not be resolved (which is the network's absence only when the shell finds no route).
    static func mayBeMissingNetwork(_ error: CourierError) -> Bool {
        switch error.code {
        case .notConnectedToInternet, .cannotFindHost: true
        case .cannotConnectToHost: error.osError == EHOSTUNREACH
        default: false
        }
    }

    /// What the shell found after a hop failed for a possible lack of network.
    mutating func connectivity(
        _ finding: ConnectivityFinding,
        hop number: Int,
        at now: Date,
        into actions: inout TaskActions
    ) {
        guard number == hop, phase == .running, transfer == 0, let failure = connectivityFailure else {
            return
        }
        switch finding {
        case .missing:
            if !toldWaitingForConnectivity {
                toldWaitingForConnectivity = true
                actions.append(.deliver(.waitingForConnectivity))
            }
        case .available where failure.code == .cannotFindHost:
            // The network is there: the name does not resolve.
            connectivityFailure = nil
            var error = failure
            error.failingURL = currentURL
            complete(.failure(error), into: &actions)
        case .available, .returned:
            connectivityFailure = nil
            let (request, offset) = (currentRequest, requestedResumeOffset)
            submitHop(request, resumeOffset: offset, authentication: authentication, at: now, into: &actions)
        }
    }
}
