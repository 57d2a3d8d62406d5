package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/atmostonce/toolexec/kafkaconfig"
	"github.com/atmostonce/toolexec/topics"
)

// DefaultBrokers are the seeds of a command given neither --brokers nor a
// bootstrap.servers in --kafka-config: the executor's embedded broker.
const DefaultBrokers = "127.0.0.1:9092"

// Kafka holds --brokers, --topic-prefix and --kafka-config: where the
// cluster is, which topics are ours and how to authenticate. Every command
// that only talks to a running cluster takes them with the same defaults,
// so one set works for all of them.
type Kafka struct {
	Brokers    string // comma-separated seed brokers, as given; empty: bootstrap.servers, else DefaultBrokers
	Prefix     string // prefix of the topic names
	ConfigFile string // Kafka client properties (TLS, SASL); empty: plaintext
}

// KafkaFlags defines --brokers, --topic-prefix and --kafka-config on fs.
func KafkaFlags(fs *flag.FlagSet) *Kafka {
	k := &Kafka{}
	fs.StringVar(&k.Brokers, "brokers", "", "comma-separated Kafka seed brokers (default "+DefaultBrokers+", or bootstrap.servers of --kafka-config)")
	fs.StringVar(&k.Prefix, "topic-prefix", topics.DefaultPrefix, "prefix of the topic names")
	KafkaConfigFlag(fs, &k.ConfigFile)
	return k
}

// KafkaConfigFlag defines --kafka-config on fs, into p.
func KafkaConfigFlag(fs *flag.FlagSet, p *string) {
	fs.StringVar(p, "kafka-config", "", "Kafka client properties file (security.protocol, sasl.*, ssl.*; values may be ${env:NAME} or ${file:PATH}); the same file works with kcat -F")
}

// KafkaLogLevel is franz-go's log level named by level (debug, info,
// error; anything else warn), for chasing a group or transaction problem
// (TOOLEXEC_KAFKA_LOG).
func KafkaLogLevel(level string) kgo.LogLevel {
	switch level {
	case "debug":
		return kgo.LogLevelDebug
	case "info":
		return kgo.LogLevelInfo
	case "error":
		return kgo.LogLevelError
	}
	return kgo.LogLevelWarn
}

// AllowWeakDurabilityFlag adds --allow-weak-durability: start on a
// cluster of more than one broker whose settings could lose a committed
// transaction (topicadmin.CheckDurability).
func AllowWeakDurabilityFlag(fs *flag.FlagSet, p *bool) {
	fs.BoolVar(p, "allow-weak-durability", false, "start even when the cluster (more than one broker) has a topic of ours with replication factor < 3 or min.insync.replicas < 2, unclean leader election, or weaker transaction or offsets logs; logged and exported as toolexec_*_durability_override (a single broker always starts, with a warning)")
}

// Names are the topic names under --topic-prefix.
func (k *Kafka) Names() topics.Names { return topics.NamesWithPrefix(k.Prefix) }

// Connect loads --kafka-config and checks that a seed answers with it.
// Any failure is returned: a subcommand has nothing to wait for. A broker
// that does not answer gets UnreachableHint: the usual cause is a command
// run without the --brokers of an executor that listens elsewhere.
func (k *Kafka) Connect(ctx context.Context) (*Conn, error) {
	conn, err := Connect(ctx, k.Brokers, k.ConfigFile, DefaultBrokers, nil)
	if errors.Is(err, kafkaconfig.ErrUnreachable) {
		return nil, fmt.Errorf("%w\n  %s", err, UnreachableHint)
	}
	return conn, err
}

// UnreachableHint says what to check when no broker answers a command.
const UnreachableHint = "is the executor running, with this address as its --embedded-addr (default " + DefaultBrokers +
	") or among its --brokers? Give this command the same address with --brokers"

// Conn is how a command reaches the cluster: the seeds, and the options
// every kgo client of the process must take (TLS, SASL).
type Conn struct {
	Seeds  []string
	Opts   []kgo.Opt
	Config *kafkaconfig.Config
}

// Connect reads configFile (kafkaconfig.Load), picks the seeds (brokers
// when not empty, else bootstrap.servers, else fallback) and checks
// them (kafkaconfig.Check). A TLS or SASL failure, and any error in the
// file, is returned. When log is not nil a broker that does not answer is
// only logged: a long-running process rides out a broker restart at start
// (the executor's --broker-outage); without log it is an error too.
func Connect(ctx context.Context, brokers, configFile, fallback string, log *slog.Logger) (*Conn, error) {
	cfg, err := kafkaconfig.Load(configFile)
	if err != nil {
		return nil, err
	}
	opts, err := cfg.Opts()
	if err != nil {
		return nil, err
	}
	seeds := cfg.Seeds(brokers)
	if len(seeds) == 0 {
		seeds = cfg.Seeds(fallback)
	}
	if len(seeds) == 0 {
		return nil, errors.New("no Kafka brokers: give --brokers, or bootstrap.servers in --kafka-config")
	}
	err = kafkaconfig.Check(ctx, seeds, opts...)
	switch {
	case err == nil:
	case log != nil && !kafkaconfig.Definite(err):
		log.Warn("no Kafka broker answered at start; waiting for it", "err", err)
	case configFile != "":
		return nil, fmt.Errorf("%w (--kafka-config %s: %s)", err, configFile, cfg)
	default:
		return nil, err
	}
	return &Conn{Seeds: seeds, Opts: opts, Config: cfg}, nil
}
