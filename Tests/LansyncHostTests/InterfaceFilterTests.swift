import LansyncCore
import LansyncDiscovery
import Testing

/// Which interfaces a node takes mDNS adverts from (Docs/DISCOVERY.md, "Interfaces").
@Suite struct InterfaceFilterTests {
    @Test func containerAndVirtualBridgesAreIgnoredByDefault() {
        let filter = InterfaceFilter()
        for name in ["docker0", "br-3f2a9c", "veth12ab", "virbr0"] { #expect(!filter.allows(name), "\(name)") }
        for name in ["eth0", "enp3s0", "wlan0", "wlp2s0", "tun0", "v1", "lo"] {
            #expect(filter.allows(name), "\(name)")
        }
    }

    @Test func moreCanBeIgnored() {
        let filter = InterfaceFilter(ignoring: ["tun*", "wg0"])
        #expect(!filter.allows("tun0") && !filter.allows("wg0") && !filter.allows("docker0"))
        #expect(filter.allows("wg1") && filter.allows("eth0"))
    }

    /// Naming the interfaces to use replaces the defaults: a Docker bridge named there is used.
    @Test func theInterfacesNamedAreTheOnlyOnes() {
        let filter = InterfaceFilter(only: ["eth*", "docker0"], ignoring: ["eth1"])
        #expect(filter.allows("eth0") && filter.allows("eth1") && filter.allows("docker0"))
        #expect(!filter.allows("wlan0") && !filter.allows("docker1"))
    }
}

/// The order a peer's addresses are dialled in (Docs/DISCOVERY.md, "Both families").
@Suite struct AddressPreferenceTests {
    @Test func globalIPv6ThenIPv4ThenLinkLocal() {
        let hosts = ["169.254.3.4", "fe80::1%eth0", "10.0.0.2", "fd00::2", "2001:db8::7", "10.0.0.2"]
        #expect(
            AddressPreference.ordered(hosts) == ["fd00::2", "2001:db8::7", "10.0.0.2", "fe80::1%eth0", "169.254.3.4"]
        )
    }

    @Test func linkLocalAddressesAreTheScopedOnesAndFe80() {
        for host in ["fe80::1", "FE80::abcd", "febf::1", "fd00::1%wlan0"] {
            #expect(AddressPreference.isLinkLocal(host), "\(host)")
        }
        for host in ["fd00::1", "2001:db8::1", "10.0.0.1", "169.254.1.1", "fec0::1"] {
            #expect(!AddressPreference.isLinkLocal(host), "\(host)")
        }
    }

    @Test func aDiscoveredPeerListsItsAddressesInDiallingOrder() {
        let peer = DiscoveredPeer(nodeID: NodeID(high: 1, low: 2), hosts: ["10.0.0.2", "fd00::2"], port: 7420)
        #expect(peer.hosts == ["fd00::2", "10.0.0.2"] && peer.host == "fd00::2")
    }

    /// Adverts and records are anyone's to publish: a peer keeps at most 16 addresses, the
    /// first in dialling order.
    @Test func aPeerKeepsAtMostSixteenAddresses() {
        let many = (1...40).map { "10.0.0.\($0)" } + ["fd00::1"]
        let peer = DiscoveredPeer(nodeID: NodeID(high: 1, low: 2), hosts: many, port: 7420)
        #expect(peer.hosts.count == DiscoveredPeer.maxAddresses && DiscoveredPeer.maxAddresses == 16)
        #expect(peer.hosts.first == "fd00::1" && peer.hosts.last == "10.0.0.15")
    }
}
