package import Foundation

/// This process's executable (`/proc/self/exe`, symbolic links resolved): what courierd relaunches an app with by
/// default, where a session looks for courierd beside the app, and which binary a courierd says it is.
package enum ThisExecutable {
    package static var url: URL {
        URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    }

    package static var path: String {
        url.path
    }
}
