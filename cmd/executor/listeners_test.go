package main

import (
	"net"
	"strings"
	"testing"
)

// Every address the process serves is bound before anything starts, and a
// busy one is refused naming its flag; the addresses bound before it are
// released.
func TestBusyAddressIsRefusedNamingItsFlag(t *testing.T) {
	for _, flag := range []string{"--http-addr", "--embedded-addr", "--reconciler-http-addr", "--gateway-addr"} {
		t.Run(flag, func(t *testing.T) {
			busy, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer busy.Close()
			addrs := map[string]string{}
			args := []string{}
			for _, fl := range []string{"--http-addr", "--embedded-addr", "--reconciler-http-addr", "--gateway-addr"} {
				addrs[fl] = freeAddr(t)
				if fl == flag {
					addrs[fl] = busy.Addr().String()
				}
				args = append(args, fl, addrs[fl])
			}
			f, err := parseRunFlags(args)
			if err != nil {
				t.Fatal(err)
			}
			ls, err := bindListeners(f)
			if err == nil {
				ls.close()
				t.Fatalf("%s on a busy address was bound", flag)
			}
			if !strings.HasPrefix(err.Error(), flag+" "+busy.Addr().String()+": the address is in use") || !strings.Contains(err.Error(), "give "+flag+" another address") {
				t.Fatalf("refusal: %v", err)
			}
			for fl, addr := range addrs {
				if fl == flag {
					continue
				}
				ln, err := net.Listen("tcp", addr)
				if err != nil {
					t.Fatalf("%s %s is still held after the refusal: %v", fl, addr, err)
				}
				ln.Close()
			}
		})
	}
}

// Only what runs is bound: no embedded broker with --brokers, no
// reconciler or gateway address when they are off.
func TestOnlyWhatRunsIsBound(t *testing.T) {
	f, err := parseRunFlags([]string{"--http-addr", freeAddr(t), "--brokers", "127.0.0.1:1", "--reconciler=false", "--gateway=false",
		"--embedded-addr", "127.0.0.1:1", "--reconciler-http-addr", "127.0.0.1:1", "--gateway-addr", "127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	ls, err := bindListeners(f)
	if err != nil {
		t.Fatal(err)
	}
	defer ls.close()
	if ls.http == nil || ls.embedded != nil || ls.reconciler != nil || ls.gateway != nil {
		t.Fatalf("bound %+v", ls)
	}
}

// The defaults a newcomer meets are the ones the README names.
func TestDefaultAddresses(t *testing.T) {
	f, err := parseRunFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	got := []string{f.httpAddr, f.embeddedAddr, f.rec.httpAddr, f.gw.addr}
	want := []string{"127.0.0.1:9464", "127.0.0.1:9092", "127.0.0.1:9465", "127.0.0.1:8080"}
	if strings.Join(got, " ") != strings.Join(want, " ") || !f.embedded() {
		t.Fatalf("defaults %v, want %v", got, want)
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
