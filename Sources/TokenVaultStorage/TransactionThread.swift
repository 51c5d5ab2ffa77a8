import NIOPosix

/// The thread a connection's write transactions run on, as the task executor of the
/// transaction's body (`withTaskExecutorPreference`): the body's calls of the writer continue
/// here, so their statements block this thread alone, never the concurrency pool, and a lock the
/// transaction takes is released on the thread that took it.
package final class TransactionThread: TaskExecutor, Sendable {
    private let pool: NIOThreadPool

    package init() {
        pool = NIOThreadPool(numberOfThreads: 1)
        pool.start()
    }

    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        pool.submit { _ in job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }

    deinit {
        pool.shutdownGracefully { _ in }
    }
}
