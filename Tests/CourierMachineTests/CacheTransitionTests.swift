import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// RFC 9111 as ``HTTPCacheRules`` applies it, and the task machine's cache path: lookup, serve, revalidate, store.
@Suite("TaskMachine and HTTPCacheRules: the URL cache")
struct CacheTransitionTests {
    typealias D = MachineDriver

    static let date = "Sun, 06 Nov 1994 08:49:37 GMT"
    static let dateValue = HTTPDate.parse(date)!

    static func entry(
        _ fields: [String: String],
        body: String = "stored",
        received: Date = dateValue,
        vary: [String: String] = [:]
    ) -> CacheEntry {
        CacheEntry(
            response: D.response(D.url, D.head(200, fields)),
            body: Data(body.utf8),
            requestDate: received,
            responseDate: received,
            varyingFields: vary
        )
    }

    static func decision(
        _ entry: CacheEntry?,
        at seconds: TimeInterval,
        mode: HTTPCacheRules.Mode = .useProtocol,
        headers: [String: String] = [:]
    ) -> HTTPCacheRules.Decision {
        HTTPCacheRules.decision(
            for: TaskRequest(D.request(D.url, headers: headers)),
            entry: entry,
            mode: mode,
            at: dateValue.addingTimeInterval(seconds)
        )
    }

    // MARK: Rules

    @Test("HTTP dates in all three forms; Cache-Control directives with quoted commas and bad numbers")
    func parsing() {
        #expect(HTTPDate.parse("Sunday, 06-Nov-94 08:49:37 GMT") == Self.dateValue)
        #expect(HTTPDate.parse("Sun Nov  6 08:49:37 1994") == Self.dateValue)
        #expect(HTTPDate.parse("0") == nil)
        let control = CacheControl("no-cache=\"a, b\", Max-Age=30, must-revalidate, max-stale")
        #expect(control.noCache && control.mustRevalidate && control.maxAge == 30 && control.maxStale == .infinity)
        #expect(CacheControl("max-age=soon").maxAge == 0)
        #expect(!CacheControl(nil).noStore)
    }

    @Test("freshness: max-age over Expires over the Last-Modified heuristic; age counts Age and the time stored")
    func freshness() {
        let maxAge = Self.entry([
            "Date": Self.date, "Cache-Control": "max-age=60", "Expires": "Mon, 07 Nov 1994 08:49:37 GMT",
        ])
        #expect(HTTPCacheRules.freshnessLifetime(of: maxAge) == 60)
        let expires = Self.entry(["Date": Self.date, "Expires": "Sun, 06 Nov 1994 08:59:37 GMT"])
        #expect(HTTPCacheRules.freshnessLifetime(of: expires) == 600)
        #expect(HTTPCacheRules.freshnessLifetime(of: Self.entry(["Expires": "0"])) == 0)
        let heuristic = Self.entry(["Date": Self.date, "Last-Modified": "Sun, 06 Nov 1994 07:49:37 GMT"])
        #expect(HTTPCacheRules.freshnessLifetime(of: heuristic) == 360)
        let aged = Self.entry(["Date": Self.date, "Age": "100"])
        #expect(HTTPCacheRules.currentAge(of: aged, at: Self.dateValue.addingTimeInterval(5)) == 105)
        #expect(Self.decision(maxAge, at: 59) == .serve(maxAge))
        #expect(Self.decision(maxAge, at: 61) == .load)  // stale, no validator
    }

