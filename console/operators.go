package console

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/atmostonce/toolexec/internal/tokenfile"
)

// ErrOperators reports an operators file that cannot be used.
var ErrOperators = errors.New("console: operators")

// validOperator is an operator's name: recorded in the event log as who
// settled a key, so within the wire's bound and free of spaces.
var validOperator = regexp.MustCompile(`^[A-Za-z0-9._@-]{1,64}$`).MatchString

// operatorsFile is the operators file's kind:
//
//	operators:
//	  - name: alice
//	    tokens: ["sha256:<64 hex digits>"]
//	    groups: [payments]   # optional: a tool's approvers may name it as group:payments
var operatorsFile = tokenfile.Kind{
	List: "operators", Item: "operator", ValidName: validOperator, NameRule: "[A-Za-z0-9._@-]{1,64}",
	MaxNames: 1000, MaxTokens: 16, MaxHashes: 2000, Err: ErrOperators, Groups: true,
}

// Operators are the people who may use the console, by their tokens'
// hashes. Immutable: safe for concurrent use.
type Operators = tokenfile.Set

// LoadOperators reads the operators file at path; errors name the line.
func LoadOperators(path string) (*Operators, error) { return tokenfile.Load(operatorsFile, path) }

// OperatorStore holds the operators in force; Reload swaps them
// atomically. Safe for concurrent use.
type OperatorStore struct {
	path    string
	cur     atomic.Pointer[Operators]
	apart   *tokenfile.Disjoint    // set once by KeepApart, before any Reload
	reloads *prometheus.CounterVec // result; nil: not counted
}

// NewOperatorStore loads the operators file at path.
func NewOperatorStore(path string) (*OperatorStore, error) {
	ops, err := LoadOperators(path)
	if err != nil {
		return nil, err
	}
	s := &OperatorStore{path: path}
	s.cur.Store(ops)
	return s, nil
}

// SingleOperator is a store of one operator with one token and no file
// behind it (the executor's embedded default, whose token it generates in
// its data dir); Reload keeps it as it is.
func SingleOperator(name, token string) (*OperatorStore, error) {
	ops, err := tokenfile.Single(operatorsFile, name, token)
	if err != nil {
		return nil, err
	}
	s := &OperatorStore{}
	s.cur.Store(ops)
	return s, nil
}

// ValidOperator reports whether name may name an operator.
func ValidOperator(name string) bool { return validOperator(name) }

// Current returns the operators in force.
func (s *OperatorStore) Current() *Operators { return s.cur.Load() }

// KeepApart puts the operators in force through d, now and at every
// reload (tokenfile.Disjoint): operators that list a token of another
// file in force (a tenant's gateway token) are refused, and a reload of
// them keeps the operators in force. Call it before the store is served.
func (s *OperatorStore) KeepApart(d *tokenfile.Disjoint) error {
	if err := d.Put(operatorsFile.List, s.Current(), func() {}); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrOperators, s.path, err)
	}
	s.apart = d
	return nil
}

// Reload reads the file again and puts it in force. On any error the
// operators in force stay as they were; with KeepApart, operators that
// share a token with another file in force are refused so (an error
// wrapping tokenfile.ErrShared).
func (s *OperatorStore) Reload() error {
	if s.path == "" {
		return nil
	}
	ops, err := LoadOperators(s.path)
	if err != nil {
		return err
	}
	if err := s.apart.Put(operatorsFile.List, ops, func() { s.cur.Store(ops) }); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrOperators, s.path, err)
	}
	return nil
}

// ReloadOnSignal reloads the file on every sig (SIGHUP by convention)
// until stop is called, logging the outcome and counting it (CountReloads).
func (s *OperatorStore) ReloadOnSignal(log *slog.Logger, sig ...os.Signal) (stop func()) {
	return tokenfile.OnSignal(func() { s.reload(log) }, sig...)
}

func (s *OperatorStore) reload(log *slog.Logger) {
	err := s.Reload()
	s.count(err)
	if err != nil {
		log.Error("operators file not reloaded; the previous operators stay in force", "err", err)
		return
	}
	log.Info("operators file reloaded; sessions of removed tokens end", "path", s.path, "operators", len(s.Current().Names()))
}

// CountReloads counts the reloads on reg, as
// toolexec_console_operator_reloads_total{result}. Call it before the
// first reload.
func (s *OperatorStore) CountReloads(reg prometheus.Registerer) {
	s.reloads = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "toolexec_console_operator_reloads_total",
		Help: "Reloads of the operators file (SIGHUP) by result: ok, error (the file has an error), shared_token (it lists a token of the tenants file in force); on any but ok the operators in force stay."},
		[]string{"result"})
	reg.MustRegister(s.reloads)
}

func (s *OperatorStore) count(err error) {
	if s.reloads == nil {
		return
	}
	switch {
	case errors.Is(err, tokenfile.ErrShared):
		s.reloads.WithLabelValues("shared_token").Inc()
	case err != nil:
		s.reloads.WithLabelValues("error").Inc()
	default:
		s.reloads.WithLabelValues("ok").Inc()
	}
}
