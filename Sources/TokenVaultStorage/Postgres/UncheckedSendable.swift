/// A value lent to the task a blocked caller waits for (`PostgresDatabase.waiting`): it is used
/// while its owner's thread is blocked, never by two threads at once.
struct UncheckedSendable<Value>: @unchecked Sendable {
    let value: Value

    init(_ value: Value) { self.value = value }
}
