package executor

import (
	"errors"

	"github.com/atmostonce/toolexec/executor/txn"
	"github.com/atmostonce/toolexec/kafkaretry"
)

// The executor's sentinel errors.

// ErrFatal wraps errors after which the executor must stop, its
// transaction session's included (the same value as txn.ErrFatal).
var ErrFatal = txn.ErrFatal

// errRetryTick marks a tick that could not be decided for a passing
// reason (a restore that timed out, a partition with a gap): nothing was
// produced, so the polled records are rewound and decided again later.
var errRetryTick = errors.New("executor: retry tick")

// Outage reports whether err, from New or Run, is the broker's absence
// outlasting BrokerOutage (a transport failure, no coordinator) rather
// than a verdict on this member or its configuration: a new executor,
// started once the broker is back, goes on where this one stopped, as a
// restarted process would.
func Outage(err error) bool { return kafkaretry.Retriable(err) }
