import Foundation
import LansyncJSON
import LansyncNode
import LansyncReplica
import LansyncStore
import LansyncTransport
import NIOCore
import Testing

/// The status model's JSON contract (`status --json`, Docs/CLI.md) and what transport failures say.
@Suite struct StatusAndErrorTests {
    func sample() -> NodeStatus {
        var direct = NodeStatus.Peer(nodeID: "b", name: "bob", path: .direct, connected: true)
        direct.address = "10.0.0.2:7420"
        direct.source = .configured
        direct.lacks = 0
        direct.counters = SessionCounters(sentUpdates: 3)
        return NodeStatus(
            nodeID: "a",
            name: "alice",
            clusterID: "c",
            running: false,
            listen: nil,
            mdns: nil,
            items: 2,
            deleted: 0,
            conflicts: 1,
            digest: "d",
            damaged: nil,
            versionVector: ["a": 3],
            peers: [direct, NodeStatus.Peer(nodeID: "z", name: nil, path: .viaRelay, connected: false)],
            changes: nil,
            rejected: []
        )
    }

    @Test func everyKeyIsPresentWithNullForNoValue() throws {
        let object = try #require(try JSONSerialization.jsonObject(with: Data(sample().json.utf8)) as? [String: Any])
        let keys = [
            "node_id", "name", "cluster_id", "running", "answering", "listen", "api", "mdns", "items", "deleted",
            "conflicts",
            "digest",
            "damaged",
            "version_vector", "peers", "changes", "rejected", "revoked_writes", "refused", "collection", "view",
            "relays", "authority",
        ]
        #expect(Set(object.keys) == Set(keys))
        #expect(object["listen"] is NSNull)
        #expect(object["collection"] is NSNull)
        #expect(object["view"] is NSNull)
        #expect(object["relays"] is NSNull)
        #expect(object["authority"] is NSNull)
        let peers = try #require(object["peers"] as? [[String: Any]])
        #expect(peers[0]["source"] as? String == "static")
        #expect(peers[0]["last_sync"] is NSNull)
        #expect(peers[0]["round_trips_waited"] is NSNull)
        // A node known only through others has no address or session of its own.
        #expect(Set(peers[1].keys) == ["node_id", "name", "path", "connected"])
        #expect(peers[1]["path"] as? String == "via relay")
    }

    @Test func theJSONReadsBackAsItWasWritten() throws {
        var status = sample()
        #expect(try NodeStatus(json: Array(status.json.utf8)) == status)
        status.collection = NodeStatus.Collection(
            liveFields: 12,
            collectableItems: 3,
            collectableFields: 9,
            collectedItems: 40,
            purgedItems: 7,
            fileBytes: 4096,
            freeBytes: 0,
            frontierAt: "2026-11-25T00:00:00Z",
            heldBackBy: "b",
            departed: ["c"]
        )
        #expect(try NodeStatus(json: Array(status.json.utf8)) == status)
        status.answering = false
        #expect(try NodeStatus(json: Array(status.json.utf8)) == status)
        // An answer from a node built before `answering` existed: such a node answered.
        guard case .object(let members) = try JSON(parsing: status.json) else {
            Issue.record("the status is no JSON object")
            return
        }
        status.answering = true
        let older = JSON.object(members.filter { $0.key != "answering" })
        #expect(try NodeStatus(json: Array(older.text.utf8)) == status)
        status.collection?.rejoinedAt = "2026-11-26T00:00:00Z"
        status.collection?.awaySince = "2026-11-20T00:00:00Z"
        #expect(try NodeStatus(json: Array(status.json.utf8)) == status)
        status.view = NodeStatus.View(
            mode: "bounded",
            target: 5,
            active: [.init(nodeID: "a", reason: "chosen"), .init(nodeID: "b", reason: "accepted")],
            passive: 24
        )
        #expect(try NodeStatus(json: Array(status.json.utf8)) == status)
        #expect(
            status.view?.summary
                == "bounded: 2 session(s) of a target of 5 (1 accepted, 1 chosen), 24 more member(s) known"
        )
        status.view?.flood = 3
        #expect(try NodeStatus(json: Array(status.json.utf8)) == status)
        #expect(
            status.view?.summary.hasSuffix("; a change goes over every session within 3 hops of its origin") == true
        )
        status.relays = NodeStatus.Relays(
            current: "10.0.0.2:7420",
            addresses: ["10.0.0.1:7420", "10.0.0.2:7420"],
            failovers: 0,
            lastFailover: nil
        )
        #expect(try NodeStatus(json: Array(status.json.utf8)) == status)
        status.relays?.failovers = 1
        status.relays?.lastFailover = .init(
            from: "10.0.0.1:7420",
            to: "10.0.0.2:7420",
            reason: "cannot connect: refused",
            at: "2026-11-27T22:00:00.000Z"
        )
        #expect(try NodeStatus(json: Array(status.json.utf8)) == status)
        status.relays?.connected = false
        status.relays?.problem = .init(
            reason: "10.0.0.2:7420: cannot connect: refused",
            since: "2026-11-27T22:00:01.000Z"
        )
        #expect(try NodeStatus(json: Array(status.json.utf8)) == status)
        // Every standing of a relay that shares the authority.
        for standing: SettlingStanding in [
            .starting, .holding(epoch: 3), .lapsed(epoch: 3), .following(holder: "r2 abc pid 7 ff", epoch: 4),
            .unreachable("connection refused"),
        ] {
            status.authority = standing
            #expect(try NodeStatus(json: Array(status.json.utf8)) == status, "\(standing)")
        }
        status.authority = .following(holder: "r2 abc pid 7 ff", epoch: 4)
        #expect(
            status.json.contains(
                #""authority":{"epoch":4,"holder":"r2 abc pid 7 ff","reason":null,"standing":"following"}"#
            )
        )
    }

    @Test func transportFailuresSayWhatHappenedNotAnEnumCase() {
        #expect(TransportError.describing(IOError(errnoCode: ECONNRESET, reason: "read")) == "connection reset by peer")
        #expect(TransportError.describing(ChannelError.eof) == "the connection closed")
        #expect(TransportError.describing(ChannelError.connectTimeout(.seconds(5))) == "no answer within 5 s")
        #expect(TransportError.describing(TransportError("the peer sent nothing")) == "the peer sent nothing")
    }
}
