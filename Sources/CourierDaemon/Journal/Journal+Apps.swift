import Courier
import Foundation
import GRDB

/// What the journal keeps of apps for background fetch and remote notifications: device tokens, fetch intervals and
/// the fetch scheduler's state.
extension Journal {
    /// An app registered for background work.
    package struct AppRegistration: Sendable, Equatable {
        package var app: String
        package var deviceToken: String
        package var fetchInterval: Double?
        package var remoteNotifications: Bool
    }

    /// Records `app`'s registration; returns its device token, made at its first registration and the same ever after.
    /// Registration for remote notifications is kept once made: a process of the app that has not called
    /// `registerForRemoteNotifications()` yet (it sets its fetch interval first, or was launched for a push and exits
    /// before registering) says `false`, which does not unregister the app — as an iOS app stays registered across
    /// launches (Courier has no call to unregister).
    package func register(
        _ app: String,
        fetchInterval: Double?,
        remoteNotifications: Bool
    ) throws(JournalError) -> String {
        try write { db in
            let existing = try String.fetchOne(db, sql: "SELECT deviceToken FROM app WHERE name = ?", arguments: [app])
            let token = existing ?? DeviceToken.make()
            try db.executeCached(
                sql: """
                    INSERT INTO app (name, deviceToken, fetchInterval, remoteNotifications) VALUES (?, ?, ?, ?)
                    ON CONFLICT(name) DO UPDATE SET deviceToken = excluded.deviceToken,
                    fetchInterval = excluded.fetchInterval,
                    remoteNotifications = MAX(app.remoteNotifications, excluded.remoteNotifications)
                    """,
                arguments: [app, token, fetchInterval, remoteNotifications]
            )
            return token
        }
    }

    /// The app a device token belongs to (any case of hex digits); nil for a token never handed out. One lookup in
    /// the token's unique index.
    package func app(withDeviceToken token: String) throws(JournalError) -> AppRegistration? {
        try registrations(where: "deviceToken = ?", [token.lowercased()]).first
    }

    /// Every app that registered for background work, by name.
    package func registrations() throws(JournalError) -> [AppRegistration] {
        try registrations(where: "deviceToken IS NOT NULL", [])
    }

    private func registrations(where condition: String, _ arguments: StatementArguments) throws(JournalError)
        -> [AppRegistration]
    {
        try read { db in
            try Row.fetchAll(
                db,
                sql: "SELECT name, deviceToken, fetchInterval, remoteNotifications FROM app WHERE \(condition) ORDER BY name",
                arguments: arguments
            ).map { row in
                AppRegistration(
                    app: row["name"],
                    deviceToken: row["deviceToken"],
                    fetchInterval: row["fetchInterval"],
                    remoteNotifications: row["remoteNotifications"]
                )
            }
        }
    }

    /// The fetch scheduler as last saved; nil before the first save (or when it cannot be read: it starts over).
    package func fetchScheduler() throws(JournalError) -> FetchScheduler? {
        let data = try read { db in try Data.fetchOne(db, sql: "SELECT scheduler FROM fetchSchedule WHERE id = 1") }
        return data.flatMap { try? Journal.decode(FetchScheduler.self, from: $0) }
    }

    package func saveFetchScheduler(_ scheduler: FetchScheduler) throws(JournalError) {
        let data = try Journal.encode(scheduler)
        try write { db in
            try db.executeCached(
                sql: "INSERT INTO fetchSchedule (id, scheduler) VALUES (1, ?) ON CONFLICT(id) DO UPDATE SET scheduler = excluded.scheduler",
                arguments: [data]
            )
        }
    }
}
