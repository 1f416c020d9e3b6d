import Courier
import Foundation

extension IPCMessage.BackgroundTask {
    /// The request each fetch of this task's resource starts from (an attempt, or fetching a damaged file again):
    /// ``request`` with the URL's credentials when the app's had them, and, but for an upload,
    /// `Accept-Encoding: identity` unless the app chose a coding (resuming and checking a file needs the entity's own
    /// bytes). Its header lines go on the wire in the order ``spec`` keeps them (the template of
    /// `Session.observedDownload`).
    var attemptRequest: TaskRequest {
        var request = self.request
        if let withCredentials = spec.task?.credentialURL.flatMap(URL.init(string:)) {
            request.setURL(withCredentials)
        }
        if kind != .upload, request.value(forHTTPHeaderField: "Accept-Encoding") == nil {
            request.setHeaderField("Accept-Encoding", "identity")
        }
        return request
    }
}
