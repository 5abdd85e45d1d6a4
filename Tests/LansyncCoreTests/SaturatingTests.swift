import LansyncCore
import Testing

/// Conversions of figures derived from what peers sent (issue 62): never a trap, whatever the
/// input, and exact where the value fits.
@Suite struct SaturatingTests {
    @Test func doublesOutsideIntAreHeldAtItsBounds() {
        #expect(Int(saturating: 2.6e19) == .max)
        #expect(Int(saturating: -2.6e19) == .min)
        #expect(Int(saturating: .infinity) == .max)
        #expect(Int(saturating: -.infinity) == .min)
        #expect(Int(saturating: .nan) == 0)
        #expect(Int(saturating: 9.223_372_036_854_775_807e18) == .max)
        #expect(Int(saturating: 12.9) == 12)
        #expect(Int(saturating: -12.9) == -12)
        #expect(Int(saturating: 9.2e18) == 9_200_000_000_000_000_000)
    }
}

/// Text from peers on a terminal (issue 62): every control character escaped, line breaks too
/// unless the caller keeps them on purpose, and the line separators and direction marks.
@Suite struct TerminalTextTests {
    @Test func oneLineEscapesEveryBreak() {
        #expect(TerminalText.escaped("a\nb\rc\td") == "a\\u000ab\\u000dc\\u0009d")
        #expect(TerminalText.escaped("x\u{2028}y\u{2029}z") == "x\\u2028y\\u2029z")
        #expect(TerminalText.escaped("m\u{200E}\u{200F}\u{061C}") == "m\\u200e\\u200f\\u061c")
        #expect(TerminalText.escaped("\u{1B}[2K\u{0}\u{7F}\u{9B}") == "\\u001b[2K\\u0000\\u007f\\u009b")
        #expect(TerminalText.escaped("Küche — 实验室 ✓") == "Küche — 实验室 ✓")
    }

    @Test func escapingTwiceChangesNothing() {
        let once = TerminalText.escaped("a\nb\u{1B}\u{2028}")
        #expect(TerminalText.escaped(once) == once)
        #expect(TerminalText.isPlain(once))
    }

    @Test func machineNamesRefuseEveryControl() {
        for bad in ["a\nb", "x\u{0}", "\u{1B}[2K", "r\u{202E}", "i\u{2067}", "c1\u{85}"] {
            #expect(MachineName.problem(with: bad) != nil, "\(bad.unicodeScalars.map(\.value))")
        }
        // Direction marks are common in right-to-left names: allowed, and escaped where shown.
        for good in ["kitchen-2", "\u{200F}מטבח", "line\u{2028}sep"] {
            #expect(MachineName.problem(with: good) == nil, "\(good.unicodeScalars.map(\.value))")
            #expect(TerminalText.isPlain(TerminalText.escaped(good)))
        }
    }
}