    @Test("stale with a validator revalidates; no-cache always does; request directives narrow or widen")
    func decisions() {
        let tagged = Self.entry(["Date": Self.date, "Cache-Control": "max-age=60", "ETag": "\"x\""])
        let conditions = ["If-None-Match": "\"x\""]
        #expect(Self.decision(tagged, at: 120) == .revalidate(tagged, conditions: conditions))
        #expect(
            Self.decision(tagged, at: 10, headers: ["Cache-Control": "no-cache"])
                == .revalidate(tagged, conditions: conditions))
        #expect(
            Self.decision(tagged, at: 10, headers: ["Pragma": "no-cache"])
                == .revalidate(tagged, conditions: conditions))
        #expect(
            Self.decision(tagged, at: 10, headers: ["Cache-Control": "max-age=5"])
                == .revalidate(tagged, conditions: conditions))
        #expect(
            Self.decision(tagged, at: 50, headers: ["Cache-Control": "min-fresh=20"])
                == .revalidate(tagged, conditions: conditions))
        #expect(Self.decision(tagged, at: 90, headers: ["Cache-Control": "max-stale=60"]) == .serve(tagged))
        let strict = Self.entry(["Date": Self.date, "Cache-Control": "max-age=60, must-revalidate", "ETag": "\"x\""])
        #expect(
            Self.decision(strict, at: 90, headers: ["Cache-Control": "max-stale=60"])
                == .revalidate(strict, conditions: conditions))
        let noCache = Self.entry([
            "Date": Self.date, "Cache-Control": "no-cache, max-age=600", "Last-Modified": Self.date,
        ])
        #expect(Self.decision(noCache, at: 1) == .revalidate(noCache, conditions: ["If-Modified-Since": Self.date]))
        #expect(Self.decision(nil, at: 0, headers: ["Cache-Control": "only-if-cached"]) == .unavailable)
        // Policies.
        #expect(Self.decision(tagged, at: 10, mode: .reloadRevalidating) == .revalidate(tagged, conditions: conditions))
        #expect(Self.decision(tagged, at: 9999, mode: .returnCacheElseLoad) == .serve(tagged))
        #expect(Self.decision(nil, at: 0, mode: .returnCacheElseLoad) == .load)
        #expect(Self.decision(nil, at: 0, mode: .returnCacheDontLoad) == .unavailable)
        // Vary: another value of a named field is a miss.
        let varied = Self.entry(["Date": Self.date, "Cache-Control": "max-age=60"], vary: ["accept": "a/b"])
        #expect(Self.decision(varied, at: 1, headers: ["Accept": "a/b"]) == .serve(varied))
        #expect(Self.decision(varied, at: 1, headers: ["Accept": "c/d"]) == .load)
    }

    @Test("what may be stored; a 304 refreshes the stored fields but not the body's framing")
    func storingAndRefreshing() {
        let get = TaskRequest(D.request(D.url))
        #expect(HTTPCacheRules.mayStore(D.head(200, ["ETag": "\"a\""]), for: get))
        #expect(!HTTPCacheRules.mayStore(D.head(200, [:]), for: get))
        #expect(!HTTPCacheRules.mayStore(D.head(200, ["Cache-Control": "no-store, max-age=60"]), for: get))
        #expect(!HTTPCacheRules.mayStore(D.head(206, ["Cache-Control": "max-age=60"]), for: get))
        #expect(!HTTPCacheRules.mayStore(D.head(200, ["Cache-Control": "max-age=60", "Vary": "*"]), for: get))
        let post = TaskRequest(D.request(D.url, method: "POST"))
        #expect(!HTTPCacheRules.mayStore(D.head(200, ["Cache-Control": "max-age=60"]), for: post))
        let authorized = TaskRequest(D.request(D.url, headers: ["Authorization": "Basic eA=="]))
        #expect(!HTTPCacheRules.mayStore(D.head(200, ["Cache-Control": "max-age=60"]), for: authorized))
        #expect(HTTPCacheRules.mayStore(D.head(200, ["Cache-Control": "public, max-age=60"]), for: authorized))
        #expect(HTTPCacheRules.invalidates(method: "DELETE", status: 204))
        #expect(!HTTPCacheRules.invalidates(method: "POST", status: 500))

        let stored = D.head(200, ["Content-Length": "6", "ETag": "\"a\"", "Cache-Control": "max-age=1"])
        let notModified = D.head(304, ["Content-Length": "0", "ETag": "\"a\"", "Cache-Control": "max-age=99"])
        let refreshed = HTTPCacheRules.refreshed(stored, with: notModified)
        #expect(refreshed.status == 200 && refreshed.value("Content-Length") == "6")
        #expect(refreshed.value("Cache-Control") == "max-age=99")
    }

    // MARK: The machine

    static func caching(collects: Bool = true, asks: Bool = false, _ request: URLRequest = D.request(D.url)) -> D {
        var role = TaskMachine.Role(kind: .data, collectsBody: collects, asksDisposition: asks)
        role.cacheMode = .useProtocol
        var machine = TaskMachine(role: role, request: TaskRequest(request))
        machine.cacheEntryLimit = 1000
        return D(machine)
    }

    @Test("a fresh entry is served with no submit: response, body, success; the hop is marked as from the cache")
    func servedFromCache() throws {
        var d = Self.caching()
        d.now = Self.dateValue
        #expect(d.apply(.resume) == [.start])
        #expect(
            d.apply(.started(resumeOffset: 0, staging: nil, resourceDeadline: nil)) == [
                .lookUpCache(TaskRequest(D.request(D.url)))
            ])
        let entry = Self.entry(["Date": Self.date, "Cache-Control": "max-age=60"])
        let actions = d.apply(.cacheLookedUp(entry))
        #expect(actions == [.deliver(.response(entry.response)), .finish(.success)])
        #expect(d.machine.bodyChunks == [Data("stored".utf8)])
        #expect(d.machine.hops.count == 1 && d.machine.hops[0].servedFromCache)
    }

    @Test("a revalidation sends the validators; its 304 delivers the stored body and stores the refreshed entry")
    func revalidated() throws {
        var d = Self.caching(collects: false)
        d.now = Self.dateValue.addingTimeInterval(120)
        d.apply(.resume)
        d.apply(.started(resumeOffset: 0, staging: nil, resourceDeadline: nil))
        let entry = Self.entry(["Date": Self.date, "Cache-Control": "max-age=60", "ETag": "\"x\""])
        let submitted = d.apply(.cacheLookedUp(entry))
        guard case .submit(let plan)? = submitted.first else {
            Issue.record("no submit: \(submitted)")
            return
        }
        #expect(plan.conditions == ["If-None-Match": "\"x\""])
        d.apply(.submitted(hop: 1, transfer: D.transfer(1)))
        let notModified = D.head(304, ["ETag": "\"x\"", "Cache-Control": "max-age=300"])
        let responded = d.apply(
            .event(hop: 1, D.event(hop: 1, .response(held: false, resumeOffset: 0, head: notModified))))
        guard case .deliver(.response(let refreshed))? = responded.first else {
            Issue.record("no response: \(responded)")
            return
        }
        #expect(refreshed.head.status == 200 && refreshed.head.value("Cache-Control") == "max-age=300")
        let completed = d.apply(.event(hop: 1, D.event(hop: 1, .complete(TransferCompletion(error: nil)))))
        guard let stored = d.machine.servedEntry else {
            Issue.record("no served entry")
            return
        }
        #expect(stored.response == refreshed && stored.body == Data("stored".utf8))
        #expect(completed == [.deliver(.data(Data("stored".utf8))), .storeInCache(stored), .finish(.success)])
    }

    @Test("a storable response is stored whole before the end; past the entry limit it is not")
    func storedAfterBody() throws {
        for (size, stored) in [(600, true), (1200, false)] {
            var d = Self.caching(collects: false)
            d.apply(.resume)
            d.apply(.started(resumeOffset: 0, staging: nil, resourceDeadline: nil))
            d.apply(.cacheLookedUp(nil))
            d.apply(.submitted(hop: 1, transfer: D.transfer(1)))
            let head = D.head(200, ["Cache-Control": "max-age=60"])
            d.apply(.event(hop: 1, D.event(hop: 1, .response(held: false, resumeOffset: 0, head: head))))
            d.apply(.event(hop: 1, D.event(hop: 1, .data(Data(count: size / 2)))))
            d.apply(.event(hop: 1, D.event(hop: 1, .data(Data(count: size / 2)))))
            let completed = d.apply(.event(hop: 1, D.event(hop: 1, .complete(TransferCompletion(error: nil)))))
            let entries = completed.compactMap { action -> CacheEntry? in
                if case .storeInCache(let entry) = action { return entry }
                return nil
            }
            #expect(entries.map(\.body.count) == (stored ? [size] : []))
            #expect(completed.last == .finish(.success))
        }
    }

    @Test("a cancel during the lookup ends the task cancelled when the answer comes")
    func cancelledDuringLookup() {
        var d = Self.caching()
        d.apply(.resume)
        d.apply(.started(resumeOffset: 0, staging: nil, resourceDeadline: nil))
        #expect(d.apply(.cancel) == [])
        let actions = d.apply(.cacheLookedUp(Self.entry(["Cache-Control": "max-age=60"], received: d.now)))
        #expect(actions == [.finish(D.cancelled(D.url))])
    }
}
