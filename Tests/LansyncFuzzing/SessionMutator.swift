import LansyncCore
import LansyncTestSupport
import LansyncWire

/// Changes a recorded session into another that a modified or buggy member could send: bytes of
/// its frames flipped, replaced by edge values, cut, repeated or spliced (what the decoder must
/// refuse), and, on decoded messages, one field at a time set to the values numbers meet
/// arithmetic with (0, 59, 2^32, 2^53, 2^63, 2^64-1: what a decoder may accept and a later
/// computation may not). Seeded: the same seed makes the same sessions.
public struct SessionMutator {
    var rng: SplitMix64

    public init(seed: UInt64) { rng = SplitMix64(seed: seed) }

    /// The values a peer's number is set to.
    static let edges: [UInt64] = [
        0, 1, 2, 59, 60, 63, 64, 127, 128, 255, 256, 511, 512, 513, 4096, 65_535, 65_536,
        UInt64(UInt32.max), UInt64(UInt32.max) + 1, 1 << 40, (1 << 40) + 1, 1 << 48, 1 << 53,
        UInt64(Int64.max) - 1, UInt64(Int64.max), UInt64(Int64.max) + 1, UInt64.max - 1, UInt64.max,
    ]

    mutating func edge() -> UInt64 {
        rng.chance(15) ? rng.next() >> UInt64.random(in: 0..<64, using: &rng) : rng.pick(Self.edges)
    }

    /// A new session from `input`, with `other` (another corpus entry) to splice from.
    public mutating func mutate(_ input: [UInt8], splicing other: [UInt8]) -> [UInt8] {
        var frames = FuzzTarget.frames(input)
        let rounds = 1 + Int.random(in: 0..<4, using: &rng)
        for _ in 0..<rounds { mutate(&frames, other: FuzzTarget.frames(other)) }
        var out: [UInt8] = []
        for frame in frames { out += Self.frame(frame) }
        // Now and then a length that lies, or a cut stream.
        if rng.chance(3), out.count >= 4 {
            let at = Int.random(in: 0..<out.count - 3, using: &rng)
            out[at] = UInt8.random(in: 0...255, using: &rng)
        }
        if rng.chance(3), !out.isEmpty { out.removeLast(Int.random(in: 0..<min(out.count, 64), using: &rng)) }
        return out
    }

    /// `session` with its hello's times at their extreme (every time a peer says of itself:
    /// rejoined, away, stale since, its clock, its signed reports' times), the rest as recorded: a seed that reaches the
    /// rejoin and staleness rules with the largest numbers a peer can send (issue 63).
    public static func withExtremeHello(_ session: [UInt8]) -> [UInt8]? {
        var frames = FuzzTarget.frames(session)
        guard let first = frames.first, case .hello(var hello)? = try? MessageCoder.decode(first) else { return nil }
        hello.rejoinedAt = .max
        hello.awaySince = .max
        hello.staleSince = .max
        hello.clock = .max
        // And the time of every signed report it passes on (issue 64), its own included.
        for index in hello.signedReports.indices { hello.signedReports[index].at = .max }
        frames[0] = MessageCoder.encode(.hello(hello))
        return frames.flatMap(frame)
    }

    /// `session` with the first proof of each batch carrying a certificate at its size bound
    /// (issue 64: bytes that are no certificate, read only by the key's check), or nil if no batch
    /// carries proofs.
    public static func withExtremeCertificates(_ session: [UInt8]) -> [UInt8]? {
        var frames = FuzzTarget.frames(session)
        var changed = false
        for index in frames.indices {
            guard let message = try? MessageCoder.decode(frames[index]), !message.batchProofs.isEmpty else { continue }
            var proofs = message.batchProofs
            proofs[0].certificate = Array(repeating: 0x30, count: RunProof.maxCertificateBytes)
            frames[index] = MessageCoder.encode(message.withProofs(proofs))
            changed = true
        }
        return changed ? frames.flatMap(frame) : nil
    }

    static func frame(_ payload: [UInt8]) -> [UInt8] {
        let n = UInt32(payload.count)
        return [
            UInt8(n >> 24), UInt8(truncatingIfNeeded: n >> 16), UInt8(truncatingIfNeeded: n >> 8),
            UInt8(truncatingIfNeeded: n),
        ]
            + payload
    }

