// libFuzzer's entry points for `courier-fuzzer` (scripts/fuzz.sh; docs/reliability.md). Declared in Package.swift
// only when COURIER_FUZZ is set, and built with `-sanitize=fuzzer,address -parse-as-library`: libFuzzer brings
// `main`. The target is COURIER_FUZZ_TARGET, one of FuzzTarget's raw values.
import CourierFuzzing
import Foundation

private let target: FuzzTarget = {
    let name = ProcessInfo.processInfo.environment["COURIER_FUZZ_TARGET"] ?? ""
    guard let target = FuzzTarget(rawValue: name) else {
        let known = FuzzTarget.allCases.map(\.rawValue).joined(separator: ", ")
        fatalError("COURIER_FUZZ_TARGET is \"\(name)\"; one of \(known)")
    }
    return target
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    let data = start.map { Data(bytes: $0, count: count) } ?? Data()
    target.run(data)
    return 0
}

/// With COURIER_FUZZ_WRITE_SEEDS=DIR, writes the target's seeds into DIR and exits (scripts/fuzz.sh adds them to
/// each run's corpus).
@_cdecl("LLVMFuzzerInitialize")
public func fuzzInitialize(
    _ argc: UnsafeMutablePointer<CInt>?,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>?
) -> CInt {
    guard let directory = ProcessInfo.processInfo.environment["COURIER_FUZZ_WRITE_SEEDS"] else {
        return 0
    }
    for (index, seed) in target.seeds.enumerated() {
        try? seed.write(to: URL(fileURLWithPath: directory).appendingPathComponent("seed-\(index)"))
    }
    exit(0)
}

@_silgen_name("LLVMFuzzerRunDriver")
private func runDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafeRawPointer?, Int) -> CInt
) -> CInt

/// The executable's entry point as SwiftPM names it (it links `main` to `<module>_main`): libFuzzer's driver.
@_cdecl("courier_fuzzer_main")
public func fuzzerMain(
    _ argc: CInt,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
) -> CInt {
    var count = argc
    var arguments = argv
    return runDriver(&count, &arguments) { start, count in fuzzOneInput(start, count) }
}
