// Package integration holds the end-to-end suite of the executor. Every
// test runs against the broker named by KAFKA_BROKERS (a real Apache Kafka
// started by deploy/kafka/start) or, when that is unset, against an
// in-process kfake cluster. Each test uses its own topic prefix and group,
// so tests never see each other's records.
//
// Tests that need a real process (kill -9, SIGSTOP, SIGTERM) run the
// executor binary, built once by TestMain with -tags faults so that
// TOOLEXEC_FAULT can stop it at a protocol point.
package integration
