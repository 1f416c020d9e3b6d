extension Duration {
    /// The duration in seconds, as a `Double` (the lifecycle's budgets, reports to courierd, the tool's rates).
    package var inSeconds: Double {
        let (seconds, attoseconds) = self.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
