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