    mutating func mutate(_ frames: inout [[UInt8]], other: [[UInt8]]) {
        guard !frames.isEmpty else {
            frames = other
            return
        }
        let i = Int.random(in: 0..<frames.count, using: &rng)
        switch Int.random(in: 0..<12, using: &rng) {
        case 0, 1, 2, 3:
            if let changed = structural(frames[i]) { frames[i] = changed } else { bytes(&frames[i]) }
        case 4, 5, 6: bytes(&frames[i])
        case 7: frames.insert(frames[i], at: i)
        case 8: if frames.count > 1 { frames.remove(at: i) }
        case 9: frames.swapAt(i, Int.random(in: 0..<frames.count, using: &rng))
        case 10: if !other.isEmpty { frames.insert(rng.pick(other), at: i) }
        default:
            // Another message kind, well formed, where the session does not expect it.
            let odd: [Message] = [
                .expect(fieldStates: edge()), .ack(sequence: edge()), .prune, .graft,
                .done(versionVector: vector()), .summary(versionVector: vector()), .have(versionVector: vector()),
                .error(ProtocolError(rng.pick(ProtocolError.Code.allCases), "odd")),
            ]
            frames.insert(MessageCoder.encode(rng.pick(odd)), at: i)
        }
    }

    /// Byte-level: flips, edge bytes, a varint of an edge value inserted, a range cut.
    mutating func bytes(_ payload: inout [UInt8]) {
        guard !payload.isEmpty else { return }
        let at = Int.random(in: 0..<payload.count, using: &rng)
        switch Int.random(in: 0..<5, using: &rng) {
        case 0: payload[at] ^= 1 << UInt8.random(in: 0..<8, using: &rng)
        case 1: payload[at] = rng.pick([0, 1, 0x3B, 0x3C, 0x7F, 0x80, 0xFE, 0xFF])
        case 2:
            var w = ByteWriter()
            w.varint(edge())
            payload.insert(contentsOf: w.bytes, at: at)
        case 3: payload.removeSubrange(at..<min(payload.count, at + Int.random(in: 1...16, using: &rng)))
        default:
            payload.replaceSubrange(
                at..<min(payload.count, at + 8),
                with: (0..<8).map { _ in UInt8.random(in: 0...255, using: &rng) }
            )
        }
    }

    /// A version vector of a few writers with edge counters.
    mutating func vector() -> VersionVector {
        var counters: [NodeID: UInt64] = [:]
        for _ in 0..<Int.random(in: 0...3, using: &rng) {
            counters[NodeID(high: rng.next(), low: rng.next())] = edge()
        }
        return VersionVector(counters)
    }

    /// Field-level: the frame decoded, one of its numbers (or texts, or lists) set to an edge,
    /// encoded again; nil if it does not decode.
    mutating func structural(_ payload: [UInt8]) -> [UInt8]? {
        guard let message = try? MessageCoder.decode(payload) else { return nil }
        switch message {
        case .hello(var hello):
            mutate(&hello)
            return MessageCoder.encode(.hello(hello))
        case .batch(let sequence, let batch):
            return MessageCoder.encode(
                rng.chance(50) ? .batch(sequence: edge(), batch) : .batch(sequence: sequence, mutate(batch))
            )
        case .finalBatch(let sequence, let batch, let done):
            return MessageCoder.encode(
                .finalBatch(
                    sequence: rng.chance(30) ? edge() : sequence,
                    mutate(batch),
                    done: rng.chance(50) ? vector() : done
                )
            )
        case .expect: return MessageCoder.encode(.expect(fieldStates: edge()))
        case .ack: return MessageCoder.encode(.ack(sequence: edge()))
        case .done: return MessageCoder.encode(.done(versionVector: vector()))
        case .summary: return MessageCoder.encode(.summary(versionVector: vector()))
        case .reached(_, let inner):
            return MessageCoder.encode(.reached(hops: UInt8(truncatingIfNeeded: edge()), inner))
        default: return nil
        }
    }

    mutating func mutate(_ batch: DeltaBatch) -> DeltaBatch {
        let covers = rng.chance(50) ? vector() : batch.covers
        var updates = batch.updates
        if rng.chance(30), !updates.isEmpty {
            updates += updates.prefix(Int.random(in: 1...updates.count, using: &rng))
        }
        if rng.chance(20), !updates.isEmpty { updates.shuffle(using: &rng) }
        var mutated = DeltaBatch(updates: updates, covers: covers, base: rng.chance(20) ? vector() : batch.base)
        mutated.proofs = rng.chance(50) ? batch.proofs.map { mutate($0) } : batch.proofs
        return mutated
    }

    /// A batch's signed run (protocol 1.14) with its counters, and its leaves' counters, at an
    /// edge: the decoder's bounds (a run of at most 512 dots, leaves inside it) and the check's;
    /// and its certificate dropped, cut, with a byte changed, or at its size bound.
    mutating func mutate(_ proof: RunProof) -> RunProof {
        let run = proof.run
        let first = rng.chance(50) ? edge() : run.first
        let last = rng.chance(50) ? first &+ edge() : run.last
        let leaves = proof.leaves.map { leaf in
            rng.chance(50) ? RunLeaf(counter: edge(), field: leaf.field, digest: leaf.digest) : leaf
        }
        return RunProof(
            run: SignedRun(writer: run.writer, first: first, last: last, key: run.key, signature: run.signature),
            leaves: leaves,
            certificate: rng.chance(50) ? mutate(certificate: proof.certificate) : proof.certificate
        )
    }

