package sim

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The error codes Kafka documents for each request the product (and the
// simulation's own log mover) sends, and the codes any request may be
// answered with.
//
// Sources, per code:
//
//   - fromKafka: the "Possible error codes" comment of the request's
//     response class in Apache Kafka (clients/src/main/java/org/apache/
//     kafka/common/requests/<Name>Response.java, read at trunk 1eb76443,
//     2024-09); JoinGroup, SyncGroup, DescribeConfigs, DescribeProducers,
//     DescribeTransactions and ListTransactions have none;
//   - fromKmsg: franz-go's kmsg field documentation of the response's
//     ErrorCode fields (github.com/twmb/franz-go/pkg/kmsg v1.15.1,
//     generated from Kafka's JSON specs with franz-go's notes), names
//     mapped to kerr's (NOT_LEADER_OR_FOLLOWER is kerr's
//     NOT_LEADER_FOR_PARTITION, KAFKA_STORAGE_EXCEPTION its
//     KAFKA_STORAGE_ERROR, the DeleteRecords comment's UNKNOWN (-1)
//     UNKNOWN_SERVER_ERROR);
//   - fromBoth: both.
//
// anyRequest are the codes any request may be answered with, whatever
// its documentation lists: Kafka's request handler answers an exception
// it does not map with UNKNOWN_SERVER_ERROR for every API
// (KafkaApis.handleError -> AbstractRequest.getErrorResponse, and
// Errors.forException's default). The simulation injects them with
// --codes any (the default), and only the documented ones with --codes
// documented (how the first measurement ran, docs/RELIABILITY.md).

type source uint8

const (
	fromKafka source = iota + 1
	fromKmsg
	fromBoth
	fromAnyRequest
)

func (s source) String() string {
	switch s {
	case fromKafka:
		return "kafka"
	case fromKmsg:
		return "kmsg"
	case fromBoth:
		return "kafka+kmsg"
	case fromAnyRequest:
		return "any request"
	}
	return "?"
}

type documented struct {
	err *kerr.Error
	src source
}

var anyRequest = []*kerr.Error{kerr.UnknownServerError}

// documentedCodes is the table, by request key. Client telemetry
// (GetTelemetrySubscriptions, PushTelemetry: franz-go sends them when the
// broker offers them, KIP-714) is documented in neither source: only lost
// answers, delays and the any-request codes reach it.
var documentedCodes = map[kmsg.Key][]documented{
	kmsg.GetTelemetrySubscriptions: nil,
	kmsg.PushTelemetry:             nil,
	kmsg.OffsetForLeaderEpoch: {
		{kerr.UnknownServerError, fromKafka},
		{kerr.UnknownTopicOrPartition, fromBoth},
		{kerr.NotLeaderForPartition, fromBoth},
		{kerr.ReplicaNotAvailable, fromKafka},
		{kerr.TopicAuthorizationFailed, fromBoth},
		{kerr.KafkaStorageError, fromBoth},
		{kerr.FencedLeaderEpoch, fromBoth},
		{kerr.UnknownLeaderEpoch, fromBoth},
	},
	kmsg.Produce: {
		{kerr.CorruptMessage, fromBoth},
		{kerr.UnknownTopicOrPartition, fromBoth},
		{kerr.NotLeaderForPartition, fromBoth},
		{kerr.MessageTooLarge, fromBoth},
		{kerr.InvalidTopicException, fromKafka},
		{kerr.RecordListTooLarge, fromBoth},
		{kerr.NotEnoughReplicas, fromBoth},
		{kerr.NotEnoughReplicasAfterAppend, fromBoth},
		{kerr.InvalidRequiredAcks, fromBoth},
		{kerr.TopicAuthorizationFailed, fromBoth},
		{kerr.ClusterAuthorizationFailed, fromBoth},
		{kerr.InvalidTimestamp, fromKmsg},
		{kerr.UnsupportedForMessageFormat, fromBoth},
		{kerr.OutOfOrderSequenceNumber, fromKmsg},
		{kerr.DuplicateSequenceNumber, fromKmsg},
		{kerr.InvalidProducerEpoch, fromBoth},
		{kerr.InvalidTxnState, fromKafka},
		{kerr.InvalidProducerIDMapping, fromKafka},
		{kerr.TransactionalIDAuthorizationFailed, fromBoth},
		{kerr.KafkaStorageError, fromKmsg},
		{kerr.UnknownProducerID, fromKmsg},
		{kerr.InvalidRecord, fromKafka},
		{kerr.UnknownTopicID, fromKmsg},
	},
	kmsg.AddPartitionsToTxn: {
		{kerr.UnknownTopicOrPartition, fromBoth},
		{kerr.CoordinatorLoadInProgress, fromBoth},
		{kerr.CoordinatorNotAvailable, fromKafka},
		{kerr.NotCoordinator, fromBoth},
		{kerr.TopicAuthorizationFailed, fromBoth},
		{kerr.InvalidRequest, fromKmsg},
		{kerr.InvalidProducerEpoch, fromBoth},
		{kerr.InvalidTxnState, fromKafka},
		{kerr.InvalidProducerIDMapping, fromBoth},
		{kerr.ConcurrentTransactions, fromKmsg},
		{kerr.TransactionalIDAuthorizationFailed, fromBoth},
		{kerr.OperationNotAttempted, fromKmsg},
		{kerr.ProducerFenced, fromKafka},
	},
	kmsg.AddOffsetsToTxn: {
		{kerr.CoordinatorLoadInProgress, fromKafka},
		{kerr.CoordinatorNotAvailable, fromKafka},
		{kerr.NotCoordinator, fromKafka},
		{kerr.GroupAuthorizationFailed, fromBoth},
		{kerr.InvalidProducerEpoch, fromKafka},
		{kerr.InvalidTxnState, fromKafka},
		{kerr.InvalidProducerIDMapping, fromKafka},
		{kerr.TransactionalIDAuthorizationFailed, fromBoth},
		{kerr.ProducerFenced, fromKafka},
	},
	kmsg.TxnOffsetCommit: {
		{kerr.UnknownTopicOrPartition, fromKmsg},
		{kerr.RequestTimedOut, fromKafka},
		{kerr.OffsetMetadataTooLarge, fromBoth},
		{kerr.CoordinatorLoadInProgress, fromBoth},
		{kerr.CoordinatorNotAvailable, fromBoth},
		{kerr.NotCoordinator, fromBoth},
		{kerr.IllegalGeneration, fromBoth},
		{kerr.InvalidGroupID, fromKmsg},
		{kerr.UnknownMemberID, fromBoth},
		{kerr.RebalanceInProgress, fromKmsg},
		{kerr.InvalidCommitOffsetSize, fromKafka},
		{kerr.TopicAuthorizationFailed, fromKmsg},
		{kerr.GroupAuthorizationFailed, fromBoth},
		{kerr.UnsupportedForMessageFormat, fromKafka},
		{kerr.InvalidProducerEpoch, fromKafka},
		{kerr.TransactionalIDAuthorizationFailed, fromBoth},
		{kerr.FencedInstanceID, fromBoth},
	},
	kmsg.EndTxn: {
		{kerr.CoordinatorLoadInProgress, fromKafka},
		{kerr.CoordinatorNotAvailable, fromKafka},
		{kerr.NotCoordinator, fromKafka},
		{kerr.InvalidRequest, fromKmsg},
		{kerr.InvalidProducerEpoch, fromBoth},
		{kerr.InvalidTxnState, fromBoth},
		{kerr.InvalidProducerIDMapping, fromBoth},
		{kerr.ConcurrentTransactions, fromKmsg},
		{kerr.TransactionalIDAuthorizationFailed, fromBoth},
		{kerr.ProducerFenced, fromKafka},
	},
	kmsg.InitProducerID: {
		{kerr.CoordinatorLoadInProgress, fromBoth},
		{kerr.CoordinatorNotAvailable, fromKafka},
		{kerr.NotCoordinator, fromBoth},
		{kerr.ClusterAuthorizationFailed, fromBoth},
		{kerr.InvalidRequest, fromKmsg},
		{kerr.InvalidProducerEpoch, fromKafka},
		{kerr.InvalidTransactionTimeout, fromKmsg},
		{kerr.ConcurrentTransactions, fromKmsg},
		{kerr.TransactionalIDAuthorizationFailed, fromBoth},
		{kerr.ProducerFenced, fromKafka},
	},
	kmsg.FindCoordinator: {
		{kerr.CoordinatorLoadInProgress, fromKafka},
		{kerr.CoordinatorNotAvailable, fromBoth},
		{kerr.GroupAuthorizationFailed, fromBoth},
		{kerr.InvalidRequest, fromBoth},
		{kerr.TransactionalIDAuthorizationFailed, fromBoth},
	},
	kmsg.JoinGroup: {
		{kerr.CoordinatorLoadInProgress, fromKmsg},
		{kerr.CoordinatorNotAvailable, fromKmsg},
		{kerr.NotCoordinator, fromKmsg},
		{kerr.InconsistentGroupProtocol, fromKmsg},
		{kerr.InvalidGroupID, fromKmsg},
		{kerr.UnknownMemberID, fromKmsg},
		{kerr.InvalidSessionTimeout, fromKmsg},
		{kerr.GroupAuthorizationFailed, fromKmsg},
		{kerr.MemberIDRequired, fromKmsg},
		{kerr.GroupMaxSizeReached, fromKmsg},
	},
	kmsg.SyncGroup: {
		{kerr.UnknownServerError, fromKmsg},
		{kerr.CoordinatorNotAvailable, fromKmsg},
		{kerr.NotCoordinator, fromKmsg},
		{kerr.IllegalGeneration, fromKmsg},
		{kerr.InvalidGroupID, fromKmsg},
		{kerr.UnknownMemberID, fromKmsg},
		{kerr.RebalanceInProgress, fromKmsg},
		{kerr.GroupAuthorizationFailed, fromKmsg},
	},
	kmsg.Heartbeat: {
		{kerr.CoordinatorNotAvailable, fromBoth},
		{kerr.NotCoordinator, fromBoth},
		{kerr.IllegalGeneration, fromBoth},
		{kerr.InvalidGroupID, fromKmsg},
		{kerr.UnknownMemberID, fromBoth},
		{kerr.RebalanceInProgress, fromBoth},
		{kerr.GroupAuthorizationFailed, fromBoth},
	},
	kmsg.LeaveGroup: {
		{kerr.CoordinatorLoadInProgress, fromBoth},
		{kerr.CoordinatorNotAvailable, fromBoth},
		{kerr.NotCoordinator, fromBoth},
		{kerr.InvalidGroupID, fromKmsg},
		{kerr.UnknownMemberID, fromBoth},
		{kerr.GroupAuthorizationFailed, fromBoth},
		{kerr.FencedInstanceID, fromKafka},
	},
	kmsg.OffsetCommit: {
		{kerr.UnknownTopicOrPartition, fromBoth},
		{kerr.RequestTimedOut, fromKafka},
		{kerr.OffsetMetadataTooLarge, fromBoth},
		{kerr.CoordinatorLoadInProgress, fromBoth},
		{kerr.CoordinatorNotAvailable, fromBoth},
		{kerr.NotCoordinator, fromBoth},
		{kerr.IllegalGeneration, fromBoth},
		{kerr.InvalidGroupID, fromKmsg},
		{kerr.UnknownMemberID, fromBoth},
		{kerr.RebalanceInProgress, fromBoth},
		{kerr.InvalidCommitOffsetSize, fromBoth},
		{kerr.TopicAuthorizationFailed, fromBoth},
		{kerr.GroupAuthorizationFailed, fromBoth},
		{kerr.InvalidTxnState, fromKafka},
		{kerr.InvalidProducerIDMapping, fromKafka},
		{kerr.GroupIDNotFound, fromKafka},
		{kerr.StaleMemberEpoch, fromKafka},
	},
	kmsg.OffsetFetch: {
		{kerr.UnknownTopicOrPartition, fromBoth},
		{kerr.CoordinatorLoadInProgress, fromBoth},
		{kerr.CoordinatorNotAvailable, fromBoth},
		{kerr.NotCoordinator, fromBoth},
		{kerr.InvalidGroupID, fromKmsg},
		{kerr.UnknownMemberID, fromKafka},
		{kerr.TopicAuthorizationFailed, fromKafka},
		{kerr.GroupAuthorizationFailed, fromBoth},
		{kerr.UnstableOffsetCommit, fromBoth},
		{kerr.StaleMemberEpoch, fromKafka},
	},
	kmsg.Fetch: {
		{kerr.UnknownServerError, fromKafka},
		{kerr.OffsetOutOfRange, fromBoth},
		{kerr.CorruptMessage, fromKafka},
		{kerr.UnknownTopicOrPartition, fromBoth},
		{kerr.NotLeaderForPartition, fromBoth},
		{kerr.ReplicaNotAvailable, fromBoth},
		{kerr.TopicAuthorizationFailed, fromBoth},
		{kerr.UnsupportedVersion, fromKmsg},
		{kerr.KafkaStorageError, fromBoth},
		{kerr.FetchSessionIDNotFound, fromKmsg},
		{kerr.InvalidFetchSessionEpoch, fromKmsg},
		{kerr.FencedLeaderEpoch, fromBoth},
		{kerr.UnknownLeaderEpoch, fromBoth},
		{kerr.UnsupportedCompressionType, fromBoth},
		{kerr.UnknownTopicID, fromBoth},
		{kerr.InconsistentTopicID, fromKafka},
		{kerr.FetchSessionTopicIDError, fromKafka},
		{kerr.OffsetMovedToTieredStorage, fromKmsg},
	},
	kmsg.ListOffsets: {
		{kerr.UnknownServerError, fromKafka},
		{kerr.UnknownTopicOrPartition, fromBoth},
		{kerr.LeaderNotAvailable, fromBoth},
		{kerr.NotLeaderForPartition, fromBoth},
		{kerr.ReplicaNotAvailable, fromBoth},
		{kerr.TopicAuthorizationFailed, fromBoth},
		{kerr.InvalidRequest, fromKmsg},
		{kerr.UnsupportedForMessageFormat, fromBoth},
		{kerr.KafkaStorageError, fromBoth},
		{kerr.FencedLeaderEpoch, fromBoth},
		{kerr.UnknownLeaderEpoch, fromBoth},
		{kerr.OffsetNotAvailable, fromBoth},
	},
	kmsg.Metadata: {
		{kerr.UnknownTopicOrPartition, fromBoth},
		{kerr.LeaderNotAvailable, fromBoth},
		{kerr.ReplicaNotAvailable, fromBoth},
		{kerr.InvalidTopicException, fromKafka},
		{kerr.TopicAuthorizationFailed, fromBoth},
		{kerr.ListenerNotFound, fromKmsg},
		{kerr.UnknownTopicID, fromKmsg},
	},
	kmsg.DeleteRecords: {
		{kerr.UnknownServerError, fromKafka},
		{kerr.OffsetOutOfRange, fromBoth},
		{kerr.UnknownTopicOrPartition, fromBoth},
		{kerr.NotLeaderForPartition, fromBoth},
		{kerr.RequestTimedOut, fromKafka},
		{kerr.TopicAuthorizationFailed, fromKmsg},
		{kerr.PolicyViolation, fromKmsg},
		{kerr.KafkaStorageError, fromKmsg},
	},
	kmsg.DescribeConfigs: {
		{kerr.UnknownTopicOrPartition, fromKmsg},
		{kerr.InvalidTopicException, fromKmsg},
		{kerr.TopicAuthorizationFailed, fromKmsg},
		{kerr.ClusterAuthorizationFailed, fromKmsg},
		{kerr.InvalidRequest, fromKmsg},
	},
	kmsg.DescribeProducers: {
		{kerr.UnknownTopicOrPartition, fromKmsg},
		{kerr.NotLeaderForPartition, fromKmsg},
		{kerr.TopicAuthorizationFailed, fromKmsg},
	},
	kmsg.DescribeTransactions: {
		{kerr.CoordinatorLoadInProgress, fromKmsg},
		{kerr.CoordinatorNotAvailable, fromKmsg},
		{kerr.NotCoordinator, fromKmsg},
		{kerr.TransactionalIDAuthorizationFailed, fromKmsg},
		{kerr.TransactionalIDNotFound, fromKmsg},
	},
	kmsg.ListTransactions: {
		{kerr.CoordinatorLoadInProgress, fromKmsg},
		{kerr.CoordinatorNotAvailable, fromKmsg},
		{kerr.InvalidRegularExpression, fromKmsg},
	},
	kmsg.ApiVersions: {
		{kerr.UnsupportedVersion, fromBoth},
		{kerr.InvalidRequest, fromKafka},
	},
	kmsg.CreateTopics: {
		{kerr.RequestTimedOut, fromKafka},
		{kerr.InvalidTopicException, fromBoth},
		{kerr.TopicAuthorizationFailed, fromBoth},
		{kerr.TopicAlreadyExists, fromBoth},
		{kerr.InvalidPartitions, fromBoth},
		{kerr.InvalidReplicationFactor, fromBoth},
		{kerr.InvalidReplicaAssignment, fromBoth},
		{kerr.InvalidConfig, fromBoth},
		{kerr.NotController, fromBoth},
		{kerr.InvalidRequest, fromBoth},
		{kerr.PolicyViolation, fromBoth},
	},
	kmsg.DescribeGroups: {
		{kerr.CoordinatorLoadInProgress, fromBoth},
		{kerr.CoordinatorNotAvailable, fromBoth},
		{kerr.NotCoordinator, fromBoth},
		{kerr.InvalidGroupID, fromKmsg},
		{kerr.GroupAuthorizationFailed, fromKmsg},
		{kerr.GroupIDNotFound, fromKmsg},
	},
}

// CodeSet says which codes the network faults choose from.
type CodeSet string

const (
	// CodesDocumented: the codes Kafka documents for the request.
	CodesDocumented CodeSet = "documented"
	// CodesAny: those, and the codes any request may be answered with.
	CodesAny CodeSet = "any"
)

// codesFor lists the codes a fault on key may carry, in the table's
// order, the any-request codes last.
func codesFor(key kmsg.Key, set CodeSet) []documented {
	out := append([]documented(nil), documentedCodes[key]...)
	if set != CodesAny {
		return out
	}
	for _, e := range anyRequest {
		found := false
		for _, d := range out {
			found = found || d.err.Code == e.Code
		}
		if !found {
			out = append(out, documented{err: e, src: fromAnyRequest})
		}
	}
	return out
}

// requestKinds are the table's request keys, in key order.
func requestKinds() []kmsg.Key {
	out := make([]kmsg.Key, 0, len(documentedCodes))
	for k := range documentedCodes {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
