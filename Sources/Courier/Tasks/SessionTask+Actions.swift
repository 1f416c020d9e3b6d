import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension SessionTask {
    /// Carries out what the machine decided, in order. Called with no lock held.
    func perform(_ actions: TaskActions, work: inout DelegateWork) {
        actions.forEach { action in
            switch copy action {
            case .start:
                start(work: &work)
            case .submit(let plan):
                submit(plan, work: &work)
            case .cancelTransfer(let transfer):
                core.runningBackend?.cancel(transfer, producingResumeData: false)
            case .cancelTransferProducingResumeData(let transfer):
                core.runningBackend?.cancel(transfer, producingResumeData: true)
            case .pauseTransfer(let transfer):
                core.runningBackend?.pause(transfer)
            case .resumeTransfer(let transfer):
                core.runningBackend?.resume(transfer)
            case .decide(let transfer, let decision):
                core.runningBackend?.decide(transfer, decision)
            case .rememberResponse(let response):
                core.remember(response.head, url: response.url)
            case .lookUpCache(let request):
                let entry = request.url.flatMap { core.configuration.urlCache?.entry(for: $0) }
                send(.cacheLookedUp(entry), work: &work)
            case .storeInCache(let entry):
                storeInCache(entry, work: &work)
            case .invalidateCache(let url):
                core.configuration.urlCache?.removeEntry(for: url)
            case .ask(let question):
                ask(question, work: &work)
            case .deliver(let delivery):
                deliver(delivery, work: &work)
            case .becomeDownload(let transfer, let staging):
                continueAsDownload(transfer: transfer, staging: staging)
            case .forward(let hop, let event):
                if let successor = core.task(forKey: registryKey), successor !== self {
                    successor.send(.event(hop: hop, event), work: &work)
                }
            case .finish(let outcome):
                finalize(outcome, work: &work)
            case .checkConnectivity(let hop, let url, let deadline):
                checkConnectivity(hop: hop, url: url, deadline: deadline, work: &work)
            }
        }
    }

    // MARK: Deliveries

    /// Hands a delivery to whoever takes it for this task's sink and delegate; the others drop it.
    private func deliver(_ delivery: TaskDelivery, work: inout DelegateWork) {
        switch delivery {
        case .response(let response):
            if case .stream(let stream) = sink {
                stream.receive(response)
            } else if case .webSocket(let connection) = sink, let task = self as? WebSocketTask {
                connection.responded(response, task: task, work: &work)
            }
        case .data(let data):
            switch sink {
            case .delegate:
                guard hasDataDelegate, let dataTask = self as? DataTask else {
                    return
                }
                work.append { session in
                    // Consumed once the delegate returns (or when there is no session left to call): the transfer
                    // is paced by what the delegate has taken (`TaskMachine.deliveryWindow`).
                    defer { self.send(.consumed(data.count)) }
                    guard let session, let delegate = self.delegate(as: (any SessionDataDelegate).self) else {
                        return
                    }
                    delegate.urlSession(session, dataTask: dataTask, didReceive: data)
                }
            case .stream(let stream):
                if stream.append(data) {
                    send(.backpressure(true), work: &work)
                }
            case .webSocket(let connection):
                if let task = self as? WebSocketTask {
                    connection.received(data, task: task, work: &work)
                }
            case .dataHandler, .inlineData, .downloadHandler, .inlineDownload, .observer:
                break
            }
        case .sentBodyData(let delta, let total, let expected):
            if case .observer(let observer, _) = sink {
                work.append { _ in observer.task(self, progressed: .sent(total: total, expected: expected)) }
                return
            }
            guard hasTaskDelegate else {
                return
            }
            work.append { session in
                guard let session, let delegate = self.taskDelegate else {
                    return
                }
                delegate.urlSession(
                    session,
                    task: self,
                    didSendBodyData: delta,
                    totalBytesSent: total,
                    totalBytesExpectedToSend: expected
                )
            }
        case .wroteData(let delta, let total, let expected):
            if case .observer(let observer, _) = sink {
                let response = storage.withLock { $0.observedResponse }
                work.append { _ in
                    observer.task(self, progressed: .received(total: total, expected: expected, response: response))
                }
                return
            }
            appendDownloadDelegateCall(to: &work) { session, delegate, task in
                delegate.urlSession(
                    session,
                    downloadTask: task,
                    didWriteData: delta,
                    totalBytesWritten: total,
                    totalBytesExpectedToWrite: expected
                )
            }
        case .resumed(let offset, let expectedTotal):
            if case .observer(let observer, _) = sink {
                let progress = TaskProgress.resumed(
                    offset: offset,
                    expectedTotal: expectedTotal,
                    response: storage.withLock { $0.observedResponse }
                )
                work.append { _ in observer.task(self, progressed: progress) }
                return
            }
            appendDownloadDelegateCall(to: &work) { session, delegate, task in
                delegate.urlSession(
                    session,
                    downloadTask: task,
                    didResumeAtOffset: offset,
                    expectedTotalBytes: expectedTotal
                )
            }
        case .waitingForConnectivity:
            guard hasTaskDelegate else {
                return
            }
            work.append { session in
                guard let session, let delegate = self.taskDelegate else {
                    return
                }
                delegate.urlSession(session, taskIsWaitingForConnectivity: self)
            }
        case .informational(let response):
            guard hasTaskDelegate, let httpResponse = response.httpResponse else {
                return
            }
            work.append { session in
                guard let session, let delegate = self.taskDelegate else {
                    return
                }
                delegate.urlSession(session, task: self, didReceiveInformationalResponse: httpResponse)
            }
        }
    }

    /// Looks for a route to `url`: `.available` now, or `.missing` and, once a route is back (or at `deadline`),
    /// `.returned`.
    private func checkConnectivity(hop: Int, url: URL?, deadline: Date?, work: inout DelegateWork) {
        if Connectivity.isAvailable(for: url) {
            send(.connectivity(hop: hop, .available), work: &work)
            return
        }
        send(.connectivity(hop: hop, .missing), work: &work)
        Connectivity.waitForRoute(to: url, until: deadline) { [weak self] in
            self?.send(.connectivity(hop: hop, .returned))
        }
    }

    /// Queues `call` for the session's download delegate, when this is a download task reporting to it.
    private func appendDownloadDelegateCall(
        to work: inout DelegateWork,
        _ call: @escaping @Sendable (Session, any SessionDownloadDelegate, DownloadTask) -> Void
    ) {
        guard case .delegate = sink, hasDownloadDelegate, let downloadTask = self as? DownloadTask else {
            return
        }
        work.append { session in
            guard let session, let delegate = self.delegate(as: (any SessionDownloadDelegate).self) else {
                return
            }
            call(session, delegate, downloadTask)
        }
    }

    // MARK: `.becomeDownload`

    /// Answers `.becomeDownload`: under this task's lock, the machine ends the data task and a ``DownloadTask`` with
    /// the successor machine takes over the registry key, so that an event this machine sees afterwards always
    /// finds the download task to forward to. (Lock order: task, then registry; nothing takes them the other way.)
    func handOverToDownload(hop: Int, staging: URL) {
        var actions = TaskActions()
        let now = Date()
        storage.withLock { machine in
            machine.apply(.dispositionAnswered(hop: hop, .becomeDownload(staging: staging)), at: now, into: &actions)
            guard machine.handedOver else {
                return
            }
            let downloadTask = DownloadTask(
                core: core,
                kind: .download,
                identifier: core.makeIdentifier(),
                registryKey: registryKey,
                request: machine.originalRequest,
                sink: .delegate,
                machine: machine.successorForDownload(staging: staging)
            )
            core.replace(key: registryKey, with: downloadTask)
        }
        var work = DelegateWork()
        perform(actions, work: &work)
        core.dispatcher.enqueue(work)
    }

    /// ``TaskAction/becomeDownload(transfer:staging:)``: tells the delegate, then moves the transfer to the file.
    private func continueAsDownload(transfer: UInt64, staging: URL) {
        guard let dataTask = self as? DataTask, let downloadTask = core.task(forKey: registryKey) as? DownloadTask
        else {
            return
        }
        // Queued before the transfer moves on, so that `didBecome` comes before the download's first event.
        var work = DelegateWork()
        work.append { session in
            guard let session, let delegate = dataTask.delegate(as: (any SessionDataDelegate).self) else {
                return
            }
            delegate.urlSession(session, dataTask: dataTask, didBecome: downloadTask)
        }
        core.dispatcher.enqueue(work)
        if transfer == 0 {
            downloadTask.writeServedBody(to: staging)
            return
        }
        if let error = core.runningBackend?.decide(transfer, .toFile(path: staging.path)) {
            let hop = downloadTask.storage.withLock { $0.hop }
            downloadTask.send(.heldFailed(hop: hop, error))
        }
    }
}

