internal import CSupport
import Foundation

/// The one place where engine error codes become ``CourierError`` codes.
extension CourierError.Code {
    init(engineError: cr_error_t) {
        switch engineError {
        case CR_ERR_CANCELLED: self = .cancelled
        case CR_ERR_TIMED_OUT: self = .timedOut
        case CR_ERR_CANNOT_RESOLVE: self = .cannotFindHost
        case CR_ERR_CANNOT_CONNECT: self = .cannotConnectToHost
        case CR_ERR_CONNECTION_LOST: self = .networkConnectionLost
        case CR_ERR_SHORT_BODY: self = .networkConnectionLost
        case CR_ERR_BAD_RESPONSE: self = .badServerResponse
        case CR_ERR_BAD_RANGE: self = .cannotResume
        case CR_ERR_TLS: self = .secureConnectionFailed
        case CR_ERR_TLS_UNTRUSTED: self = .serverCertificateUntrusted
        case CR_ERR_FILE_WRITE: self = .cannotWriteToFile
        case CR_ERR_FILE_READ: self = .cannotReadFile
        case CR_ERR_UNSUPPORTED_URL: self = .unsupportedURL
        case CR_ERR_BAD_URL: self = .badURL
        case CR_ERR_NO_SPACE: self = .insufficientSpace
        case CR_ERR_DECODING: self = .cannotDecodeContentData
        case CR_ERR_TOO_LARGE: self = .dataLengthExceedsMaximum
        case CR_ERR_AUTH_FAILED: self = .userAuthenticationRequired
        case CR_ERR_TOO_MANY_REDIRECTS: self = .httpTooManyRedirects
        case CR_ERR_BODY_NOT_REWOUND: self = .requestBodyStreamExhausted
        case CR_ERR_CLIENT_CERT_REQUIRED: self = .clientCertificateRequired
        case CR_ERR_TLS_PINNED, CR_ERR_TRUST_PENDING: self = .serverCertificateUntrusted
        default: self = .unknown
        }
    }
}

extension CourierError {
    /// Builds the error for a failed transfer from the fields of its COMPLETE event.
    init(engineError: cr_error_t, curlCode: Int32, osError: Int32, message: String?, url: URL?) {
        var code = CourierError.Code(engineError: engineError)
        // A connect that found no route at all: no network, rather than a host that refused.
        if code == .cannotConnectToHost && (osError == ENETUNREACH || osError == ENETDOWN) {
            code = .notConnectedToInternet
        }
        // The engine gives every failure a message (libcurl's own text where curl failed); only an engine out of
        // memory even for that leaves it out.
        let text: String
        if let message, !message.isEmpty {
            text = message
        } else {
            text = "\(code) (engine error \(engineError.rawValue))"
        }
        self.init(
            code,
            text,
            curlCode: curlCode != 0 ? Int(curlCode) : nil,
            osError: osError != 0 ? osError : nil,
            failingURL: url
        )
    }
}
