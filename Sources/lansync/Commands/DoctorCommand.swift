import ArgumentParser
import LansyncHost

/// `lansync doctor`: why a peer does not appear, in plain words with the fix.
struct DoctorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "doctor",
        abstract: "Check why machines do not find or reach each other, and say what to do.",
        discussion: """
            Runs the checklist of Docs/DISCOVERY.md: whether a node runs on this directory; whether \
            the Avahi daemon and D-Bus answer; which lansync adverts the LAN carries (this node's \
            own among them, and those of other clusters), listening for 3 s; and every address known \
            for every member, tried over TCP (connected, nothing listening, no answer, no route), \
            with the node's last error for it. Works whether or not the node runs. Exit status 0 \
            if nothing is wrong, 1 if something is.
            """
    )

    @OptionGroup var data: DataDirectoryOptions
    @Flag(
        help: "Print one JSON object: {\"findings\": [{\"topic\", \"verdict\", \"says\", \"fix\"}], \"problems\": N}."
    )
    var json = false

    func run() async throws {
        let replica = try LocalReplica(data.directory)
        let findings = try await Doctor.run(replica)
        let problems = findings.filter { $0.verdict == .problem }.count
        if json {
            print(Doctor.jsonText(findings))
        } else {
            let width = min(14, findings.map(\.topic.count).max() ?? 0)
            for finding in findings {
                let verdict = finding.verdict == .problem ? "PROBLEM" : finding.verdict.rawValue
                let pad = { (text: String, width: Int) in
                    text + String(repeating: " ", count: max(0, width - text.count))
                }
                // Each finding is one line, and its fix another: a peer's name or error inside
                // either is escaped whole, so it cannot print a line of its own (issue 62).
                print(Render.line("\(pad(verdict, 8))\(pad(Render.line(finding.topic), width))  \(finding.says)"))
                if let fix = finding.fix, finding.verdict != .ok {
                    print(String(repeating: " ", count: 8 + width + 2) + Render.line("fix: \(fix)"))
                }
            }
        }
        if problems > 0 {
            throw CLIError("\(problems) problem(s) found: each line marked PROBLEM says what to do")
        }
    }
}