    mutating func mutate(certificate: [UInt8]?) -> [UInt8]? {
        switch Int.random(in: 0..<4, using: &rng) {
        case 0: return nil
        case 1: return certificate.map { Array($0.prefix(Int.random(in: 0...$0.count, using: &rng))) }
        case 2:
            guard var changed = certificate, !changed.isEmpty else { return certificate }
            changed[Int.random(in: 0..<changed.count, using: &rng)] ^= UInt8.random(in: 1...255, using: &rng)
            return changed
        default: return Array(repeating: 0x30, count: RunProof.maxCertificateBytes)
        }
    }

    mutating func mutate(_ hello: inout Hello) {
        switch Int.random(in: 0..<16, using: &rng) {
        case 0:
            hello.members = MemberSketch(
                registers: (0..<MemberSketch.registerCount).map { _ in
                    rng.chance(70) ? MemberSketch.maxRank : UInt8.random(in: 0...MemberSketch.maxRank, using: &rng)
                }
            )
        case 1: hello.rejoinedAt = edge()
        case 2:
            hello.awaySince = edge()
            if rng.chance(50) { hello.staleSince = edge() }
        case 3: hello.clock = edge()
        case 4: hello.listenPort = edge() % 65_536
        case 5: hello.viewSessions = edge()
        case 6: hello.outsideView.toggle()
        case 7:
            hello.reports.append(
                Hello.Report(nodeID: NodeID(high: rng.next(), low: rng.next()), at: edge(), seen: vector())
            )
        case 8:
            let odd = [
                "[::1]:0", "a:99999", "", ":::", "host", "[x]:1", "1.2.3.4:65535",
                String(repeating: "a", count: 290) + ":1",
            ]
            hello.addresses.append(
                .init(nodeID: NodeID(high: rng.next(), low: rng.next()), address: rng.pick(odd), at: edge())
            )
        case 9: hello.versionVector = vector()
        case 10: hello.folded = vector()
        case 11: hello.resume = vector()
        case 12:
            if rng.chance(34) {
                hello.statements.append(roleStatement())
            } else if rng.chance(50) {
                hello.statements.append(signedWritesStatement())
            } else {
                hello.statements.append(
                    (0..<Int.random(in: 0..<200, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
                )
            }
        case 13: hello.writer = rng.chance(50) ? hello.nodeID : NodeID(high: rng.next(), low: rng.next())
        case 14: hello.role = rng.pick([.peer, .relay, .oneShot])
        default: hello.version = ProtocolVersion(major: 1, minor: UInt32.random(in: 0...14, using: &rng))
        }
    }
}

extension SessionMutator {
    /// A role statement (cluster statement kind 6) laid out as a node reads it, at its extreme
    /// values: the largest stamp, the last of 256 parts, 180 writers each kept to 2^64-1, an
    /// unknown role byte now and then, and a signature of nothing the authority signed, so
    /// every bound of its decoding is met and the signature check drops it.
    mutating func roleStatement() -> [UInt8] {
        var w = ByteWriter()
        let node = NodeID(high: rng.next(), low: rng.next())
        w.byte(6)
        w.raw(node.bytes)
        w.string(String(repeating: "r", count: Int.random(in: 0...64, using: &rng)))
        w.byte(rng.pick([1, 2, 3, 0, 255]))
        w.fixed64(rng.chance(50) ? .max : rng.next())
        w.raw(NodeID(high: rng.next(), low: rng.next()).bytes)
        w.varint(255)
        w.varint(256)
        let writers = rng.chance(50) ? 180 : 181
        w.varint(UInt64(writers))
        for _ in 0..<writers {
            w.fixed64(rng.next())
            w.varint(.max)
        }
        w.data((0..<64).map { _ in UInt8.random(in: 0...255, using: &rng) })
        return w.bytes
    }

    /// A signed-writes statement (kind 7) at its extreme values: on or off (or a flag no node
    /// reads), the largest stamp, the last of 256 parts, 120 writers (or one more) each kept to
    /// 2^64-1, and a signature of nothing the authority signed.
    mutating func signedWritesStatement() -> [UInt8] {
        var w = ByteWriter()
        w.byte(7)
        w.byte(rng.pick([1, 0, 2, 255]))
        w.fixed64(rng.chance(50) ? .max : rng.next())
        w.raw(NodeID(high: rng.next(), low: rng.next()).bytes)
        w.varint(255)
        w.varint(256)
        let writers = rng.chance(50) ? 120 : 121
        w.varint(UInt64(writers))
        for _ in 0..<writers {
            w.raw(NodeID(high: rng.next(), low: rng.next()).bytes)
            w.varint(.max)
        }
        w.data((0..<64).map { _ in UInt8.random(in: 0...255, using: &rng) })
        return w.bytes
    }
}
