import LansyncCore

/// The binary encoding of ``Message`` (protocol 1). Pure and total: ``decode(_:)`` returns a
/// message or throws ``WireError`` for any input, never crashes, and allocates no more than the
/// input's size.
public enum MessageCoder {
    enum Tag: UInt8 {
        case hello = 1, batch = 2, ack = 3, done = 4, summary = 5, error = 6
        /// A batch with a delta base, removal logs and field deltas (protocol 1.2).
        case loggedBatch = 7
        /// The size of the delta now starting (protocol 1.2).
        case expect = 8
        /// A join request and its acceptance (Docs/PROTOCOL.md, "Joining").
        case joinRequest = 9, joinAccepted = 10
        /// A delta's last batch with its `done` (protocol 1.9): a byte saying whether the batch
        /// is logged (as type 7) or not (as type 2), the batch, then the `done`'s vector.
        case finalBatch = 11
        /// What the sender holds beyond what it told, instead of a change passed on; a request
        /// to pass changes on that way; and to pass them on at once again (protocol 1.10).
        case have = 12, prune = 13, graft = 14
        /// How many sessions the changes of the batch that follows crossed (protocol 1.11): a
        /// byte, then that batch as a message of its own.
        case reached = 15
        /// The sender's own signed report (protocol 1.13).
        case report = 16
        /// The signed runs of the batch that follows (protocol 1.14): the proofs, then that batch
        /// as a message of its own.
        case proved = 17
    }

    /// "LNSY": the first bytes of every hello, so a node that reaches something else knows at once.
    static let magic: [UInt8] = Array("LNSY".utf8)

    public static func encode(_ message: Message) -> [UInt8] {
        var w = ByteWriter()
        switch message {
        case .hello(let hello):
            encode(hello, into: &w)
        case let .batch(_, batch) where !batch.proofs.isEmpty, let .finalBatch(_, batch, _) where !batch.proofs.isEmpty:
            encodeProved(message, batch.proofs, into: &w)
        case let .batch(sequence, batch):
            w.byte(batch.base == nil ? Tag.batch.rawValue : Tag.loggedBatch.rawValue)
            BatchCoding.encode(sequence: sequence, batch, into: &w)
        case let .finalBatch(sequence, batch, done):
            w.byte(Tag.finalBatch.rawValue)
            w.byte(batch.base == nil ? 0 : 1)
            BatchCoding.encode(sequence: sequence, batch, into: &w)
            w.versionVector(done)
        case .ack(let sequence):
            w.byte(Tag.ack.rawValue)
            w.varint(sequence)
        case .done(let vv):
            w.byte(Tag.done.rawValue)
            w.versionVector(vv)
        case .summary(let vv):
            w.byte(Tag.summary.rawValue)
            w.versionVector(vv)
        case .expect(let count):
            w.byte(Tag.expect.rawValue)
            w.varint(count)
        case .have(let vv):
            w.byte(Tag.have.rawValue)
            w.versionVector(vv)
        case .prune:
            w.byte(Tag.prune.rawValue)
        case .graft:
            w.byte(Tag.graft.rawValue)
        case let .reached(hops, inner):
            w.byte(Tag.reached.rawValue)
            w.byte(hops)
            w.raw(encode(inner))
        case .report(let report):
            w.byte(Tag.report.rawValue)
            encode(report, into: &w)
        case .joinRequest(let request):
            w.byte(Tag.joinRequest.rawValue)
            w.raw(magic)
            w.string(request.name)
            w.data(request.publicKey)
            w.data(request.proof)
        case .joinAccepted(let accepted):
            w.byte(Tag.joinAccepted.rawValue)
            w.data(accepted.certificate)
            w.data(accepted.authority)
            w.string(accepted.name)
        case .error(let error):
            w.byte(Tag.error.rawValue)
            w.varint(UInt64(error.code.rawValue))
            w.string(error.message)
        }
        return w.bytes
    }

    public static func decode(_ payload: [UInt8]) throws(WireError) -> Message {
        var r = ByteReader(payload)
        do {
            let tagByte = try r.byte()
            guard let tag = Tag(rawValue: tagByte) else { throw WireError.unknownMessageType(tagByte) }
            let message: Message
            switch tag {
            case .hello:
                message = .hello(try decodeHello(&r))
            case .batch, .loggedBatch:
                let (sequence, batch) = try BatchCoding.decode(&r, logged: tag == .loggedBatch)
                message = .batch(sequence: sequence, batch)
            case .finalBatch:
                let logged = try r.byte()
                guard logged <= 1 else { throw WireError.malformed("a final batch neither logged nor plain") }
                let (sequence, batch) = try BatchCoding.decode(&r, logged: logged == 1)
                message = .finalBatch(sequence: sequence, batch, done: try r.versionVector())
            case .ack:
                message = .ack(sequence: try r.varint())
            case .done:
                message = .done(versionVector: try r.versionVector())
            case .summary:
                message = .summary(versionVector: try r.versionVector())
            case .expect:
                let count = try r.varint()
                guard count <= WireLimits.maxAnnouncedFieldStates else {
                    throw WireError.malformed(
                        "an expect of more than \(WireLimits.maxAnnouncedFieldStates) field states"
                    )
                }
                message = .expect(fieldStates: count)
            case .have:
                message = .have(versionVector: try r.versionVector())
            case .prune:
                message = .prune
            case .graft:
                message = .graft
            case .reached:
                message = try decodeReached(&r)
            case .proved:
                message = try decodeProved(&r)
            case .report:
                let report = try decodeSignedReport(&r)
                guard report.seen.counters.count <= WireLimits.maxReportEntries else {
                    throw WireError.malformed("a member report of more than \(WireLimits.maxReportEntries) entries")
                }
                message = .report(report)
            case .joinRequest, .joinAccepted, .error:
                message = try decodeAdmission(tag, &r)
            }
            guard r.isAtEnd else { throw WireError.malformed("trailing bytes after a message") }
            return message
        } catch {
            throw WireError(decoding: error)
        }
    }

