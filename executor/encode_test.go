package executor

import (
	"errors"
	"testing"

	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/topics"
	"github.com/atmostonce/toolexec/wire"
)

// The kind of a refusal the saga decided reaches the answer on the wire,
// where wire.Result.Refusal reads it without the message's text.
func TestEncodedAnswerCarriesTheRefusal(t *testing.T) {
	r, _ := newFakeReplies()
	e := &encoder{names: topics.NamesWithPrefix("tool."), replies: r}
	a := answerTo("")
	a.Tenant, a.Key, a.Status = "acme", "k", codes.StatusRejected
	a.Err = &saga.Error{Code: codes.ReasonInvalidCommand, Message: "reworded", Refusal: codes.RefusalMayStillLand}
	rec := e.encodeAnswer(&a)
	res, err := wire.DecodeResult(rec.Value)
	if err != nil {
		t.Fatal(err)
	}
	if res.Error == nil || res.Error.Refusal != codes.RefusalMayStillLand || !errors.Is(res.Refusal(), wire.ErrMayStillLand) {
		t.Fatalf("answer's error %+v, refusal %v; want may_still_land", res.Error, res.Refusal())
	}
}
