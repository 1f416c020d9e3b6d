/// `import Courier` brings the lifecycle (`Application`, background tasks) along with sessions and tasks.
@_exported public import CourierLifecycle
