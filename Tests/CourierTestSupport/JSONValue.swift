/// A tiny JSON model whose objects keep their key order, so answers are byte-for-byte deterministic.
indirect enum JSONValue {
    case string(String)
    case int(Int)
    case bool(Bool)
    case object([(String, JSONValue)])

    func serialized() -> String {
        var output = ""
        write(into: &output)
        return output
    }

    private func write(into output: inout String) {
        switch self {
        case .string(let string):
            Self.writeString(string, into: &output)
        case .int(let int):
            output += String(int)
        case .bool(let bool):
            output += bool ? "true" : "false"
        case .object(let members):
            output += "{"
            for (index, member) in members.enumerated() {
                if index > 0 { output += "," }
                Self.writeString(member.0, into: &output)
                output += ":"
                member.1.write(into: &output)
            }
            output += "}"
        }
    }

    private static func writeString(_ string: String, into output: inout String) {
        output += "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": output += "\\\""
            case "\\": output += "\\\\"
            case "\n": output += "\\n"
            case "\r": output += "\\r"
            case "\t": output += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                output += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default:
                output.unicodeScalars.append(scalar)
            }
        }
        output += "\""
    }
}
