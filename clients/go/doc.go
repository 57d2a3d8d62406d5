// Package client is how an agent service in Go runs a tool call through the
// executor: Call produces an intent and waits for its answer.
//
// # How an agent uses this
//
//  1. Create one Client per process with New; it is safe for concurrent
//     use. Close it on shutdown.
//  2. For every tool call the model emits, choose the idempotency key.
//     The key must be stable across every retry of the same logical call:
//     derive it from the agent run and the step (for example
//     "run-42/step-7/refund"), never from a timestamp or a fresh UUID.
//  3. Call(ctx, wire.Intent{Tool: "payments.refund", Key: key,
//     Args: args}). Tenant defaults to "default"; set it per customer.
//     ID is filled with a fresh emission id when empty.
//  4. Read the answer:
//     - Status "succeeded" or "failed": the tool's outcome. WasReplay
//     tells you the tool was not called again for this intent;
//     OriginalIntentID and OriginalCalledAt name the call that ran.
//     - "conflict": the key was used before with other arguments. Nothing
//     ran. Use a new key, or send the original arguments.
//     - "not_executed": the tool was never reached; calling again with the
//     same key is safe. With the error code "over_share" or "queue_full"
//     (Result.Busy) the executor had no place for the call: Call sends it
//     again itself after Result.RetryAfter (MaxBusyRetries times at most,
//     within ctx), and returns the answer with ErrBusy when it gives up;
//     a caller that gets it should slow down.
//     - "rejected": the intent was invalid (Error.Code says why).
//     - "pending" is never returned by Call on its own: it waits for the
//     terminal answer. If ctx ends first, Call returns the last pending
//     answer together with an error wrapping ErrInDoubt: the key is parked
//     for investigation and a later Call with the same key and arguments
//     will get the final outcome.
//     - A tool with approval: required: Call returns at once with the
//     pending answer (Error.Code "awaiting_approval", ApprovalUntil) and
//     ErrApprovalPending. Nothing ran; a person approves or denies the key
//     with these arguments. Keep the key: a later Call with the same key
//     and arguments gets the outcome once it is decided (the call's, or
//     "failed" approval_denied, or "not_executed" approval_lapsed).
//  5. Retry freely on timeouts and errors with the same key and arguments:
//     that is the point. The executor calls the tool at most once.
package client
