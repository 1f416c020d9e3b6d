package import Courier

/// The response an app hears for its background download: the one for the entity it asked for, whatever ranges
/// courierd used underneath.
///
/// courierd resumes a download after a failure or a restart with `Range: bytes=<offset>-`, so the last exchange may
/// be a 206 (the rest of the entity) or a 416 (nothing left: the file was already whole when courierd was killed
/// between the last byte and the journal). The app asked for the whole entity and must hear a 200 with its length,
/// as from nsurlsessiond. Pure: no I/O.
package enum EntityResponse {
    /// The entity's response to remember from an attempt's response (a checkpoint keeps the first one): a 200 as it
    /// is, a 206 as the 200 it stands for (its total length from `Content-Range`), anything else nil.
    package static func remembered(from response: IPCMessage.BackgroundResponse) -> IPCMessage.BackgroundResponse? {
        switch response.status {
        case 200:
            return response
        case 206:
            return whole(response, length: response.head.contentRangeTotal)
        default:
            return nil
        }
    }

    /// What the app hears for a download that succeeded with `final` as its last exchange, `entity` remembered from
    /// an earlier one (or nil) and `length` bytes in the file.
    package static func reported(
        final: IPCMessage.BackgroundResponse,
        entity: IPCMessage.BackgroundResponse?,
        length: Int64
    ) -> IPCMessage.BackgroundResponse {
        guard final.status == 206 || final.status == 416 else {
            return final
        }
        if var entity {
            // The entity's head, the timings of the exchange that finished it.
            entity.metrics = final.metrics
            return entity
        }
        var derived = whole(final, length: length)
        if final.status == 416 {
            // The head of an error answer: its type described the error page, not the entity.
            derived.head.fieldLines.removeAll { $0.name.caseInsensitiveEquals("Content-Type") }
        }
        return derived
    }

    /// `response` as a 200 for the whole entity: no `Content-Range`, `Content-Length` the entity's length when known.
    private static func whole(_ response: IPCMessage.BackgroundResponse, length: Int64?)
        -> IPCMessage.BackgroundResponse
    {
        var head = response.head
        head.status = 200
        head.fieldLines.removeAll {
            $0.name.caseInsensitiveEquals("Content-Range") || $0.name.caseInsensitiveEquals("Content-Length")
        }
        if let length, length >= 0 {
            head.fieldLines.append(ResponseHead.Field(name: "Content-Length", value: String(length)))
        }
        return IPCMessage.BackgroundResponse(url: response.url, head: head, metrics: response.metrics)
    }
}
