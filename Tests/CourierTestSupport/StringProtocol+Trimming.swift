extension StringProtocol {
    /// The string without leading and trailing characters from `characters` (Foundation-free).
    func trimmed(of characters: String) -> String {
        let set = Set(characters)
        var slice = self[...]
        while let first = slice.first, set.contains(first) { slice = slice.dropFirst() }
        while let last = slice.last, set.contains(last) { slice = slice.dropLast() }
        return String(slice)
    }
}
