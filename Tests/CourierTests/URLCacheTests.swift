import Courier
import CourierConcurrency
import CourierTestSupport
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The session's `urlCache` against the test server (RFC 9111): fresh responses served with no request,
/// revalidation with the stored validators and a 304, the request cache policies, and what is never stored.
@Suite("URL cache", .timeLimit(.minutes(1)))
struct URLCacheTests {
    /// A configuration with a private in-memory cache (and, with `directory`, a disk one there).
    static func cached(_ directory: URL? = nil) -> SessionConfiguration {
        var configuration = testConfiguration()
        configuration.urlCache = URLCache(
            memoryCapacity: 4 << 20,
            diskCapacity: directory == nil ? 0 : 16 << 20,
            diskPath: directory?.path
        )
        return configuration
    }

    /// The requests the server saw for `path` (its path and query).
    static func requests(_ server: TestServer, _ path: String) -> [RecordedRequest] {
        server.requests.filter { $0.uri == path }
    }

    @Test("a fresh response (max-age) is served from the cache: no request, the same body, fetch type localCache")
    func freshResponseServedFromCache() async throws {
        try await withServer { server in
            let (session, delegate) = makeRecordingSession(Self.cached())
            defer { session.invalidateAndCancel() }
            let path = "/bytes/2000?seed=5&cacheControl=max-age%3D60"
            for round in 0..<3 {
                let task = session.dataTask(with: server.url(path))
                task.resume()
                #expect(try await delegate.completion(of: task) == nil)
                #expect(delegate.body(of: task) == TestServer.bytes(count: 2000, seed: 5))
                #expect((task.response as? HTTPURLResponse)?.statusCode == 200)
                let fetch = delegate.metrics(of: task).first?.transactionMetrics.last?.resourceFetchType
                #expect(fetch == (round == 0 ? .networkLoad : .localCache))
            }
            #expect(Self.requests(server, path).count == 1)
            // The async convenience and the completion handler read the same entry.
            let (data, response) = try await session.data(from: server.url(path))
            #expect(data == TestServer.bytes(count: 2000, seed: 5))
            #expect((response as? HTTPURLResponse)?.header("ETag") == "\"2000-5\"")
            #expect(Self.requests(server, path).count == 1)
            // willCacheResponse was asked once, with the whole body.
            let asked = delegate.log.events.compactMap { event -> Int? in
                if case .willCache(_, let bytes) = event { return bytes }
                return nil
            }
            #expect(asked == [2000])
        }
    }

    @Test("a stale response is revalidated with If-None-Match; the 304 serves the stored body")
    func staleResponseRevalidated() async throws {
        try await withServer { server in
            let session = Session(configuration: Self.cached())
            defer { session.invalidateAndCancel() }
            let path = "/bytes/3000?seed=6&cacheControl=no-cache"
            let (first, _) = try await session.data(from: server.url(path))
            let (second, response) = try await session.data(from: server.url(path))
            #expect(first == TestServer.bytes(count: 3000, seed: 6))
            #expect(second == first)
            // The app sees the stored 200, not the 304.
            #expect((response as? HTTPURLResponse)?.statusCode == 200)
            let requests = Self.requests(server, path)
            #expect(requests.count == 2)
            #expect(requests.first?.header("If-None-Match") == nil)
            #expect(requests.last?.header("If-None-Match") == "\"3000-6\"")
            #expect(requests.last?.header("If-Modified-Since") == "Wed, 21 Oct 2015 07:28:00 GMT")
        }
    }

    @Test("a changed entity replaces the stored one: the revalidation's 200 is delivered and stored")
    func changedEntityReplaced() async throws {
        try await withServer { server in
            let session = Session(configuration: Self.cached())
            defer { session.invalidateAndCancel() }
            // The same URL path with another ETag is another entity as far as If-None-Match goes: seed in the ETag
            // stays, but the etag= option changes what the server calls current.
            let stale = "/bytes/100?cacheControl=max-age%3D0"
            _ = try await session.data(from: server.url(stale + "&etag=one"))
            _ = try await session.data(from: server.url(stale + "&etag=one"))
            #expect(Self.requests(server, stale + "&etag=one").last?.header("If-None-Match") == "\"one\"")
        }
    }

    @Test("Last-Modified alone makes a response heuristically fresh: the second GET sends nothing")
    func heuristicFreshness() async throws {
        try await withServer { server in
            let session = Session(configuration: Self.cached())
            defer { session.invalidateAndCancel() }
            _ = try await session.data(from: server.url("/bytes/500?seed=1"))
            let (data, _) = try await session.data(from: server.url("/bytes/500?seed=1"))
            #expect(data == TestServer.bytes(count: 500, seed: 1))
            // Another query is another entry (swift-corelibs-foundation's URLCache alone would share one).
            let (other, _) = try await session.data(from: server.url("/bytes/500?seed=2"))
            #expect(other == TestServer.bytes(count: 500, seed: 2))
            #expect(Self.requests(server, "/bytes/500?seed=1").count == 1)
            #expect(Self.requests(server, "/bytes/500?seed=2").count == 1)
        }
    }

