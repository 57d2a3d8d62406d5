package executor

import (
	"errors"

	"github.com/atmostonce/toolexec/executor/txn"
)

// The executor's sentinel errors.

// ErrFatal wraps errors after which the executor must stop, its
// transaction session's included (the same value as txn.ErrFatal).
var ErrFatal = txn.ErrFatal

// errRetryTick marks a tick that could not be decided for a passing
// reason (a restore that timed out, a partition with a gap): nothing was
// produced, so the polled records are rewound and decided again later.
var errRetryTick = errors.New("executor: retry tick")