    /// A hop count, then the batch it tells of (protocol 1.11).
    private static func decodeReached(_ r: inout ByteReader) throws -> Message {
        let hops = try r.byte()
        guard hops < .max else { throw WireError.malformed("a hop count of 255: at most 254 are told") }
        let rest = Array(try r.raw(r.remaining))
        // Checked before decoding it: hop counts nested in hop counts would recurse as deep as
        // a frame is long.
        guard let inner = rest.first.flatMap(Tag.init(rawValue:)),
            [.batch, .loggedBatch, .finalBatch, .proved].contains(inner)
        else { throw WireError.malformed("a hop count before a message that is not a batch") }
        return .reached(hops: hops, try decode(rest))
    }

    /// A batch's proofs, then the batch as a message of its own (protocol 1.14).
    private static func encodeProved(_ message: Message, _ proofs: [RunProof], into w: inout ByteWriter) {
        w.byte(Tag.proved.rawValue)
        ProofCoding.encode(proofs, into: &w)
        w.raw(encode(message.withoutProofs))
    }

    /// A batch's proofs, then the batch (protocol 1.14).
    private static func decodeProved(_ r: inout ByteReader) throws -> Message {
        let proofs = try ProofCoding.decode(&r)
        let rest = Array(try r.raw(r.remaining))
        // Checked before decoding it, as a hop count's batch (no nesting).
        guard let inner = rest.first.flatMap(Tag.init(rawValue:)), [.batch, .loggedBatch, .finalBatch].contains(inner)
        else { throw WireError.malformed("proofs before a message that is not a batch") }
        return try decode(rest).withProofs(proofs)
    }

    /// The messages of joining and of refusal: a join request and its answer, and an error.
    private static func decodeAdmission(_ tag: Tag, _ r: inout ByteReader) throws -> Message {
        switch tag {
        case .joinRequest:
            guard Array(try r.raw(4)) == magic else {
                throw WireError.malformed("join request without the LNSY magic")
            }
            let name = try Self.name(try r.string())
            let key = try r.data()
            let proof = try r.data()
            guard key.count <= WireLimits.maxJoinBlobBytes, proof.count == 32 else {
                throw WireError.malformed("join request with a bad key or proof")
            }
            return .joinRequest(JoinRequest(name: name, publicKey: Array(key), proof: Array(proof)))
        case .joinAccepted:
            let certificate = try r.data()
            let authority = try r.data()
            guard certificate.count <= WireLimits.maxJoinBlobBytes, authority.count <= WireLimits.maxJoinBlobBytes
            else {
                throw WireError.malformed("join answer with an oversize certificate")
            }
            // What the inviter knows the machine by (an older inviter sends none).
            let name = r.isAtEnd ? "" : try Self.name(try r.string())
            return .joinAccepted(
                JoinAccepted(certificate: Array(certificate), authority: Array(authority), name: name)
            )
        case .error:
            let raw = try r.varint()
            let text = try r.string()
            let code = UInt16(exactly: raw).flatMap(ProtocolError.Code.init(rawValue:)) ?? .unexpectedMessage
            // Shown in `status`, stored with the peer: escaped here, so no terminal, log or
            // store (PostgreSQL refuses a NUL) ever meets a control character from it.
            return .error(
                ProtocolError(code, TerminalText.escaped(String(decoding: text.utf8.prefix(512), as: UTF8.self)))
            )
        default:
            throw WireError.malformed("not a join or error message")
        }
    }

    /// A machine's name from a peer (a hello, a join): at most ``WireLimits/maxNameBytes``, and no
    /// control characters, NUL or direction overrides (``TerminalText/isControl(_:)``: what
    /// `init` and `join` never let a name hold), refused here so that no store, terminal or log
    /// ever sees them (issue 62: a NUL failed every save of the peer on PostgreSQL; a line break
    /// forged rows in `status`). Empty is an older node's "no name".
    static func name(_ text: String) throws(WireError) -> String {
        guard text.utf8.count <= WireLimits.maxNameBytes else { throw WireError.malformed("node name too long") }
        guard !TerminalText.hasControls(text) else {
            throw WireError.malformed("a node name with control characters, a NUL or a direction override")
        }
        return text
    }

