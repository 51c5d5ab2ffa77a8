import NIOCore

/// Runs a task's jobs on one event loop instead of the cooperative thread pool. `PostgresLink`
/// waits on a blocking thread for async postgres-nio calls; were they tasks on the pool, a pool
/// whose threads all waited that way (a blocking read called from async code) could never run
/// them. The jobs only send a statement and take its rows, which is the loop's own work.
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
