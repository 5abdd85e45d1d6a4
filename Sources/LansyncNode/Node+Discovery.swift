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

// Discovery: advertising this node and dialling the peers mDNS finds.
extension Node {
    /// Advertises this node and dials the peers discovery finds, for as long as they are
    /// advertised or connected. An advert is only a hint: the TLS handshake proves who answers.
    func discover(with discovery: any Discovery, port: Int, transport: Transport) async {
        let advertisement = Advertisement(
            nodeID: info.nodeID,
            clusterID: info.clusterID,
            port: port,
            protocolMajor: ProtocolVersion.current.major,
            machineName: info.nodeName
        )
        let events = discovery.start(advertisement)
        let seen = DiscoveredPeers()
        await withTaskCancellationHandler {
            await withDiscardingTaskGroup { dialers in
                for await event in events {
                    switch event {
                    case .found(let peer):
                        let addresses = peer.hosts.map { PeerAddress(host: $0, port: peer.port) }
                        guard !addresses.isEmpty else { continue }
                        let address = addresses.map(\.description).joined(separator: ", ")
                        await registry.discovered(peer.nodeID, addresses: addresses.map(\.description))
                        await view.learn(peer.nodeID, at: addresses, source: .mdns)
                        switch await seen.found(peer.nodeID, at: addresses) {
                        case .new:
                            metrics.discovery("found")
                            logDiscovery("found node \(peer.nodeID.short) at \(address)", "found", peer.nodeID)
                            dialers.addTask {
                                await self.keepConnected(.discovered(peer.nodeID, seen), transport: transport)
                            }
                        case .again:
                            // Its dial loop, and any session, went on: a flapping advert costs a line.
                            metrics.discovery("found")
                            logDiscovery(
                                "node \(peer.nodeID.short) is advertised again at \(address)",
                                "found",
                                peer.nodeID
                            )
                        case .readdressed:
                            logDiscovery("node \(peer.nodeID.short) is advertised at \(address)", "found", peer.nodeID)
                        case .known:
                            break
                        }
                    case .lost(let node):
                        metrics.discovery("lost")
                        logDiscovery("node \(node.short) is no longer advertised", "lost", node)
                        await seen.lost(node)
                        await registry.undiscovered(node)
                    case .available:
                        metrics.discovery("available")
                        logger.info("mDNS: advertising and browsing \(Advertisement.serviceType) through avahi-daemon")
                        await registry.setDiscoveryState(.running)
                    case .unavailable(let why):
                        metrics.discovery("unavailable")
                        logger.warning("mDNS unavailable: \(why)")
                        await registry.setDiscoveryState(.unavailable(why))
                    }
                }
            }
        } onCancel: {
            discovery.stop()
        }
    }

    /// Logs a peer found or lost on mDNS, within ``discoveryLines``.
    func logDiscovery(_ text: String, _ change: String, _ node: NodeID) {
        let budget = discoveryLines.take()
        guard budget != .drop else { return }
        logger.info(
            "mDNS: \(text)\(budget == .lastThisMinute ? " (no more discovery lines this minute)" : "")",
            metadata: ["event": "discovery", "change": "\(change)", "node": "\(node.text)"]
        )
    }
}
