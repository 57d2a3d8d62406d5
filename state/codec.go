package state

import (
	"errors"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/atmostonce/toolexec/internal/msgpack/mpread"
	"github.com/atmostonce/toolexec/internal/msgpack/mpstruct"
	"github.com/atmostonce/toolexec/internal/msgpack/mpwrite"
	"github.com/atmostonce/toolexec/saga"
)

// The record's msgpack: the reflective codec's bytes (the stored format),
// written and read field by field by its planned codec (internal/msgpack/mpstruct)
// rather than by reflection, which was an eighth of the member's CPU on
// writes and most of a cold replay's on reads. A stored form the plan
// declines (a record of an older build or a corrupt one: a field given
// twice, an ext, an unexpected type, a struct given as an array) is
// decoded reflectively as before, so what is accepted and rejected does
// not change. FuzzRecordEncodeMatchesReflection and
// FuzzRecordDecodeMatchesReflection hold the two together.

var recordCodec = mpstruct.For[saga.Record]()

// errRecordDeclined: the planned codec declined a record to write, which
// a saga.Record (no any or map field) never is.
var errRecordDeclined = errors.New("state: the record's codec declined it")

// writeRecord writes r to w.
func writeRecord(w *mpwrite.Writer, r *saga.Record) error {
	if !recordCodec.Append(w, r) {
		return errRecordDeclined
	}
	return nil
}

// unmarshalRecord decodes v into r: by its plan when it can, else by
// reflection.
func unmarshalRecord(v []byte, r *saga.Record) error {
	if readRecord(v, r) {
		return nil
	}
	*r = saga.Record{}
	// As eventlog's reflective decode: a header that declares more than
	// its bytes can hold would be preallocated (a fatal out of memory for
	// an array32 of waiters).
	if err := mpread.CheckShape(v, len(v)); err != nil {
		return err
	}
	return msgpack.Unmarshal(v, r)
}

// readRecord reads a record's map into r (zero), or reports false.
func readRecord(v []byte, r *saga.Record) bool { return recordCodec.Unmarshal(v, r) }
