public import LansyncCore
import LansyncJSON

/// How a replica overrules the writes of a peer's batch it will not take, the same way in every
/// store: a change past the relay's limits (a ``FieldRefusal``'s reason), and a revoked node's
/// writes after its cut (``RevokedWriters``). Either way the replica writes an overrule of its
/// own that has seen the refused writes and keeps the value the field had without them, so the
/// refusal travels like any edit (Docs/MERGE.md, "Overrules").
///
/// Pure rules: the store supplies the dot and time of the overrule and, for a revocation, the
/// field's history; these decide what the overrule says.
public enum PeerOverrule {
    /// What a revocation asks of one field's merged state.
    public enum Revoked: Equatable, Sendable {
        /// No live write of the field is refused.
        case stands
        /// The field is `_type` and only refused writes gave it a value: a revoked node created
        /// the item after its cut. `_type` stays (an item's type is what the item is); the store
        /// deletes the item instead (``deletionStands(_:revoked:)``).
        case createdByRevoked
        /// These live writes are refused, for `reason` (the cuts' reasons, joined).
        case overrule(refused: Set<Dot>, reason: String)
    }

    /// Overrules in `merged` the versions of `change` a limit refused for `reason`: the new
    /// write keeps the field's current value (`old`'s, null if it had none).
    public static func refuse(
        _ change: FieldChange,
        in merged: inout FieldState,
        old: FieldState?,
        reason: String,
        dot: Dot,
        timestamp: HLCTimestamp
    ) {
        let held = Set(old?.versions.map(\.dot) ?? [])
        merged.overrule(
            rejecting: change.versionDots.filter { !held.contains($0) },
            keeping: old?.shownValue ?? .null,
            reason: reason,
            dot: dot,
            timestamp: timestamp
        )
    }

    /// What `revoked` asks of field `field`'s merged state.
    public static func judge(_ merged: FieldState, field: FieldName, revoked: RevokedWriters) -> Revoked {
        let refused = revoked.refusedDots(in: merged)
        guard !refused.isEmpty else { return .stands }
        if field == .type {
            return merged.shownValue(without: refused) == nil ? .createdByRevoked : .stands
        }
        let reasons = Set(refused.compactMap { revoked.refusal(of: $0)?.reason }).sorted()
        return .overrule(refused: refused, reason: reasons.joined(separator: "; "))
    }

    /// The value a field keeps when its refused writes are overruled: what the replica showed
    /// before, if none of them was in it; else what the field's other live writes show; else the
    /// latest value in its history (`history`, newest first: each write's dot and its JSON) that
    /// no refused write made; else null.
    public static func keptValue(
        without refused: Set<Dot>,
        merged: FieldState,
        old: FieldState?,
        revoked: RevokedWriters,
        history: () throws -> [(dot: Dot, write: String)]
    ) rethrows -> Value {
        if let old, revoked.refusedDots(in: old).isEmpty, let value = old.shownValue { return value }
        if let value = merged.shownValue(without: refused) { return value }
        for (dot, text) in try history() {
            guard revoked.refusal(of: dot) == nil,
                let json = try? JSON(parsing: text), let write = FieldVersion.Write(json: json)
            else { continue }
            switch write {
            case .assign(let value), .overrule(let value, _, _): return value
            case .list: continue
            // An overrule keeps a value; the nearest to "removed" is null.
            case .unset: return .null
            }
        }
        return .null
    }

    /// Whether the deletion of an item a revoked node created stands already (`deleted`, its
    /// `_deleted` field): a write no cut refuses deleted it.
    public static func deletionStands(_ deleted: FieldState?, revoked: RevokedWriters) -> Bool {
        deleted?.versions.contains { $0.write == .assign(.bool(true)) && revoked.refusal(of: $0.dot) == nil } ?? false
    }
}
