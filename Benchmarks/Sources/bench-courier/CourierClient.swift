import BenchClientKit
import Courier
import CourierClientKit
import Foundation
public import SessionClientKit

extension Session: URLLoadingSession {}

extension SessionClient where Loader == Session {
    /// Courier's `Session` through its URLSession-shaped API, configured by `SessionConfiguration.benchmark`.
    static func courier(plan: TransferPlan) -> SessionClient {
        SessionClient(plan: plan, session: Session(configuration: .benchmark(for: plan)))
    }
}
