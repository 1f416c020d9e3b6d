public import Foundation

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

extension Session {
    /// A WebSocket task for `url` (`ws`, `wss`, `http` or `https`); its events go to the session delegate (a
    /// ``SessionWebSocketDelegate`` hears the open and the close). The task's requests show the `http`/`https` form of
    /// the URL, which is what goes on the wire.
    public func webSocketTask(with url: URL) -> WebSocketTask {
        webSocketTask(with: URLRequest(url: url), protocols: [])
    }

    /// A WebSocket task offering `protocols` (`Sec-WebSocket-Protocol`, in order of preference); the server's choice
    /// comes to `didOpenWithProtocol`.
    public func webSocketTask(with url: URL, protocols: [String]) -> WebSocketTask {
        webSocketTask(with: URLRequest(url: url), protocols: protocols)
    }

    /// A WebSocket task for `request`: its header fields go with the handshake (an `Authorization`, an `Origin`, a
    /// `Sec-WebSocket-Protocol` list), its method and body do not.
    public func webSocketTask(with request: URLRequest) -> WebSocketTask {
        let offered = request.value(forHTTPHeaderField: "Sec-WebSocket-Protocol")?
            .split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty } ?? []
        return webSocketTask(with: request, protocols: offered)
    }

    private func webSocketTask(with request: URLRequest, protocols: [String]) -> WebSocketTask {
        let handshake = WebSocketHandshake(protocols: protocols)
        var taskRequest = TaskRequest(request)
        taskRequest.setURL(request.url.map(Session.httpForm))
        taskRequest.setMethod("GET")
        taskRequest.removeBody()
        taskRequest.removeHeaderField("Sec-WebSocket-Protocol")
        for (name, value) in handshake.requestFields {
            taskRequest.setHeaderField(name, value)
        }
        let connection = WebSocketConnection(handshake: handshake)
        let task = WebSocketTask(core: core, request: taskRequest, connection: connection)
        task.announceCreation(to: self)
        return task
    }

    /// `ws://…` as `http://…`, `wss://…` as `https://…`; other URLs as they are.
    static func httpForm(_ url: URL) -> URL {
        guard let scheme = url.scheme?.lowercased(), scheme == "ws" || scheme == "wss",
            var components = URLComponents(url: url, resolvingAgainstBaseURL: true)
        else {
            return url
        }
        components.scheme = scheme == "ws" ? "http" : "https"
        return components.url ?? url
    }
}
