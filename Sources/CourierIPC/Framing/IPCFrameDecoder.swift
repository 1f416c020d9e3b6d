package import Foundation

/// Cuts a byte stream into ``IPCFrame``s, whatever the sizes of the reads: a frame may arrive in pieces, and one
/// read may hold several frames.
///
/// After the first error the decoder is spent: every later call throws the same error, and the connection is to be
/// closed. Not thread-safe: one decoder belongs to one connection's reader.
package struct IPCFrameDecoder: Sendable {
    private var buffer = Data()
    private var failure: IPCError?
    private let maximumPayloadLength: Int

    package init(maximumPayloadLength: Int = IPCFrame.maximumPayloadLength) {
        self.maximumPayloadLength = maximumPayloadLength
    }

    /// Bytes received and not yet part of a returned frame.
    package var bufferedByteCount: Int { buffer.count }

    /// Adds `bytes` and returns every frame they complete, in order.
    package mutating func feed(_ bytes: Data) throws(IPCError) -> [IPCFrame] {
        if let failure {
            throw failure
        }
        buffer.append(bytes)
        var frames: [IPCFrame] = []
        do throws(IPCError) {
            while let frame = try nextFrame() {
                frames.append(frame)
            }
        } catch {
            failure = error
            buffer = Data()
            throw error
        }
        return frames
    }

    /// The peer closed the connection: fine between frames, ``IPCError/truncated(bufferedBytes:)`` inside one.
    package mutating func finish() throws(IPCError) {
        if let failure {
            throw failure
        }
        guard buffer.isEmpty else {
            let error = IPCError.truncated(bufferedBytes: buffer.count)
            failure = error
            throw error
        }
    }

    private mutating func nextFrame() throws(IPCError) -> IPCFrame? {
        guard buffer.count >= IPCFrame.headerLength else {
            return nil
        }
        let start = buffer.startIndex
        func byte(_ offset: Int) -> Int { Int(buffer[start + offset]) }
        let length = byte(0) << 24 | byte(1) << 16 | byte(2) << 8 | byte(3)
        let version = UInt16(byte(4) << 8 | byte(5))
        let type = UInt16(byte(6) << 8 | byte(7))
        // Checked from the header alone, before a byte of the payload is buffered.
        guard IPCFrame.reads(version) else {
            throw .unsupportedVersion(version)
        }
        guard length <= maximumPayloadLength else {
            throw .oversized(length: length, limit: maximumPayloadLength)
        }
        guard IPCMessage.Kind(rawValue: type) != nil else {
            throw .unknownType(type)
        }
        guard buffer.count >= IPCFrame.headerLength + length else {
            return nil
        }
        let payloadStart = start + IPCFrame.headerLength
        let payload = Data(buffer[payloadStart..<(payloadStart + length)])
        buffer.removeSubrange(start..<(payloadStart + length))
        return IPCFrame(version: version, type: type, payload: payload)
    }
}
