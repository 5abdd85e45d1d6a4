import BenchSQLite
import Foundation

/// One figure: its samples (one per run, or per edit for latencies) and their summary.
struct Figure: Codable {
    var workload: String
    var metric: String
    var unit: String
    var samples: [Double]
    var median: Double
    var min: Double
    var max: Double
    /// Set for latency figures, whose samples are many events rather than a few runs.
    var p99: Double?
    var note: String?

    init(
        _ workload: String,
        _ metric: String,
        unit: String,
        samples: [Double],
        percentiles: Bool = false,
        note: String? = nil
    ) {
        self.workload = workload
        self.metric = metric
        self.unit = unit
        self.samples = samples
        let sorted = samples.sorted()
        median = Self.percentile(sorted, 0.5)
        min = sorted.first ?? .nan
        max = sorted.last ?? .nan
        p99 = percentiles ? Self.percentile(sorted, 0.99) : nil
        self.note = note
    }

    /// Nearest-rank percentile of sorted samples (the median of an even count is the mean of the
    /// middle two).
    static func percentile(_ sorted: [Double], _ p: Double) -> Double {
        guard !sorted.isEmpty else { return .nan }
        if p == 0.5 {
            let mid = sorted.count / 2
            return sorted.count % 2 == 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
        }
        let rank = Int((p * Double(sorted.count)).rounded(.up))
        return sorted[Swift.max(0, Swift.min(sorted.count - 1, rank - 1))]
    }
}

/// The median of some samples, as a figure of them would report it.
func median(_ samples: [Double]) -> Double { Figure.percentile(samples.sorted(), 0.5) }

/// lansync beside something else measured in the same run: Syncthing, or a physical limit.
struct Comparison: Codable {
    var what: String
    var unit: String
    var lansync: Double
    var against: String
    var other: Double
    /// lansync ÷ other.
    var ratio: Double
    var meaning: String
}

/// Everything one run of the runner measured; written as JSON and printed as tables.
struct Report: Codable {
    var date: String
    var machine: MachineInfo
    var lansyncVersion: String
    var syncthingVersion: String?
    var settings: [String: String]
    var figures: [Figure] = []
    var comparisons: [Comparison] = []
    var skipped: [String] = []
    var seconds: Double = 0

    mutating func add(_ figure: Figure) {
        figures.append(figure)
        print(
            "  \(figure.workload)  \(figure.metric): \(Self.format(figure.median)) \(figure.unit)"
                + (figure.samples.count > 1
                    ? " (\(Self.format(figure.min))–\(Self.format(figure.max)), n=\(figure.samples.count))" : "")
        )
        fflushOut()
    }

    func figure(_ workload: String, _ metric: String) -> Figure? {
        figures.first { $0.workload == workload && $0.metric == metric }
    }

    /// Markdown: the figures, then the comparisons, then what was skipped and why.
    var markdown: String {
        var out = "Machine: \(machine.line). lansync \(lansyncVersion)"
        if let syncthingVersion { out += ", Syncthing \(syncthingVersion)" }
        out += ". \(date), \(Int(seconds.rounded())) s in all.\n\n"
        out += "| workload | figure | median | spread (min–max) | n |\n|---|---|---:|---:|---:|\n"
        for f in figures {
            let spread =
                f.p99.map { "p99 \(Self.format($0))" }
                ?? (f.samples.count > 1 ? "\(Self.format(f.min))–\(Self.format(f.max))" : "–")
            out +=
                "| \(f.workload) | \(f.metric)\(f.unit.isEmpty ? "" : " (\(f.unit))") | \(Self.format(f.median)) | \(spread) | \(f.samples.count) |\n"
        }
        if !comparisons.isEmpty {
            out +=
                "\n| side by side | unit | lansync | other | lansync ÷ other | reads as |\n|---|---|---:|---:|---:|---|\n"
            for c in comparisons {
                out +=
                    "| \(c.what) | \(c.unit) | \(Self.format(c.lansync)) | \(c.against): \(Self.format(c.other)) | \(Self.format(c.ratio)) | \(c.meaning) |\n"
            }
        }
        for s in skipped { out += "\nSkipped: \(s)\n" }
        return out
    }

    static func format(_ x: Double) -> String {
        guard x.isFinite else { return "–" }
        let a = abs(x)
        if a >= 10_000 { return String(format: "%.0f", x).withThousands }
        if a >= 100 { return String(format: "%.0f", x) }
        if a >= 10 { return String(format: "%.1f", x) }
        if a >= 1 { return String(format: "%.2f", x) }
        if a == 0 { return "0" }
        return String(format: "%.3g", x)
    }
}

extension String {
    fileprivate var withThousands: String {
        var digits = Array(self)
        var out: [Character] = []
        let negative = digits.first == "-"
        if negative { digits.removeFirst() }
        for (i, c) in digits.enumerated() {
            if i > 0, (digits.count - i) % 3 == 0 { out.append(",") }
            out.append(c)
        }
        return (negative ? "-" : "") + String(out)
    }
}

/// Progress lines reach a pipe (tee, CI logs) as they are printed.
func fflushOut() { fflush(nil) }
