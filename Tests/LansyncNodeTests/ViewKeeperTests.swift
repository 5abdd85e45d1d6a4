import LansyncCore
import LansyncTestSupport
import Testing

@testable import LansyncNode

/// What the running node's view keeper makes of sessions that come and go (Docs/SCALE.md).
@Suite struct ViewKeeperTests {
    /// Two members dial each other at once: the registry keeps the newer connection and closes
    /// the older (``PeerRegistry/claim``). The older one's end must leave the member in the active
    /// view, since the newer session still runs (CI at 541698d saw `lansync_view_active` 0 beside
    /// one live session); the newer one's end takes it out.
    @Test func aSupersededSessionEndingLeavesTheMemberInTheView() async {
        let view = ViewKeeper(me: .node(1), limits: PeerView.Limits())
        let peer = NodeID.node(2)
        await view.opened(peer, dialled: true, alone: false, session: 1)
        await view.opened(peer, dialled: false, alone: false, session: 2)
        await view.ended(peer, session: 1, counted: true, refused: false)
        #expect(await view.current.active[peer] != nil)
        await view.ended(peer, session: 2, counted: true, refused: false)
        #expect(await view.current.active[peer] == nil)
        #expect(await view.current.passive[peer] != nil)
    }

    /// The older session may also end first, before the newer one is counted: the member leaves
    /// for a moment and comes back with the newer one.
    @Test func theOlderSessionEndingFirstStillLeavesTheNewerCounted() async {
        let view = ViewKeeper(me: .node(1), limits: PeerView.Limits())
        let peer = NodeID.node(2)
        await view.opened(peer, dialled: true, alone: false, session: 1)
        await view.ended(peer, session: 1, counted: true, refused: false)
        await view.opened(peer, dialled: false, alone: false, session: 2)
        #expect(await view.current.active[peer] != nil)
        await view.ended(peer, session: 2, counted: true, refused: false)
        #expect(await view.current.active[peer] == nil)
    }
}
