extension Collection<UInt8> {
    /// The bytes are `lowercase`'s (lower-case ASCII), with letters in either case: how header
    /// names and tokens such as `close` are compared, without making a string of them.
    func equalsIgnoringASCIICase(_ lowercase: [UInt8]) -> Bool {
        count == lowercase.count
            && zip(self, lowercase).allSatisfy { ((0x41...0x5A).contains($0.0) ? $0.0 | 0x20 : $0.0) == $0.1 }
    }
}
