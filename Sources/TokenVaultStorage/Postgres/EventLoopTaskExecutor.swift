import NIOCore

/// Runs a task's jobs on one event loop instead of the cooperative thread pool: the prepared
/// statements of `PostgresLink.execute`, which run one after the other with no caller woken in
/// between, and the body of `PostgresDatabase.waiting`, whose caller blocks a thread that may be
/// one of the pool's (were the body on the pool, a pool whose threads all blocked that way could
/// never run it). The jobs only send statements and take their rows, which is the loop's own
/// work.
final class EventLoopTaskExecutor: TaskExecutor {
    let loop: any EventLoop

    init(_ loop: any EventLoop) {
        self.loop = loop
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        loop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
