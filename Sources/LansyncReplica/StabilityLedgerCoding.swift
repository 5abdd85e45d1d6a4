public import LansyncCore

/// The stability ledger's binary form in meta `stability` (the same bytes in every store).
public enum StabilityLedgerCoding {
    public static func encode(_ ledger: StabilityLedger) -> [UInt8] {
        var w = ByteWriter()
        w.varint(1)
        w.versionVector(ledger.stable)
        w.varint(ledger.stableAt)
        w.varint(ledger.stableReportedAt)
        w.varint(UInt64(ledger.checkpoints.count))
        for checkpoint in ledger.checkpoints {
            w.versionVector(checkpoint.frontier)
            w.versionVector(checkpoint.join)
            w.varint(checkpoint.at)
            w.varint(checkpoint.reportedAt)
        }
        return w.bytes
    }

    public static func decode(_ bytes: [UInt8]) -> StabilityLedger? {
        var r = ByteReader(bytes)
        do {
            guard try r.varint() == 1 else { return nil }
            let stable = try r.versionVector()
            let stableAt = try r.varint()
            let stableReportedAt = try r.varint()
            let count = try r.varint()
            guard count <= UInt64(StabilityLedger.maxCheckpoints) else { return nil }
            var checkpoints: [StabilityLedger.Checkpoint] = []
            for _ in 0..<count {
                checkpoints.append(
                    .init(
                        frontier: try r.versionVector(),
                        join: try r.versionVector(),
                        at: try r.varint(),
                        reportedAt: try r.varint()
                    )
                )
            }
            return StabilityLedger(
                stable: stable,
                stableAt: stableAt,
                stableReportedAt: stableReportedAt,
                checkpoints: checkpoints
            )
        } catch {
            return nil
        }
    }
}
