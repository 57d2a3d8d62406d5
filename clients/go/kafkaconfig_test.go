package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/atmostonce/toolexec/internal/testing/testpki"
	"github.com/atmostonce/toolexec/kafkaconfig"
	"github.com/atmostonce/toolexec/topics"
	"github.com/atmostonce/toolexec/wire"
)

// Config.KafkaConfig takes the same properties file as --kafka-config: its
// bootstrap.servers, TLS and SASL settings reach the cluster, and a file
// with a CA that did not sign the broker fails New with ErrTLS at once.
func TestKafkaConfigReachesASecuredCluster(t *testing.T) {
	p := testpki.New(t)
	srv := p.Loopback(t, "broker")
	n := topics.NamesWithPrefix(topics.DefaultPrefix)
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.TLS(&tls.Config{Certificates: []tls.Certificate{srv.TLS}}),
		kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-512", "agent", "pw-agent-1"), kfake.SeedTopics(3, n.Intents, n.Results))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	write := func(ca string) string {
		f := filepath.Join(t.TempDir(), "agent.properties")
		text := fmt.Sprintf("bootstrap.servers=%s\nsecurity.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\nsasl.username=agent\nsasl.password=${env:AGENT_PW}\nssl.ca.location=%s\n", c.ListenAddrs()[0], ca)
		if err := os.WriteFile(f, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return f
	}
	t.Setenv("AGENT_PW", "pw-agent-1")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl, err := New(ctx, Config{KafkaConfig: write(p.CAFile)})
	if err != nil {
		t.Fatalf("New with the agent's file: %v", err)
	}
	if err := cl.produce(ctx, &wire.Intent{V: 1, Type: wire.TypeCall, ID: "i1", Tenant: "default", Key: "k", Tool: "x"}, nil); err != nil {
		t.Fatalf("produce over SASL_SSL: %v", err)
	}
	cl.Close()
	if _, err := New(ctx, Config{KafkaConfig: write(p.OtherCAFile)}); !errors.Is(err, kafkaconfig.ErrTLS) {
		t.Fatalf("wrong CA: %v, want kafkaconfig.ErrTLS", err)
	}
}
