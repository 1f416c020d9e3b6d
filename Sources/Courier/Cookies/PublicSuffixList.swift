import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The public suffix list (`co.uk`, `github.io`, …): domains under which unrelated parties register names, so a
/// cookie may not be set for one of them. Read through libpsl, which libcurl links (its `libpsl.so.5` is on every
/// machine that has libcurl with PSL support), with the newest of its built-in list and the system's
/// (`/usr/share/publicsuffix`). Where libpsl cannot be loaded, a single label (`com`, `localhost`) counts as a public
/// suffix, as browsers did before the list.
enum PublicSuffixList {
    private typealias Latest = @convention(c) (UnsafePointer<CChar>?) -> OpaquePointer?
    private typealias IsPublicSuffix = @convention(c) (OpaquePointer?, UnsafePointer<CChar>) -> Int32

    /// libpsl's context and its query, loaded once; nil where libpsl is not there.
    private struct Loaded: @unchecked Sendable {
        // Safe: the context is made once and only read after (libpsl's queries do not change it), and lives for the
        // process.
        var context: OpaquePointer
        var isPublicSuffix: IsPublicSuffix
    }

    private static let loaded: Loaded? = {
        guard let library = dlopen("libpsl.so.5", RTLD_NOW | RTLD_LOCAL),
            let latestSymbol = dlsym(library, "psl_latest"),
            let querySymbol = dlsym(library, "psl_is_public_suffix")
        else {
            return nil
        }
        let latest = unsafeBitCast(latestSymbol, to: Latest.self)
        guard let context = latest(nil) else {
            return nil
        }
        return Loaded(context: context, isPublicSuffix: unsafeBitCast(querySymbol, to: IsPublicSuffix.self))
    }()

    /// Whether libpsl's list is in use (else the one-label rule).
    static var isLoaded: Bool {
        loaded != nil
    }

    /// Whether `domain` (lower case, without a leading dot) is a public suffix.
    static func contains(_ domain: String) -> Bool {
        guard let loaded else {
            return !domain.contains(".")
        }
        return domain.withCString { loaded.isPublicSuffix(loaded.context, $0) } != 0
    }
}
