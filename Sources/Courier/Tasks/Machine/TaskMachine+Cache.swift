import Foundation

/// The URL cache (`docs/task-machine.md`, "The URL cache"): a lookup before the first hop, a stored response served
/// with no transfer, a revalidation whose 304 serves the stored body, and a response stored once its body is
/// complete. The rules themselves are ``HTTPCacheRules``.
extension TaskMachine {
    /// The first hop of a task: looked up in the cache first when the task uses one.
    mutating func beginFirstHop(resumeOffset: Int64, at now: Date, into actions: inout TaskActions) {
        if role.kind == .upload, let resumption = uploadResumption, resumption.probesFirst {
            probeFirst(resumption, at: now, into: &actions)
            return
        }
        if let mode = role.cacheMode, resumeOffset == 0, let request = currentRequest,
            HTTPCacheRules.looksUp(request, mode: mode)
        {
            actions.append(.lookUpCache(request))
            return
        }
        submitHop(currentRequest, resumeOffset: resumeOffset, authentication: .none, at: now, into: &actions)
    }

    /// The lookup's answer: serve, revalidate, load, or fail when the policy forbids loading.
    mutating func cacheLookedUp(_ entry: CacheEntry?, at now: Date, into actions: inout TaskActions) {
        guard phase == .running, hop == 0, let mode = role.cacheMode, let request = currentRequest else {
            return
        }
        switch HTTPCacheRules.decision(for: request, entry: entry, mode: mode, at: now) {
        case .load:
            submitHop(request, resumeOffset: 0, authentication: .none, at: now, into: &actions)
        case .revalidate(let entry, let conditions):
            revalidating = entry
            submitHop(request, resumeOffset: 0, authentication: .none, conditions: conditions, at: now, into: &actions)
        case .serve(let entry):
            serve(entry, for: request, at: now, into: &actions)
        case .unavailable:
            let error = CourierError(
                .resourceUnavailable,
                "no stored response, and the cache policy does not allow loading",
                failingURL: request.url
            )
            complete(.failure(error), into: &actions)
        }
    }

    /// Answers the request from `entry`: one exchange with no transfer, the response (asked about, for a data
    /// delegate), the body, the end.
    private mutating func serve(
        _ entry: CacheEntry, for request: TaskRequest, at now: Date, into actions: inout TaskActions
    ) {
        guard !cancelRequested else {
            complete(.failure(CourierError(.cancelled, "cancelled", failingURL: request.url)), into: &actions)
            return
        }
        hop += 1
        var record = HopRecord(request: request, start: now)
        record.response = entry.response
        record.servedFromCache = true
        hops.append(record)
        servedEntry = entry
        finalResponse = entry.response
        expectedToReceive = Int64(entry.body.count)
        actions.append(.deliver(.response(entry.response)))
        if role.asksDisposition {
            awaiting = .disposition
            actions.append(.ask(.disposition(hop: hop, response: entry.response)))
            return
        }
        deliverServedBody(into: &actions)
        complete(.success, into: &actions)
    }

    /// Whether the current exchange was answered from the cache (no transfer to decide on or wait for).
    var currentHopServedFromCache: Bool {
        hops.last?.servedFromCache == true
    }

    /// The disposition of a response served from the cache: the body goes out, the task ends cancelled, or a
    /// download task takes the body (the shell writes it to `staging`).
    mutating func servedDispositionAnswered(_ answer: DispositionAnswer, into actions: inout TaskActions) {
        switch answer {
        case .allow:
            deliverServedBody(into: &actions)
            complete(.success, into: &actions)
        case .cancel:
            cancelRequested = true
            complete(.failure(CourierError(.cancelled, "cancelled", failingURL: currentURL)), into: &actions)
        case .becomeDownload(let staging):
            enter(.completed)
            handedOver = true
            actions.append(.becomeDownload(transfer: 0, staging: staging))
        }
    }

    /// The body of ``servedEntry``, to the completion handler's collection or the delegate.
    mutating func deliverServedBody(into actions: inout TaskActions) {
        guard let body = servedEntry?.body, !body.isEmpty else {
            return
        }
        received = Int64(body.count)
        if role.collectsBody {
            bodyChunks.append(body)
        } else {
            actions.append(.deliver(.data(body)))
        }
    }

    /// A response arrived for the current hop: a 304 to a revalidation becomes the stored response with its
    /// fields refreshed (stored again at the end); a storable response starts being kept; a successful unsafe request
    /// invalidates its URL. Returns the response the task goes on with.
    mutating func cacheResponse(
        _ response: TaskResponse,
        at now: Date,
        into actions: inout TaskActions
    ) -> TaskResponse {
        guard role.cacheMode != nil, let request = hops.last?.request, let start = hops.last?.start else {
            return response
        }
        let head = response.head
        cacheCandidate = nil
        if let entry = revalidating {
            revalidating = nil
            if head.status == 304 {
                let head = HTTPCacheRules.refreshed(entry.response.head, with: head)
                let refreshed = CacheEntry(
                    response: TaskResponse(url: response.url, head: head),
                    body: entry.body,
                    requestDate: start,
                    responseDate: now,
                    varyingFields: entry.varyingFields
                )
                servedEntry = refreshed
                return refreshed.response
            }
        }
        if HTTPCacheRules.invalidates(method: request.method, status: head.status) {
            actions.append(.invalidateCache(response.url))
        } else if HTTPCacheRules.mayStore(head, for: request) {
            cacheCandidate = CacheCandidate(
                response: response,
                requestDate: start,
                responseDate: now,
                varyingFields: HTTPCacheRules.varyingFields(of: head, for: request)
            )
        }
        return response
    }

    /// Body bytes of a response being kept for the cache; past the entry limit it is given up.
    mutating func keepForCache(_ data: Data) {
        guard var candidate = cacheCandidate else {
            return
        }
        candidate.length += data.count
        guard candidate.length <= cacheEntryLimit else {
            cacheCandidate = nil
            return
        }
        if !role.collectsBody {
            candidate.chunks.append(data)
        }
        cacheCandidate = candidate
    }

    /// The transfer succeeded: the kept response is stored, or a revalidated entry's body goes out and the entry is
    /// stored again with its refreshed fields (after the body, as `willCacheResponse` comes after `didReceive data`).
    mutating func cacheTransferSucceeded(into actions: inout TaskActions) {
        if let candidate = cacheCandidate {
            cacheCandidate = nil
            let body = SessionTask.join(role.collectsBody ? bodyChunks : candidate.chunks)
            actions.append(
                .storeInCache(
                    CacheEntry(
                        response: candidate.response,
                        body: body,
                        requestDate: candidate.requestDate,
                        responseDate: candidate.responseDate,
                        varyingFields: candidate.varyingFields
                    )
                )
            )
        }
        if let refreshed = servedEntry {
            deliverServedBody(into: &actions)
            actions.append(.storeInCache(refreshed))
        }
    }
}
