// Package topics names the Kafka topics of one deployment: the five the
// executor reads and writes (intents, control, events, results, dead
// letters) and the meta topic, which of them are internal (never a
// reply_to), and which must share one partition count. What travels on
// them is package wire's; creating and checking the topics and their
// settings on a cluster is package topicadmin's.
package topics
