package cli

import (
	"errors"
	"fmt"
	"net"
	"syscall"
)

// Listen binds addr, the value of flag, for a process's server. A refusal
// names the flag and, for an address in use, what to do (instead, a
// hint such as "or --gateway=false"), so that the user learns which of
// the process's addresses is taken and how to move it.
//
// Why a process binds every address before anything slow starts (an
// embedded broker's log, a restore, a wait for the broker): a busy port
// found after a start of seconds or minutes costs all of them, and the
// components already started must then be stopped.
func Listen(flag, addr, instead string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err == nil {
		return ln, nil
	}
	if errors.Is(err, syscall.EADDRINUSE) {
		hint := "give " + flag + " another address"
		if instead != "" {
			hint += ", " + instead
		}
		return nil, fmt.Errorf("%s %s: the address is in use (another instance, or another program, listens there): %s", flag, addr, hint)
	}
	return nil, fmt.Errorf("%s %q: %w", flag, addr, err)
}
