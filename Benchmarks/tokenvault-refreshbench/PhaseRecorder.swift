import Histogram
import Synchronization
import TokenVaultEngine

/// Collects the engine's per-refresh phase timings (`RefreshEngine.Options.timings`) into
/// HdrHistograms, in microseconds, while recording is on.
final class PhaseRecorder: Sendable {
    typealias Microseconds = Histogram<UInt64>

    struct Phases: Sendable {
        var journal = PhaseRecorder.makeHistogram()
        var http = PhaseRecorder.makeHistogram()
        var commit = PhaseRecorder.makeHistogram()
        var total = PhaseRecorder.makeHistogram()
    }

    private struct State {
        var recording = false
        var phases = Phases()
    }

    private let state = Mutex(State())

    /// 1 µs to 60 s, three significant digits.
    static func makeHistogram() -> Microseconds {
        Microseconds(
            lowestDiscernibleValue: 1, highestTrackableValue: 60_000_000, numberOfSignificantValueDigits: .three)
    }

    /// Forgets everything recorded so far and records from now on (the end of the warm-up).
    func start() { state.withLock { $0 = State(recording: true) } }

    /// Stops recording and returns what was recorded.
    func stop() -> Phases {
        state.withLock { state in
            state.recording = false
            return state.phases
        }
    }

    func record(_ timings: RefreshTimings) {
        func micros(_ duration: Duration) -> UInt64 {
            let (seconds, attoseconds) = duration.components
            return UInt64(max(1, seconds * 1_000_000 + attoseconds / 1_000_000_000_000))
        }
        state.withLock { state in
            guard state.recording else { return }
            state.phases.journal.record(micros(timings.journal))
            state.phases.http.record(micros(timings.http))
            state.phases.commit.record(micros(timings.commit))
            state.phases.total.record(micros(timings.journal + timings.http + timings.commit))
        }
    }
}
