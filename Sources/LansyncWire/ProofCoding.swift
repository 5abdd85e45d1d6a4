import LansyncCore

/// The binary form of a batch's proofs (protocol 1.14, Docs/PROTOCOL.md, "Signed writes"): a
/// count, then each proof: the writer (16 bytes), the run's first and last counters, the key
/// (33 bytes), the signature (64 bytes), the certificate of the key (its length, 0 for none, then
/// its DER, at most ``RunProof/maxCertificateBytes``), and the leaves the batch does not hold,
/// each its counter, field name and digest (32 bytes). Decoding bounds every count and length
/// before it allocates.
enum ProofCoding {
    static func encode(_ proofs: [RunProof], into w: inout ByteWriter) {
        w.varint(UInt64(proofs.count))
        for proof in proofs {
            let run = proof.run
            w.nodeID(run.writer)
            w.varint(run.first)
            w.varint(run.last)
            w.raw(run.key)
            w.raw(run.signature)
            w.data(proof.certificate ?? [])
            w.varint(UInt64(proof.leaves.count))
            for leaf in proof.leaves {
                w.varint(leaf.counter)
                w.string(leaf.field.rawValue)
                leaf.digest.write(to: &w)
            }
        }
    }

    static func decode(_ r: inout ByteReader) throws -> [RunProof] {
        // The smallest proof: writer, two one-byte counters, key, signature, no certificate, no
        // leaves.
        let count = try r.count(minimumSize: 16 + 2 + 33 + 64 + 1 + 1)
        guard count <= WireLimits.maxUpdatesPerBatch else {
            throw WireError.malformed("proofs of more than \(WireLimits.maxUpdatesPerBatch) runs")
        }
        var proofs: [RunProof] = []
        proofs.reserveCapacity(count)
        for _ in 0..<count {
            let writer = try r.nodeID()
            let first = try r.varint()
            let last = try r.varint()
            let key = Array(try r.raw(33))
            let signature = Array(try r.raw(64))
            let run = SignedRun(writer: writer, first: first, last: last, key: key, signature: signature)
            guard run.isWellFormed else { throw WireError.malformed("a proof of a run no member signs") }
            let certificateBytes = try r.count(minimumSize: 1)
            guard certificateBytes <= RunProof.maxCertificateBytes else {
                throw WireError.malformed("a proof's certificate of more than \(RunProof.maxCertificateBytes) bytes")
            }
            let certificate = certificateBytes == 0 ? nil : Array(try r.raw(certificateBytes))
            // The smallest leaf: a one-byte counter, a one-byte name and its length, the digest.
            let leafCount = try r.count(minimumSize: 1 + 2 + 32)
            guard leafCount <= SignedRun.maxLeaves else {
                throw WireError.malformed("a proof of more leaves than a run has")
            }
            var leaves: [RunLeaf] = []
            leaves.reserveCapacity(leafCount)
            for _ in 0..<leafCount {
                let counter = try r.varint()
                let field = try MessageCoder.fieldName(try r.string())
                guard run.contains(counter) else { throw WireError.malformed("a proof's leaf outside its run") }
                guard let leaf = RunLeaf(counter: counter, field: field, digestBytes: try r.raw(32)) else {
                    throw WireError.malformed("a proof's leaf without its digest")
                }
                leaves.append(leaf)
            }
            proofs.append(RunProof(run: run, leaves: leaves, certificate: certificate))
        }
        return proofs
    }
}
