import GRDB

extension Database {
    /// `execute(sql:arguments:)` through the connection's statement cache: each statement text is compiled once (SQLite's
    /// parser and GRDB's authorizer ran at every call: 4 % of courierd's CPU in W6, 10,000 downloads), then bound and
    /// run. For the statements of the journal's hot paths (tasks, events, checkpoints, acknowledgements).
    func executeCached(sql: String, arguments: StatementArguments = StatementArguments()) throws {
        try cachedStatement(sql: sql).execute(arguments: arguments)
    }
}
