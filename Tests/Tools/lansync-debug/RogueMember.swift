import ArgumentParser
import Crypto
import Foundation
import LansyncCore
import LansyncHost
import LansyncIdentity
import LansyncNode
import LansyncReplica
import LansyncStore
import LansyncTransport
import LansyncWire
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import X509

extension DebugCommand {
    /// Plays a cluster member that misbehaves, with this directory's own certificate: a modified
    /// or buggy lansync, as the chaos suite's attacks need one (Docs/SECURITY.md, "What a member
    /// can and cannot do"). Every message is well formed; what it says is not to be believed.
    ///
    /// Prints, one per line, what the attacked node answered (`hello`, `ack`, `error CODE`,
    /// ...), then `closed` or `open`, and on the last line the seconds the attack took.
    struct RogueMember: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "rogue-member")
        @OptionGroup var data: DataDirectoryOptions
        @Option var peer: PeerAddress
        /// Covers naming this many made-up writers, in batches that carry no field state.
        @Option var fakeWriters = 0
        @Option var writersPerBatch = 50_000
        /// Hellos, one connection each, carrying this many junk statements of 4,096 bytes.
        @Option var junkStatements = 0
        @Option var hellos = 1
        /// One field state whose value is a string this many bytes long (over the 1 MiB limit to
        /// break it).
        @Option var valueBytes = 0
        /// The name the hello gives (escapes such as \e and \a are read as their bytes).
        @Option var name = "rogue"
        /// A hello whose member count has every register at its largest (59): about 2.6e19
        /// members, past `Int` (issue 62).
        @Flag var sketchMax = false
        /// After the hello, an `expect` announcing this many field states, then one batch.
        @Option var expect: UInt64?
        /// After the hello, an error whose text is this (escapes read as their bytes).
        @Option var errorText: String?
        @Option var seconds: Double = 10
        /// A report in this member's name (a node id) gossiped in the hello, saying it has seen
        /// `--forge-seen`: unsigned as a 1.12 hello carries one, and signed with this member's
        /// own key (issue 64).
        @Option var forgeReport: String?
        /// `ID:COUNTER,ID:COUNTER...`: what the forged report says was seen.
        @Option var forgeSeen = ""
        /// `ID:COUNTER,...`: the hello's version vector; with `--hellos N`, hello i claims every
        /// entry plus i (a made-up witness of the node's own writer, issue 64).
        @Option var helloVector: String?
        /// `WRITER:COUNTER`: one write under this dot (another member's writer id, issue 64),
        /// to `--forge-item`'s `--forge-field`, setting `--forge-value` over the write
        /// `--forge-over` (`WRITER:COUNTER`) names; unsigned, or with `--forge-sign` in a run
        /// signed with this member's own key and sent with its certificate. With
        /// `--forge-stranger`, the writer is one of a key made up for the purpose (no member's),
        /// which signs the run, sent with this member's certificate (the writer part of
        /// `--forge-write` is ignored).
        @Option var forgeWrite: String?
        @Option var forgeItem = "forged"
        @Option var forgeField = "title"
        @Option var forgeValue = "forged"
        @Option var forgeOver: String?
        @Flag var forgeSign = false
        @Flag var forgeStranger = false

        func run() async throws {
            let identity = try data.directory.tlsIdentity()
            let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
            let transport = try Transport(identity: identity, group: group)
            let started = ContinuousClock.now
            var hello = Hello(
                nodeID: identity.nodeID,
                clusterID: identity.trust.clusterID,
                role: .peer,
                name: Self.unescaped(name),
                versionVector: VersionVector()
            )
            if sketchMax {
                hello.members = MemberSketch(
                    registers: Array(repeating: MemberSketch.maxRank, count: MemberSketch.registerCount)
                )
            }
            if let forgeReport {
                guard let node = NodeID(text: forgeReport) else {
                    throw ValidationError("--forge-report takes a node id")
                }
                let seen = try Self.vector(forgeSeen)
                let now = WallClock.milliseconds
                hello.reports = [Hello.Report(nodeID: node, at: now, seen: seen)]
                let signer = identity.signer
                let bytes = Hello.SignedReport.signedBytes(cluster: hello.clusterID, nodeID: node, at: now, seen: seen)
                hello.signedReports = [
                    Hello.SignedReport(
                        nodeID: node,
                        at: now,
                        seen: seen,
                        key: signer.publicKey,
                        signature: signer.sign(bytes) ?? []
                    )
                ]
            }
            if let helloVector {
                let claim = try Self.vector(helloVector)
                for step in 0..<UInt64(hellos) {
                    var rogue = hello
                    rogue.versionVector = VersionVector(claim.counters.mapValues { $0 + step })
                    try await exchange(transport, [.hello(rogue)])
                }
            } else if junkStatements > 0 {
                for _ in 0..<hellos {
                    var rogue = hello
                    // Each different (a random start), none signed.
                    let filler = [UInt8](repeating: 0xA5, count: WireLimits.maxStatementBytes - 16)
                    rogue.statements = (0..<junkStatements).map { _ in
                        withUnsafeBytes(of: (UInt64.random(in: 0...UInt64.max), UInt64.random(in: 0...UInt64.max))) {
                            Array($0)
                        } + filler
                    }
                    try await exchange(transport, [.hello(rogue)])
                }
            } else {
                var messages: [Message] = [.hello(hello)]
                var sequence: UInt64 = 0
                if let errorText {
                    messages.append(.error(ProtocolError(.storage, Self.unescaped(errorText))))
                }
                if let expect {
                    messages.append(.expect(fieldStates: expect))
                    var state = FieldState()
                    state.assign(
                        .string("one"),
                        dot: Dot(node: identity.nodeID, counter: 1),
                        timestamp: HLCTimestamp(rawValue: WallClock.milliseconds << 16)
                    )
                    var type = FieldState()
                    type.assign(
                        .string("note"),
                        dot: Dot(node: identity.nodeID, counter: 1),
                        timestamp: HLCTimestamp(rawValue: WallClock.milliseconds << 16)
                    )
                    let key = FieldKey(item: try ItemID("rogue-expect"), field: try FieldName("n"))
                    sequence += 1
                    messages.append(
                        .batch(
                            sequence: sequence,
                            DeltaBatch(
                                updates: [
                                    FieldUpdate(key: key, state: state),
                                    FieldUpdate(key: FieldKey(item: key.item, field: .type), state: type),
                                ],
                                covers: VersionVector([identity.nodeID: 1])
                            )
                        )
                    )
                }
                var left = fakeWriters
                while left > 0 {
                    let count = min(left, writersPerBatch)
                    left -= count
                    var covers: [NodeID: UInt64] = [:]
                    for _ in 0..<count {
                        covers[NodeID(high: .random(in: 1...UInt64.max), low: .random(in: 0...UInt64.max))] = 1
                    }
                    sequence += 1
                    messages.append(.batch(sequence: sequence, DeltaBatch(updates: [], covers: VersionVector(covers))))
                }
                if valueBytes > 0 {
                    var state = FieldState()
                    let dot = Dot(node: identity.nodeID, counter: 1)
                    state.assign(
                        .string(String(repeating: "x", count: valueBytes)),
                        dot: dot,
                        timestamp: HLCTimestamp(rawValue: WallClock.milliseconds << 16)
                    )
                    let key = FieldKey(item: try ItemID("rogue-oversized"), field: try FieldName("big"))
                    var type = FieldState()
                    type.assign(
                        .string("note"),
                        dot: dot,
                        timestamp: HLCTimestamp(rawValue: WallClock.milliseconds << 16)
                    )
                    sequence += 1
                    let updates = [
                        FieldUpdate(key: key, state: state),
                        FieldUpdate(key: FieldKey(item: key.item, field: .type), state: type),
                    ]
                    messages.append(
                        .batch(
                            sequence: sequence,
                            DeltaBatch(updates: updates, covers: VersionVector([identity.nodeID: 1]))
                        )
                    )
                }
                if let forgeWrite {
                    sequence += 1
                    messages.append(.batch(sequence: sequence, try forgedWrite(forgeWrite, identity: identity)))
                }
                // An announced delta stays open (its `done` would end it): status reads it then.
                if sequence > 0, expect == nil { messages.append(.done(versionVector: VersionVector())) }
                try await exchange(transport, messages)
            }
            let elapsed = ContinuousClock.now - started
            print(
                String(
                    format: "seconds %.2f",
                    Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
                )
            )
            try await group.shutdownGracefully()
        }

        /// The batch of `--forge-write`: one field state whose live version is the forged dot's,
        /// having seen `--forge-over`'s write.
        private func forgedWrite(_ text: String, identity: TLSIdentity) throws -> DeltaBatch {
            guard var dot = try Self.vector(text).counters.first.map({ Dot(node: $0.key, counter: $0.value) }) else {
                throw ValidationError("--forge-write takes WRITER:COUNTER")
            }
            let stranger = forgeStranger ? P256.Signing.PrivateKey() : nil
            if let stranger {
                let node = Identity.fingerprint(of: Certificate.PublicKey(stranger.publicKey))
                dot = Dot(node: NodeID(high: node.high, low: UInt64.random(in: 1...UInt64.max)), counter: dot.counter)
            }
            let now = HLCTimestamp(rawValue: WallClock.milliseconds << 16)
            var state = FieldState()
            var covers = VersionVector([dot.node: dot.counter])
            if let forgeOver, let over = try Self.vector(forgeOver).counters.first {
                // Assigned, then overwritten: the state has seen the write it replaces.
                state.assign(.string(""), dot: Dot(node: over.key, counter: over.value), timestamp: now)
                covers.raise(over.key, to: over.value)
            }
            state.assign(.string(forgeValue), dot: dot, timestamp: now)
            let key = FieldKey(item: try ItemID(forgeItem), field: try FieldName(forgeField))
            var batch = DeltaBatch(updates: [FieldUpdate(key: key, state: state)], covers: covers)
            if forgeSign || forgeStranger, let version = state.versions.first(where: { $0.dot == dot }) {
                let root = SignedRun.root(of: [RunLeaf(item: key.item, field: key.field, version: version)])
                let signer = identity.signer
                let bytes = SignedRun.signedBytes(
                    cluster: identity.trust.clusterID,
                    writer: dot.node,
                    first: dot.counter,
                    last: dot.counter,
                    root: root
                )
                let member = stranger.map { MemberSigner(privateKey: $0) } ?? signer
                let run = SignedRun(
                    writer: dot.node,
                    first: dot.counter,
                    last: dot.counter,
                    key: member.publicKey,
                    signature: member.sign(bytes) ?? []
                )
                batch.proofs = [RunProof(run: run, leaves: [], certificate: identity.certificateDER)]
            }
            return batch
        }

        /// Sends `messages` on one connection, printing what comes back.
        private func exchange(_ transport: Transport, _ messages: [Message]) async throws {
            try await DebugCommand.converse(
                transport,
                peer: peer,
                sending: messages.map(Frame.encode),
                seconds: seconds
            )
        }

        /// `ID:COUNTER,...` as a version vector.
        static func vector(_ text: String) throws -> VersionVector {
            var counters: [NodeID: UInt64] = [:]
            for entry in text.split(separator: ",") {
                let parts = entry.split(separator: ":")
                guard parts.count == 2, let id = NodeID(text: String(parts[0])), let counter = UInt64(parts[1]) else {
                    throw ValidationError("not ID:COUNTER: \(entry)")
                }
                counters[id] = counter
            }
            return VersionVector(counters)
        }

        /// `\e`, `\a`, `\r`, `\n`, `\t` and `\xHH` as the bytes they name.
        static func unescaped(_ text: String) -> String {
            var out = ""
            var chars = Array(text)[...]
            while let c = chars.popFirst() {
                guard c == "\\", let next = chars.popFirst() else {
                    out.append(c)
                    continue
                }
                switch next {
                case "e": out.append("\u{1b}")
                case "a": out.append("\u{07}")
                case "r": out.append("\r")
                case "n": out.append("\n")
                case "t": out.append("\t")
                case "x":
                    let hex = String(chars.prefix(2))
                    chars = chars.dropFirst(2)
                    out.unicodeScalars.append(Unicode.Scalar(UInt8(hex, radix: 16) ?? 0x3f))
                default: out.append(next)
                }
            }
            return out
        }
    }
}
