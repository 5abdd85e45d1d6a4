import LansyncCore
import LansyncDiscovery
import LansyncNode
import Testing

@testable import LansyncHost

/// `lansync doctor`'s judgement (``Doctor/findings(status:members:survey:probes:)``), a pure
/// function, on made-up surveys and probes: what the real binary cannot easily be made to show.
@Suite struct DoctorJudgementTests {
    let me = NodeID(high: 1, low: 1)
    let cluster = NodeID(high: 9, low: 9)
    let other = NodeID(high: 2, low: 2)

    func status(mdns: DiscoveryState = .running, peers: [NodeStatus.Peer] = []) -> NodeStatus {
        NodeStatus(
            nodeID: me.text,
            name: "me",
            clusterID: cluster.text,
            running: true,
            listen: "10.0.0.1:7420",
            mdns: mdns,
            items: 0,
            deleted: 0,
            conflicts: 0,
            digest: "",
            damaged: nil,
            versionVector: [:],
            peers: peers,
            changes: nil,
            rejected: []
        )
    }

    func advert(_ node: NodeID, host: String, ipv6: Bool = false) -> Sighting {
        Sighting(
            service: "lansync-\(node.text)",
            interface: "eth0",
            ipv6: ipv6,
            host: host,
            port: 7420,
            node: node,
            cluster: cluster,
            protocolMajor: 1
        )
    }

    /// The discovery state travels in the status JSON as the text it always had, and reads back
    /// as the same state: `doctor` judges the state, not a string.
    @Test func theDiscoveryStateReadsBackFromItsText() throws {
        for state: DiscoveryState in [.starting, .running, .unavailable("the system D-Bus does not answer"), .off] {
            #expect(DiscoveryState(text: state.description) == state)
            var node = status(mdns: state)
            node.running = true
            let read = try NodeStatus(json: Array(node.json.utf8))
            #expect(read.mdns == state, "\(state)")
        }
        #expect(DiscoveryState.off.description == "off (--no-mdns)" && DiscoveryState.running.description == "running")
    }

