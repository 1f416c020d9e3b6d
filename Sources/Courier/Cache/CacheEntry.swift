import Foundation

/// A stored response as the task machine sees it: the response, its (decoded) body, when it was requested and
/// received, and the request fields its `Vary` names. Read from and written to the session's `URLCache` by
/// `URLCache+Entries.swift`.
struct CacheEntry: Codable, Sendable, Equatable {
    var response: TaskResponse
    var body: Data
    /// When the request that brought the response was sent (the hop's start).
    var requestDate: Date
    /// When the response arrived.
    var responseDate: Date
    /// The request fields the response's `Vary` names (lower-cased names; "" for a field the request lacked).
    var varyingFields: [String: String]
}

/// A response being received that may be stored once its body is complete.
struct CacheCandidate: Sendable, Equatable {
    var response: TaskResponse
    var requestDate: Date
    var responseDate: Date
    var varyingFields: [String: String]
    /// The body so far, when the task does not collect it anyway (``TaskMachine/bodyChunks``).
    var chunks: [Data] = []
    var length = 0
}
