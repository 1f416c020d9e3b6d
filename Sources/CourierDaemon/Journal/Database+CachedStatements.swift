import GRDB

extension Database {
    /// `execute(sql:arguments:)` through the connection's statement cache: each statement text is compiled once
    /// (SQLite's parser and GRDB's authorizer ran at every call: 4 % of courierd's CPU in W6, 10,000 downloads), then
    /// bound and run. For the statements of the journal's hot paths (tasks, events, checkpoints, acknowledgements).
    func executeCached(sql: String, arguments: StatementArguments = StatementArguments()) throws {
        let statement = try cachedStatement(sql: sql)
        try statement.execute(arguments: arguments)
        statement.dropArguments()
    }

    /// A fetch through the connection's statement cache: `fetch` runs the cached statement (with its arguments).
    func fetchCached<Value>(sql: String, _ fetch: (Statement) throws -> Value) throws -> Value {
        let statement = try cachedStatement(sql: sql)
        let value = try fetch(statement)
        statement.dropArguments()
        return value
    }
}

extension Statement {
    /// Lets go of the values the statement was last run with (an event's body, a task's spec): a cached statement
    /// keeps them until its next use, so the last ones lived as long as courierd, where LeakSanitizer reported them
    /// (it cannot follow the reference through GRDB's argument storage). Only after a run that succeeded: the reset it
    /// makes would fail again after a failed one.
    func dropArguments() {
        setUncheckedArguments(StatementArguments())
    }
}