    /// Field names from a peer: a user name, or one of the reserved names lansync writes.
    static func fieldName(_ text: String) throws(WireError) -> FieldName {
        if text == FieldName.type.rawValue { return .type }
        if text == FieldName.deleted.rawValue { return .deleted }
        do { return try FieldName(text) } catch { throw WireError.malformed("invalid field name") }
    }
}

extension MessageCoder {
    /// A hello's member reports, within ``WireLimits/maxReports`` and
    /// ``WireLimits/maxReportEntries``.
    static func decodeAddresses(_ r: inout ByteReader) throws -> [Hello.Address] {
        let count = try r.varint()
        guard count <= UInt64(WireLimits.maxAddresses) else { throw WireError.malformed("too many peer addresses") }
        var addresses: [Hello.Address] = []
        for _ in 0..<count {
            let node = try r.nodeID()
            let text = try r.string()
            guard text.utf8.count <= WireLimits.maxAddressBytes else {
                throw WireError.malformed("a peer address too long")
            }
            guard TerminalText.isPlain(text) else {
                throw WireError.malformed("a peer address with control characters")
            }
            addresses.append(Hello.Address(nodeID: node, address: text, at: try r.varint()))
        }
        return addresses
    }

    /// The reports a hello carries: the longest prefix within ``WireLimits/maxReports`` reports
    /// and ``WireLimits/maxReportEntries`` vector entries, the limits ``decodeReports(_:)``
    /// holds a peer to. (Cutting by count alone, a relay of a few hundred members sent hellos
    /// with more entries than that, 512 reports of a thousand writers each in W10, and every
    /// node refused them as malformed.)
    static func reportsToSend(_ reports: [Hello.Report]) -> ArraySlice<Hello.Report> {
        withinReportLimits(reports) { $0.seen.counters.count }
    }

    /// The longest prefix of `reports` within ``WireLimits/maxReports`` reports and
    /// ``WireLimits/maxReportEntries`` vector entries (each report's `entries`).
    static func withinReportLimits<Report>(_ reports: [Report], entries: (Report) -> Int) -> ArraySlice<Report> {
        var total = 0
        var end = reports.startIndex
        while end < min(reports.endIndex, WireLimits.maxReports) {
            total += entries(reports[end])
            guard total <= WireLimits.maxReportEntries else { break }
            end += 1
        }
        return reports[..<end]
    }

    static func decodeReports(_ r: inout ByteReader) throws -> [Hello.Report] {
        let count = try r.varint()
        guard count <= UInt64(WireLimits.maxReports) else { throw WireError.malformed("too many member reports") }
        var reports: [Hello.Report] = []
        var entries = 0
        for _ in 0..<count {
            let report = Hello.Report(nodeID: try r.nodeID(), at: try r.varint(), seen: try r.versionVector())
            entries += report.seen.counters.count
            guard entries <= WireLimits.maxReportEntries else {
                throw WireError.malformed("member reports of more than \(WireLimits.maxReportEntries) entries")
            }
            reports.append(report)
        }
        return reports
    }

    /// The signed reports a hello carries: the longest prefix within the limits that bound the
    /// unsigned ones (``reportsToSend(_:)``), which ``decodeSignedReports(_:)`` holds a peer to.
    static func signedReportsToSend(_ reports: [Hello.SignedReport]) -> ArraySlice<Hello.SignedReport> {
        withinReportLimits(reports) { $0.seen.counters.count }
    }

    static func encode(_ report: Hello.SignedReport, into w: inout ByteWriter) {
        w.nodeID(report.nodeID)
        w.varint(report.at)
        w.versionVector(report.seen)
        // Fixed sizes: a key or signature of another size is refused on decoding, and one made
        // here always has them.
        w.raw(report.key.count == Hello.SignedReport.keyBytes ? report.key : [UInt8](repeating: 0, count: 33))
        w.raw(
            report.signature.count == Hello.SignedReport.signatureBytes
                ? report.signature : [UInt8](repeating: 0, count: 64)
        )
    }

    static func decodeSignedReport(_ r: inout ByteReader) throws(DecodingError) -> Hello.SignedReport {
        Hello.SignedReport(
            nodeID: try r.nodeID(),
            at: try r.varint(),
            seen: try r.versionVector(),
            key: Array(try r.raw(Hello.SignedReport.keyBytes)),
            signature: Array(try r.raw(Hello.SignedReport.signatureBytes))
        )
    }

    static func decodeSignedReports(_ r: inout ByteReader) throws -> [Hello.SignedReport] {
        let count = try r.varint()
        guard count <= UInt64(WireLimits.maxReports) else {
            throw WireError.malformed("too many signed member reports")
        }
        var reports: [Hello.SignedReport] = []
        var entries = 0
        for _ in 0..<count {
            let report = try decodeSignedReport(&r)
            entries += report.seen.counters.count
            guard entries <= WireLimits.maxReportEntries else {
                throw WireError.malformed("signed member reports of more than \(WireLimits.maxReportEntries) entries")
            }
            reports.append(report)
        }
        return reports
    }
}
