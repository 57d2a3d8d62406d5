package gateway

import "errors"

var (
	// ErrTenants reports a tenants file that cannot be used.
	ErrTenants = errors.New("gateway: tenants")
	// ErrConfig reports an invalid Config.
	ErrConfig = errors.New("gateway: config")
	// ErrIdempotencyKey reports a missing or malformed Idempotency-Key.
	ErrIdempotencyKey = errors.New("gateway: idempotency key")
)
