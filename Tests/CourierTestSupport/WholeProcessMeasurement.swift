import Foundation

/// Whether this process runs the tests that measure the whole process (its threads, descriptors, RSS) alone:
/// `COURIER_TEST_PROCESS_CENSUS=1`, which scripts/test.sh sets for runs of those tests in a process of their own.
/// Elsewhere other suites run in the same process at once and move those figures by tens of threads and descriptors
/// and hundreds of MiB (a whole-suite run over HTTP/2 put 336 MiB of other tests' memory in the stress test's growth).
public let measuresWholeProcess = ProcessInfo.processInfo.environment["COURIER_TEST_PROCESS_CENSUS"] == "1"
