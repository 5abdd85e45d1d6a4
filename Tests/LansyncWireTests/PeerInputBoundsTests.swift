import LansyncCore
import LansyncTestSupport
import Testing

@testable import LansyncWire

/// Issue 62: what a peer sends is bounded where it is decoded, and the figures derived from it
/// cannot trap. Each case here crashed a node, or reached a store or a terminal, before.
@Suite struct PeerInputBoundsTests {
    static let a = NodeID.node(1)
    static let c = NodeID.node(99)

    func hello(name: String) -> Hello {
        Hello(nodeID: Self.a, clusterID: Self.c, role: .peer, name: name, versionVector: VersionVector())
    }

    /// Every register at its largest estimated about 2.6e19 members, and `Int(raw)` trapped.
    @Test func aSketchAtItsLargestEstimatesWithinBounds() throws {
        let full = try #require(
            MemberSketch(registers: Array(repeating: MemberSketch.maxRank, count: MemberSketch.registerCount))
        )
        #expect(full.estimate == MemberSketch.maxEstimate)
        var merged = MemberSketch()
        merged.merge(full)
        merged.insert(.node(7))
        #expect(merged.estimate == MemberSketch.maxEstimate)
        // Every mix of small and large registers stays within bounds too.
        for high in 0...Int(MemberSketch.maxRank) {
            var registers = Array(repeating: UInt8(0), count: MemberSketch.registerCount)
            for i in stride(from: 0, to: registers.count, by: 2) { registers[i] = UInt8(high) }
            let sketch = try #require(MemberSketch(registers: registers))
            #expect((0...MemberSketch.maxEstimate).contains(sketch.estimate), "register \(high)")
        }
    }

    /// A hello's name with a control character, a NUL, a line separator or a direction override
    /// is refused whole; a plain one (and an older node's empty one) is taken.
    @Test(arguments: [
        "a\nb", "x\u{0}y", "tab\there", "esc\u{1B}[2K", "iso\u{2067}x", "rtl\u{202E}x", "del\u{7F}", "c1\u{85}",
    ])
    func namesWithControlsAreRefused(_ name: String) {
        let bytes = MessageCoder.encode(.hello(hello(name: name)))
        #expect(throws: WireError.self) { try MessageCoder.decode(bytes) }
    }

    @Test(arguments: ["kitchen", "", "Küche 2", "实验室", "\u{200F}מטבח"])
    func plainNamesAreTaken(_ name: String) throws {
        guard case .hello(let read) = try MessageCoder.decode(MessageCoder.encode(.hello(hello(name: name)))) else {
            Issue.record("not a hello")
            return
        }
        #expect(read.name == name)
    }

    /// An error's text is cut to 512 bytes and its control characters escaped, so the line it
    /// is shown on (`status`, `doctor`) stays one line and no store meets a NUL.
    @Test func anErrorsTextIsEscapedAndCut() throws {
        let text = "disk full\nok  forged\u{0}" + String(repeating: "é", count: 600)
        guard case .error(let error) = try MessageCoder.decode(MessageCoder.encode(.error(.init(.storage, text))))
        else {
            Issue.record("not an error")
            return
        }
        #expect(TerminalText.isPlain(error.message), "\(error.message)")
        #expect(error.message.hasPrefix("disk full\\u000aok  forged\\u0000"))
        #expect(error.message.utf8.count <= 512 + 5 * 3)
    }

    /// An `expect` of more field states than any replica holds is refused: 2^64-1 made `status`
    /// trap once the rate fell under one a second.
    @Test func anExpectPastItsBoundIsRefused() throws {
        #expect(throws: WireError.self) { try MessageCoder.decode(MessageCoder.encode(.expect(fieldStates: .max))) }
        let bound = WireLimits.maxAnnouncedFieldStates
        #expect(throws: WireError.self) {
            try MessageCoder.decode(MessageCoder.encode(.expect(fieldStates: bound + 1)))
        }
        #expect(
            try MessageCoder.decode(MessageCoder.encode(.expect(fieldStates: bound))) == .expect(fieldStates: bound)
        )
    }

    /// A peer address with a control character is refused (it is shown in `status`).
    @Test func addressesWithControlsAreRefused() {
        var rogue = hello(name: "a")
        rogue.addresses = [Hello.Address(nodeID: .node(2), address: "10.0.0.1:7000\nPEER forged", at: 1)]
        #expect(throws: WireError.self) { try MessageCoder.decode(MessageCoder.encode(.hello(rogue))) }
    }
}
