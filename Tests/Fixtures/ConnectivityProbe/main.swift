// A client for the connectivity test (Tests/CourierTests/ConnectivityTests.swift), run inside a network namespace
// whose only link the test takes down and up: downloads URL with a default session, waiting for connectivity unless
// --no-wait, and prints one line per delegate call on standard output:
//
//   waiting                      taskIsWaitingForConnectivity
//   completed BYTES              the download ended with BYTES bytes (its content is checked by the test's hash)
//   failed CODE                  it ended with CourierError CODE
//
//   ConnectivityProbe URL [--no-wait] [--resource-timeout SECONDS] [--request-timeout SECONDS]
import Courier
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

final class Probe: SessionDownloadDelegate {
    func urlSession(_ session: Session, taskIsWaitingForConnectivity task: SessionTask) {
        say("waiting")
    }

    func urlSession(_ session: Session, downloadTask: DownloadTask, didFinishDownloadingTo location: URL) {
        let data = FileManager.default.contents(atPath: location.path) ?? Data()
        say("completed \(data.count) \(data.reduce(UInt64(0)) { ($0 &* 31) &+ UInt64($1) })")
    }

    func urlSession(_ session: Session, task: SessionTask, didCompleteWithError error: (any Error)?) {
        if let error = error as? CourierError {
            say("failed \(error.code)")
        }
        exit(error == nil ? 0 : 1)
    }
}

var arguments = Array(CommandLine.arguments.dropFirst())
var configuration = SessionConfiguration.ephemeral
configuration.waitsForConnectivity = !arguments.contains("--no-wait")
if let flag = arguments.firstIndex(of: "--resource-timeout"), flag + 1 < arguments.count {
    configuration.timeoutIntervalForResource = Double(arguments[flag + 1]) ?? 60
}
if let flag = arguments.firstIndex(of: "--request-timeout"), flag + 1 < arguments.count {
    configuration.timeoutIntervalForRequest = Double(arguments[flag + 1]) ?? 60
}
let session = Session(configuration: configuration, delegate: Probe())
session.downloadTask(with: URL(string: arguments[0])!).resume()
while true {
    sleep(60)
}
