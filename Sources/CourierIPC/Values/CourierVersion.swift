/// The version of Courier's library, tool and daemon: one string, shown by `courier --version` and
/// `courierd --version`, and sent by courierd in its `welcome`.
package enum CourierVersion {
    package static let current = "0.2.0"
}
