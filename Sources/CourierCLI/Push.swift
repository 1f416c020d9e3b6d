import ArgumentParser
import Courier
import Foundation

/// `courier push TOKEN`: sends a push to a registered app through courierd, like the seed's `apn push`.
struct Push: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Send a push to the app with a device token (`courier apps` lists the tokens).",
        discussion: """
            -n sends a silent push (aps.content-available = 1, priority 5): courierd wakes the app (or launches it) \
            and its didReceiveRemoteNotification handler runs; silent pushes are rate limited per app and coalesced. \
            --alert sends a visible one, shown as a desktop notification. -d KEY=VALUE adds custom keys beside \
            "aps"; --payload sends a JSON object as it is. courierd checks the payload as APNs does and answers with \
            APNs's reasons (BadDeviceToken, PayloadTooLarge, MissingAps, …): this command then fails.
            """
    )

    @Argument(help: "The app's device token (64 hexadecimal digits).")
    var token: String

    @Flag(name: .customShort("n"), help: "A silent push: content-available, no alert.")
    var silent = false

    @Option(help: "A visible push with this text.")
    var alert: String?

    @Option(name: .customShort("d"), help: "A custom key of the payload, KEY=VALUE (repeatable).")
    var data: [String] = []

    @Option(help: "The whole payload as JSON (instead of -n, --alert and -d).")
    var payload: String?

    @Option(help: "The apns-priority header: 5 or 10 (default: 5 for a silent push, 10 otherwise).")
    var priority: Int?

    @Option(help: "The apns-push-type header: background or alert (default: from the payload).")
    var type: String?

    func validate() throws {
        if payload == nil, !silent, alert == nil {
            throw ValidationError("say what to send: -n (silent), --alert TEXT, or --payload JSON")
        }
        if payload != nil, silent || alert != nil || !data.isEmpty {
            throw ValidationError("--payload is the whole payload: it does not combine with -n, --alert or -d")
        }
        for pair in data where !pair.contains("=") {
            throw ValidationError("-d takes KEY=VALUE, not \(pair)")
        }
    }

    /// The JSON payload the options describe.
    func body() throws -> Data {
        if let payload {
            return Data(payload.utf8)
        }
        var aps: [String: Any] = [:]
        if silent {
            aps["content-available"] = 1
        }
        if let alert {
            aps["alert"] = alert
        }
        var object: [String: Any] = ["aps": aps]
        for pair in data {
            let split = pair.firstIndex(of: "=")!
            object[String(pair[..<split])] = String(pair[pair.index(after: split)...])
        }
        return try JSONSerialization.data(withJSONObject: object, options: .sortedKeys)
    }

    func run() throws {
        let push = try body()
        let connection = try DaemonClient.connect()
        defer { connection.close() }
        let result = try DaemonClient.request(connection) { number in
            .sendPush(.init(request: number, deviceToken: token, payload: push, pushType: type, priority: priority))
        }
        guard case .push(let receipt) = result else {
            throw CommandFailure(description: "courierd answered something else than a push receipt")
        }
        guard receipt.status == 200 else {
            throw CommandFailure(
                description: "push refused: \(receipt.reason ?? "?") (\(receipt.status))" + (receipt.detail.map { ": \($0)" } ?? "")
            )
        }
        print("push \(receipt.id ?? "-"): \(receipt.disposition ?? "accepted")")
    }
}
