import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Pure rules for following a redirect. The engine never follows redirects; a task asks these.
enum RedirectPolicy {
    /// Hops a task may take before it fails with `.httpTooManyRedirects`.
    static let maximumRedirects = 16

    /// The request headers that are only sent to the origin they were meant for.
    static let originBoundHeaders: Set<String> = ["authorization", "cookie", "proxy-authorization"]

    /// Whether two URLs share scheme, host and port.
    static func sameOrigin(_ a: URL, _ b: URL) -> Bool {
        guard let schemeA = a.scheme?.lowercased(), let schemeB = b.scheme?.lowercased(), schemeA == schemeB,
            let hostA = a.host?.lowercased(), let hostB = b.host?.lowercased(), hostA == hostB
        else {
            return false
        }
        return effectivePort(a) == effectivePort(b)
    }

    static func effectivePort(_ url: URL) -> Int {
        if let port = url.port {
            return port
        }
        return url.scheme?.lowercased() == "https" ? 443 : 80
    }

    /// The redirect target of a response, resolved against the request URL; nil when there is no usable Location.
    static func target(location: String?, relativeTo url: URL) -> URL? {
        guard let location, !location.isEmpty, let target = URL(string: location, relativeTo: url) else {
            return nil
        }
        return target.absoluteURL
    }

    /// Why a redirect target may not be followed, or nil when it may.
    static func refusal(from source: URL, to target: URL) -> CourierError? {
        let scheme = target.scheme?.lowercased()
        guard scheme == "http" || scheme == "https" else {
            return CourierError(.unsupportedURL, "redirect to an unsupported scheme refused", failingURL: target)
        }
        if source.scheme?.lowercased() == "https" && scheme == "http" {
            return CourierError(.insecureRedirect, "redirect from https to http refused", failingURL: target)
        }
        guard target.host?.isEmpty == false else {
            return CourierError(.badURL, "redirect to a URL without a host", failingURL: target)
        }
        return nil
    }

    /// The request a redirect leads to: method rewriting by status, body dropping, origin-bound headers stripped
    /// when the origin changes.
    static func newRequest(from request: TaskRequest, status: Int, target: URL) -> TaskRequest {
        var next = request
        next.setURL(target)
        let method = request.method.uppercased()
        let becomesGet: Bool
        switch status {
        case 303:
            becomesGet = method != "HEAD"
        case 301, 302:
            becomesGet = method == "POST"
        default:
            becomesGet = false
        }
        if becomesGet {
            next.setMethod("GET")
            next.removeBody()
            for name in ["Content-Type", "Content-Length", "Content-Encoding", "Transfer-Encoding"] {
                next.removeHeaderField(name)
            }
        }
        if let source = request.url, !sameOrigin(source, target) {
            for name in next.headerFields.keys where originBoundHeaders.contains(name.lowercased()) {
                next.removeHeaderField(name)
            }
        }
        return next
    }
}
