import CoreMetrics
import Foundation
import LansyncCore
import LansyncDiscovery
import LansyncIdentity
import LansyncJSON
import LansyncReplica
import LansyncTransport
import LansyncWire
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

// Upkeep: work on the replica itself at start and after batches (signing the writes made before it
// could sign; the relay's settling of conflicts).
extension Node {
    /// Signs, once, this replica's own writes made before it could sign (by a lansync before
    /// protocol 1.14): where the cluster requires signed writes, those the authority had not
    /// seen when it required them would be refused (Docs/SECURITY.md, "Requiring signed writes").
    func signHeldOwnWrites() async {
        let store = self.store
        do {
            let signed = try await io.write { try store.signHeldOwnWrites() }
            if signed > 0 {
                logger.notice("signed \(signed) field version(s) this replica wrote before it could sign its writes")
            }
        } catch {
            logger.error("could not sign the writes this replica made before it could sign: \(error)")
        }
    }

    /// On a relay, after a batch: settles what it brought, one round before the batch is
    /// acknowledged (what came while it ran is settled in a task of its own, so the session waits
    /// on its own batch only). A relay that shares the authority asks the database, so it settles
    /// in a task of its own: the session never waits on it.
    func settleAfterBatch() async {
        guard let authority else { return }
        if authority.gate != nil {
            settleSoon()
            return
        }
        let (settled, more) = await authority.settleOnce()
        if settled > 0 { await announceChange() }
        if more { settleSoon() }
    }

    /// Settles the replica's open conflicts in a task of its own, and tells the sessions of
    /// any settlement (calls while one runs make it look once more: ``Authority/settleAll()``).
    func settleSoon() {
        guard let authority else { return }
        Task {
            if await authority.settleAll() > 0 { await self.announceChange() }
        }
    }
}
