package txn

import "time"

// Every literal bound and timeout of the session, with the reason for its
// value. The configurable ones are in Config.

const (
	// resyncRetry paces the fetches of the group's committed offsets
	// after an unconfirmed transaction end.
	resyncRetry = 500 * time.Millisecond

	// stallCheckTimeout bounds one look for hanging transactions (two
	// read-only admin requests and the markers).
	stallCheckTimeout = 10 * time.Second
	// unknownHangingAge multiplies hangingAge for a transaction this
	// member did not record as aborted.
	unknownHangingAge = 2
	// abortedTxnsTTL keeps a transaction this member treated as aborted,
	// far beyond the age at which a remnant is judged hanging.
	abortedTxnsTTL = 24 * time.Hour
)
