package cli

import (
	"context"
	"errors"
	"flag"
	"net"
	"strings"
	"testing"

	"github.com/atmostonce/toolexec/kafkaconfig"
)

// A command pointed at an address where no broker listens says which
// address it tried and which flags to check.
func TestConnectToNoBrokerNamesTheAddressAndTheFlags(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now: the dial is refused at once
	fs := flag.NewFlagSet("send", flag.ContinueOnError)
	k := KafkaFlags(fs)
	if err := fs.Parse([]string{"--brokers", addr}); err != nil {
		t.Fatal(err)
	}
	_, err = k.Connect(context.Background())
	if !errors.Is(err, kafkaconfig.ErrUnreachable) {
		t.Fatalf("err %v, want ErrUnreachable", err)
	}
	for _, want := range []string{addr, "is the executor running", "--embedded-addr", "--brokers"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
}