// MARK: The URL cache

extension SessionTask {
    /// ``TaskAction/storeInCache(_:)``: stores the entry, after a data delegate's `willCacheResponse` when the task
    /// reports to one (queued before the completion, which the machine emits after this action).
    fileprivate func storeInCache(_ entry: CacheEntry, work: inout DelegateWork) {
        guard let cache = core.configuration.urlCache, let proposed = URLCache.cachedResponse(for: entry) else {
            return
        }
        let url = entry.response.url
        guard case .delegate = sink, hasDataDelegate, let dataTask = self as? DataTask else {
            cache.store(proposed, for: url)
            return
        }
        work.append { session in
            guard let session, let delegate = dataTask.delegate(as: (any SessionDataDelegate).self) else {
                return
            }
            delegate.urlSession(session, dataTask: dataTask, willCacheResponse: proposed) { answer in
                if let answer {
                    cache.store(answer, for: url)
                }
            }
        }
    }
}

extension DownloadTask {
    /// A data task answered from the URL cache became this download: its stored body is the file. Written here, then
    /// reported as the (transfer-less) hop's completion, so the machine ends the download as a transfer would.
    fileprivate func writeServedBody(to staging: URL) {
        let (hop, body) = storage.withLock { ($0.hop, $0.servedEntry?.body ?? Data()) }
        var completion = TransferCompletion(error: nil, bytesOnDisk: Int64(body.count))
        do {
            try body.write(to: staging)
        } catch {
            completion = TransferCompletion(
                error: CourierError(.cannotWriteToFile, "the cached body could not be written: \(error)")
            )
        }
        let size = Int64(body.count)
        let event = TransferEvent(
            id: TransferID(task: registryKey, hop: hop),
            transfer: 0,
            progress: TransferProgress(received: size, expectedToReceive: size),
            payload: .complete(completion)
        )
        send(.event(hop: hop, event))
    }
}
