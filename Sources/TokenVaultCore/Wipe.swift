#if canImport(Glibc)
    import Glibc
#endif

extension Array where Element == UInt8 {
    /// Zeroes these bytes (`explicit_bzero`, which the compiler may not drop) once they are no
    /// longer needed: a frame written, a provider's answer read. Plain buffers that carried a
    /// token are wiped so that freed heap memory does not keep it (`SecretBytes` does the same
    /// for what it holds).
    ///
    /// Copy-on-write is respected: a copy held elsewhere (an answer the courier keeps until the
    /// daemon settles it, a spooled answer kept for a retry) is not touched; wipe the last one.
    public mutating func wipe() {
        withUnsafeMutableBytes { bytes in
            if let base = bytes.baseAddress { explicit_bzero(base, bytes.count) }
        }
    }
}