    @Test func ownAdvertMissingIsAProblemAndAMembersAdvertIsTried() {
        let survey = Survey(sightings: [advert(other, host: "10.0.0.2")])
        let addresses = Doctor.addresses(status: status(), survey: survey)
        #expect(addresses == ["10.0.0.2:7420"])
        let findings = Doctor.findings(
            status: status(),
            members: [],
            survey: survey,
            probes: ["10.0.0.2:7420": .refused]
        )
        #expect(
            findings.contains {
                $0.topic == "advert" && $0.verdict == .problem && $0.says.contains("own advert is not seen")
            }
        )
        #expect(
            findings.contains {
                $0.topic == String(other.text.prefix(7)) && $0.says.contains("nothing listens at 10.0.0.2:7420")
            }
        )
    }

    /// A peer that answers but refuses a session: the fix follows the code of its last error.
    @Test(arguments: [
        (
            "wrong-cluster (permanent): the peer is a node of another cluster (x); this node's cluster is y",
            "another cluster"
        ),
        ("revoked (permanent): this node's certificate was revoked", "revoked one of the two"),
        ("protocol-version (permanent): peer speaks protocol 2.0, this node 1.8", "upgrade the older one"),
        (
            "identity-mismatch (permanent): hello claims node a but the certificate proves b",
            "another node than the one named"
        ),
    ])
    func aPeerThatRefusesASessionGetsTheFixForWhy(error: String, fix: String) {
        var peer = NodeStatus.Peer(nodeID: other.text, name: "b", path: .direct, connected: false)
        peer.address = "10.0.0.2:7420"
        peer.source = .configured
        peer.lastError = error
        let findings = Doctor.findings(
            status: status(peers: [peer]),
            members: [],
            survey: Survey(sightings: []),
            probes: ["10.0.0.2:7420": .open]
        )
        let finding = findings.first { $0.topic == "b" }
        #expect(finding?.verdict == .problem && finding?.fix?.contains(fix) == true, "\(findings)")
        #expect(Doctor.fix(refusal: "timeout (temporary): peer silent for 60 s") == nil)
    }

    /// Issue 63: a node given a relay says whether it has a session with it; without one, a
    /// problem with the node's reason and the fix for it. A node given no relay says nothing.
    @Test func aNodeWithoutASessionWithItsRelayIsAProblemWithItsReason() {
        var withRelay = status()
        #expect(Doctor.relayFinding(withRelay) == nil, "no relay given, nothing to say")
        withRelay.relays = NodeStatus.Relays(
            current: "10.0.0.9:7420",
            addresses: ["10.0.0.9:7420"],
            failovers: 0,
            lastFailover: nil
        )
        #expect(Doctor.relayFinding(withRelay)?.verdict == .ok)
        let cases = [
            ("10.0.0.9:7420: cannot connect: connection refused", "that this machine can reach"),
            ("10.0.0.9:7420: busy (temporary): this node serves 128 sessions already", "--max-sessions"),
            ("10.0.0.9:7420: revoked (permanent): this node's certificate was revoked", "revoked one of the two"),
        ]
        for (reason, fix) in cases {
            withRelay.relays?.connected = false
            withRelay.relays?.problem = .init(reason: reason, since: "2026-12-06T10:00:00.000Z")
            let finding = Doctor.relayFinding(withRelay)
            #expect(finding?.verdict == .problem, "\(reason)")
            #expect(
                finding?.says.contains("since 2026-12-06T10:00:00.000Z: \(reason)") == true,
                "\(String(describing: finding))"
            )
            #expect(finding?.fix?.contains(fix) == true, "\(String(describing: finding))")
        }
        let findings = Doctor.findings(status: withRelay, members: [], survey: Survey(sightings: []), probes: [:])
        #expect(findings.contains { $0.topic == "relay" && $0.verdict == .problem })
    }

    /// The address an inbound session came from is a client's port, never tried; a link-local
    /// advert is tried through the interface it was seen on; every address the node was given
    /// for a peer (`advertised`) is tried.
    @Test func inboundAddressesAreNotTriedAndLinkLocalOnesAreTriedWithTheirScope() {
        var inbound = NodeStatus.Peer(nodeID: other.text, name: "b", path: .direct, connected: false)
        inbound.address = "10.0.0.2:51234"
        inbound.source = .inbound
        let survey = Survey(sightings: [advert(me, host: "10.0.0.1"), advert(other, host: "fe80::1", ipv6: true)])
        #expect(Doctor.addresses(status: status(peers: [inbound]), survey: Survey(sightings: [])).isEmpty)
        let scoped = "[fe80::1%\(survey.sightings[1].interface)]:7420"
        #expect(Doctor.addresses(status: status(peers: [inbound]), survey: survey) == [scoped])
        let alone = Doctor.findings(
            status: status(peers: [inbound]),
            members: [],
            survey: Survey(sightings: []),
            probes: [:]
        )
        #expect(alone.contains { $0.topic == "b" && $0.says.contains("no address known") })
        let findings = Doctor.findings(
            status: status(peers: [inbound]),
            members: [],
            survey: survey,
            probes: [scoped: .refused]
        )
        #expect(
            findings.contains { $0.topic == "b" && $0.says.contains("nothing listens at \(scoped)") },
            "\(findings)"
        )
        #expect(findings.contains { $0.topic == "advert" && $0.verdict == .ok })

        var found = NodeStatus.Peer(nodeID: other.text, name: "b", path: .direct, connected: false)
        found.address = "[fd00::2]:7420"
        found.advertised = ["[fd00::2]:7420", "10.0.0.2:7420"]
        found.source = .mdns
        #expect(Doctor.addresses(status: status(peers: [found]), survey: Survey(sightings: [])) == found.advertised)
    }

    /// A node that listens on loopback only cannot be reached by any other machine: a problem,
    /// with the fix; on every interface, or on an address of the LAN, it is fine.
    @Test func aNodeListeningOnLoopbackOnlyIsAProblem() {
        for (listen, fine) in [
            ("127.0.0.1:7420", false), ("[::1]:7420", false), ("[::]:7420", true), ("0.0.0.0:7420", true),
            ("10.0.0.1:7420", true), ("[fd00::1]:7420", true),
        ] {
            var node = status()
            node.listen = listen
            let finding = Doctor.nodeFinding(node)
            #expect((finding.verdict == .ok) == fine, "\(listen): \(finding)")
            #expect(fine || finding.fix?.contains("[::]:7420") == true, "\(listen): \(finding)")
        }
    }

    /// Loopback is judged by what the node was asked to do: with mDNS off and only peers on
    /// this machine (the README's tour) it is fine; an advert, or a peer given on another
    /// machine, needs an address that machine can dial.
    @Test func loopbackIsAProblemOnlyWhereAnAdvertOrAFarPeerNeedsMore() {
        func peer(_ address: String) -> NodeStatus.Peer {
            var peer = NodeStatus.Peer(nodeID: other.text, name: "b", path: .direct, connected: true)
            peer.address = address
            peer.source = .configured
            return peer
        }
        for (mdns, peers, fine) in [
            (DiscoveryState.off, [peer("127.0.0.1:7430")], true),
            (.off, [], true),
            (.off, [peer("[::1]:7430")], true),
            (.off, [peer("10.0.0.2:7420")], false),
            (.running, [peer("127.0.0.1:7430")], false),
            (.unavailable("the system D-Bus does not answer"), [], false),
        ] {
            var node = status(mdns: mdns, peers: peers)
            node.listen = "127.0.0.1:7420"
            let finding = Doctor.nodeFinding(node)
            #expect((finding.verdict == .ok) == fine, "\(mdns), \(peers.map(\.address)): \(finding)")
        }
    }

    /// Under --no-mdns there is no daemon or advert to judge: no mDNS problem (the survey is not
    /// even made), one note saying why; a node that uses mDNS still gets the daemon's finding.
    @Test func aNodeWithoutMDNSGetsNoMDNSFindings() {
        let noDBus = Survey(unavailable: "the system D-Bus does not answer", noDBus: true)
        var off = status(mdns: .off)
        off.listen = "127.0.0.1:7420"
        let findings = Doctor.findings(status: off, members: [], survey: noDBus, probes: [:])
        #expect(!findings.contains { $0.verdict == .problem }, "\(findings)")
        #expect(findings.filter { $0.topic == "mdns" }.map(\.verdict) == [.note], "\(findings)")
        let on = Doctor.findings(status: status(), members: [], survey: noDBus, probes: [:])
        #expect(on.contains { $0.topic == "mdns" && $0.verdict == .problem }, "\(on)")
    }

    /// A node that runs but did not answer `status` in time is a problem of its own: not "no
    /// node runs", and not judged by a listening address it never gave.
    @Test func aNodeThatDoesNotAnswerIsAProblem() {
        var node = status()
        node.listen = nil
        node.answering = false
        let finding = Doctor.nodeFinding(node)
        #expect(finding.verdict == .problem && finding.says.contains("did not answer"), "\(finding)")
    }

    /// A member's address that answers while no session is shown: "the node dials within
    /// seconds" only from a node that answered; from the replica file (no node, or one that did
    /// not answer) the finding says what it cannot know.
    @Test func anAddressThatAnswersIsJudgedByWhoseStatusItIs() {
        let survey = Survey(sightings: [advert(me, host: "10.0.0.1"), advert(other, host: "10.0.0.2")])
        func says(_ node: NodeStatus) -> String? {
            Doctor.findings(status: node, members: [], survey: survey, probes: ["10.0.0.2:7420": .open])
                .first { $0.topic == String(other.text.prefix(7)) }?.says
        }
        var node = status()
        #expect(says(node)?.contains("the node dials within seconds") == true, "\(says(node) ?? "none")")
        node.answering = false
        #expect(says(node)?.contains("this node did not answer") == true, "\(says(node) ?? "none")")
        node.running = false
        node.answering = true
        #expect(says(node)?.contains("no node runs here") == true, "\(says(node) ?? "none")")
    }

    @Test func clockOffsetsAreNotesFromAMinuteAndProblemsFromADay() {
        #expect(Doctor.clockFinding(name: "b", offset: 59_000) == nil)
        #expect(Doctor.clockFinding(name: "b", offset: 120_000)?.verdict == .note)
        let day = Doctor.clockFinding(name: "b", offset: 2 * 86_400_000)
        #expect(day?.verdict == .problem && day?.says.contains("2 day(s) ahead of") == true)
    }

    @Test func noDaemonMeansNoAdvertChecks() {
        let survey = Survey(unavailable: "cannot reach the Avahi daemon over D-Bus", noDBus: true)
        let findings = Doctor.findings(status: status(), members: [], survey: survey, probes: [:])
        #expect(findings.contains { $0.topic == "mdns" && $0.verdict == .problem && $0.says.contains("D-Bus") })
        #expect(!findings.contains { $0.topic == "advert" })
    }

    @Test func addressesSplitIntoHostAndPort() {
        #expect(AddressProbe.split("10.0.0.2:7420")! == ("10.0.0.2", 7420))
        #expect(AddressProbe.split("[fd00::2]:7420")! == ("fd00::2", 7420))
        #expect(
            AddressProbe.split("host") == nil && AddressProbe.split("h:0") == nil
                && AddressProbe.split("[::1]7420") == nil
        )
    }
}
