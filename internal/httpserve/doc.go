// Package httpserve holds the HTTP side the processes of the service
// share: the health and metrics endpoints, and a server that runs until it
// is closed. The executor and the reconciler answer /healthz, /readyz and
// /metrics the same way, so probes and scrape configs need not tell them
// apart.
package httpserve
