package partition

// Isolation of records that cannot be produced.
//
// A tick carries every owned partition in one transaction, so one record
// the broker refuses aborts the whole tick; its inputs are then polled and
// decided again, and, before isolation existed, refused again, for ever:
// one oversized header stopped a member with nothing shown in doubt. Now
// every produced record knows its origin (the polled record or the
// finished call it answers), and an origin whose record failed is
// remembered (Poisoned): when its input comes back it is answered
// `rejected unproducible` and dead-lettered alone, and the rest of the
// tick commits. So an input can make a member abort at most once (twice
// for an answer to a reply_to topic that vanished: the first failure only
// makes the caller forget the topic, and the redo answers on the results
// topic).

// poisoned remembers the origins whose records failed, at most
// MaxPoisoned of them.
type poisoned struct {
	m     map[Origin]*poisonMark
	order []Origin
}

type poisonMark struct {
	replyTopic int // failures that only made the member forget a reply_to topic
	isolate    int // failures after which the origin is answered on its own
}

func newPoisoned() *poisoned { return &poisoned{m: map[Origin]*poisonMark{}} }

func (p *poisoned) mark(o Origin) *poisonMark {
	if m, ok := p.m[o]; ok {
		return m
	}
	if len(p.order) >= MaxPoisoned {
		delete(p.m, p.order[0])
		p.order = p.order[1:]
	}
	m := &poisonMark{}
	p.m[o], p.order = m, append(p.order, o)
	return m
}

// isolated is how often o had to be isolated: 0 means decide it as usual,
// 1 or more answer it on its own (2 or more: its dead letter bare).
func (p *poisoned) isolated(o Origin) int {
	if m, ok := p.m[o]; ok {
		return m.isolate
	}
	return 0
}

// Poisoned notes that a record of origin o could not be produced (its
// transaction did not commit). replyTopicGone says the record was an
// answer to a reply_to topic that no longer exists: the first time, the
// caller forgets the topic and the redo answers on the results topic, so
// the origin is not isolated (isolated false). Otherwise the origin is
// isolated when its input comes back (isolated true).
func (c *Core) Poisoned(o Origin, replyTopicGone bool) (isolated bool) {
	m := c.poison.mark(o)
	if replyTopicGone && m.replyTopic == 0 {
		m.replyTopic++
		return false
	}
	m.isolate++
	return true
}
