import Courier
import Foundation

/// The events journaled before events were the seam's own (form 1 of ``EventRecord``): each one is read as the one
/// event it stands for.
enum EarlierEvent: Decodable {
    case wroteData(delta: Int64, total: Int64, expected: Int64)
    case sentBodyData(delta: Int64, total: Int64, expected: Int64)
    case resumed(offset: Int64, expectedTotal: Int64)
    case response(IPCMessage.BackgroundResponse)
    case receivedData(Data)
    case finishedDownloading(path: String)
    case completed(error: CourierError?)

    /// The event (a response's relocation is not kept: the task's current request stays the original).
    var event: IPCMessage.BackgroundEvent {
        switch self {
        case .wroteData(_, let total, let expected):
            IPCMessage.BackgroundEvent(
                .progress,
                progress: TransferProgress(received: total, expectedToReceive: expected)
            )
        case .sentBodyData(_, let total, let expected):
            IPCMessage.BackgroundEvent(.progress, progress: TransferProgress(sent: total, expectedToSend: expected))
        case .resumed(let offset, let expectedTotal):
            IPCMessage.BackgroundEvent(
                .resumed(offset: offset, expectedTotal: expectedTotal),
                progress: TransferProgress(received: offset)
            )
        case .response(let response):
            IPCMessage.BackgroundEvent(
                .response(held: false, resumeOffset: 0, head: response.head),
                progress: TransferProgress()
            )
        case .receivedData(let data):
            IPCMessage.BackgroundEvent(.data(data), progress: TransferProgress())
        case .finishedDownloading(let path):
            IPCMessage.BackgroundEvent(.downloaded(path: path), progress: TransferProgress())
        case .completed(let error):
            IPCMessage.BackgroundEvent(.complete(TransferCompletion(error: error)), progress: TransferProgress())
        }
    }
}