    @Test("no-store, a POST, Vary and an oversized body are not served from the cache")
    func notStoredOrNotMatching() async throws {
        try await withServer { server in
            var configuration = Self.cached()
            configuration.urlCache = URLCache(memoryCapacity: 100_000, diskCapacity: 0, diskPath: nil)
            let session = Session(configuration: configuration)
            defer { session.invalidateAndCancel() }
            func get(_ path: String, _ fields: [String: String] = [:]) async throws -> Data {
                var request = URLRequest(url: server.url(path))
                fields.forEach { request.setValue($1, forHTTPHeaderField: $0) }
                return try await session.data(for: request).0
            }
            let noStore = "/bytes/100?cacheControl=no-store"
            _ = try await get(noStore)
            _ = try await get(noStore)
            #expect(Self.requests(server, noStore).count == 2)
            // 5 % of 100,000 bytes is 5,000: a body of 6,000 is not kept.
            _ = try await get("/bytes/6000")
            _ = try await get("/bytes/6000")
            #expect(Self.requests(server, "/bytes/6000").count == 2)
            // Vary: Accept — another Accept is another variant.
            let varying = "/bytes/100?seed=3&vary=Accept&cacheControl=max-age%3D60"
            _ = try await get(varying, ["Accept": "a/b"])
            _ = try await get(varying, ["Accept": "a/b"])
            _ = try await get(varying, ["Accept": "c/d"])
            #expect(Self.requests(server, varying).count == 2)
            // A successful POST to a URL removes what is stored for it.
            let status = "/status/200?cacheControl=max-age%3D60"
            _ = try await get(status)
            _ = try await get(status)
            #expect(Self.requests(server, status).count == 1)
            var post = URLRequest(url: server.url(status))
            post.httpMethod = "POST"
            post.httpBody = Data("x".utf8)
            _ = try await session.data(for: post)
            _ = try await get(status)
            #expect(Self.requests(server, status).filter { $0.method == "GET" }.count == 2)
        }
    }

    @Test("cache policies: reload ignores the entry but stores; returnCacheDataDontLoad fails with nothing stored")
    func cachePolicies() async throws {
        try await withServer { server in
            let session = Session(configuration: Self.cached())
            defer { session.invalidateAndCancel() }
            let path = "/bytes/700?seed=9&cacheControl=max-age%3D0"
            var request = URLRequest(url: server.url(path))
            request.cachePolicy = .returnCacheDataDontLoad
            await #expect(throws: CourierError.self) { _ = try await session.data(for: request) }
            do {
                _ = try await session.data(for: request)
            } catch let error as CourierError {
                #expect(error.code == .resourceUnavailable)
            }
            #expect(Self.requests(server, path).isEmpty)
            request.cachePolicy = .reloadIgnoringLocalCacheData
            _ = try await session.data(for: request)
            _ = try await session.data(for: request)
            #expect(Self.requests(server, path).count == 2)
            // Stale (max-age=0), but returnCacheDataElseLoad and …DontLoad take it as it is.
            request.cachePolicy = .returnCacheDataElseLoad
            #expect(try await session.data(for: request).0 == TestServer.bytes(count: 700, seed: 9))
            request.cachePolicy = .returnCacheDataDontLoad
            #expect(try await session.data(for: request).0 == TestServer.bytes(count: 700, seed: 9))
            #expect(Self.requests(server, path).count == 2)
            // The session's policy applies to requests that leave it to the protocol.
            var configuration = Self.cached()
            configuration.requestCachePolicy = .returnCacheDataDontLoad
            let offline = Session(configuration: configuration)
            defer { offline.invalidateAndCancel() }
            await #expect(throws: CourierError.self) { _ = try await offline.data(from: server.url(path)) }
        }
    }

    @Test("a data delegate is asked about a response served from the cache; .becomeDownload gets the stored body")
    func delegateDispositionOfStoredResponse() async throws {
        try await withServer { server in
            let (session, delegate) = makeRecordingSession(Self.cached())
            defer { session.invalidateAndCancel() }
            let path = "/bytes/1500?seed=4&cacheControl=max-age%3D60"
            let first = session.dataTask(with: server.url(path))
            first.resume()
            #expect(try await delegate.completion(of: first) == nil)
            delegate.script { $0.disposition = { _ in .becomeDownload } }
            let second = session.dataTask(with: server.url(path))
            second.resume()
            let events = try await delegate.log.wait(timeout: .seconds(20), "the download's file") { events in
                events.contains { if case .finished = $0 { true } else { false } }
            }
            #expect(events.contains { event in
                if case .becameDownload(second.taskIdentifier, _) = event { true } else { false }
            })
            let files = events.compactMap { event -> Data? in
                if case .finished(_, _, let bytes, _) = event { return bytes }
                return nil
            }
            #expect(files == [TestServer.bytes(count: 1500, seed: 4)])
            #expect(Self.requests(server, path).count == 1)
        }
    }

    @Test("a disk cache outlives its session: a new cache on the same directory serves the entry")
    func diskCacheOutlivesSession() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("courier-cache-\(UUID())")
        defer { try? FileManager.default.removeItem(at: directory) }
        try await withServer { server in
            let path = "/bytes/900?seed=8&cacheControl=max-age%3D60"
            do {
                let session = Session(configuration: Self.cached(directory))
                defer { session.invalidateAndCancel() }
                _ = try await session.data(from: server.url(path))
            }
            var configuration = Self.cached(directory)
            configuration.urlCache = URLCache(memoryCapacity: 0, diskCapacity: 16 << 20, diskPath: directory.path)
            let session = Session(configuration: configuration)
            defer { session.invalidateAndCancel() }
            let (data, response) = try await session.data(from: server.url(path))
            #expect(data == TestServer.bytes(count: 900, seed: 8))
            #expect((response as? HTTPURLResponse)?.header("Cache-Control") == "max-age=60")
            #expect(Self.requests(server, path).count == 1)
        }
    }
}
