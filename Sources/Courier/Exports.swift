/// `import Courier` brings the lifecycle (`Application`, background tasks) and ``CourierError`` along with sessions and
/// tasks.
@_exported public import CourierIPC
@_exported public import CourierLifecycle
