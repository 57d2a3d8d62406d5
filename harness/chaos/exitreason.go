package chaos

import (
	"bytes"
	"io"
	"os"
)

// exitReason reads the end of an executor's log after it exited on its
// own and says why, in one line, and whether it crashed: a Go panic or a
// runtime fatal error (exit 2), which no design calls for. Why in the
// run's own log: a run that passes removes its work dir, and with it the
// only record of an exit's cause.
func exitReason(log string) (why string, crashed bool) {
	tail, err := readTail(log, 256<<10)
	if err != nil {
		return "(log unreadable: " + err.Error() + ")", false
	}
	for _, mark := range [][]byte{[]byte("\npanic: "), []byte("\nfatal error: ")} {
		if i := bytes.LastIndex(tail, mark); i >= 0 {
			return firstLines(tail[i+1:], 6), true
		}
	}
	lines := bytes.Split(bytes.TrimRight(tail, "\n"), []byte("\n"))
	for i := len(lines) - 1; i >= 0 && i >= len(lines)-40; i-- {
		if bytes.Contains(lines[i], []byte("level=ERROR")) || bytes.Contains(lines[i], []byte("fatal")) {
			return string(lines[i]), false
		}
	}
	if len(lines) > 0 {
		return string(lines[len(lines)-1]), false
	}
	return "(empty log)", false
}

// readTail returns at most n bytes from the end of the file.
func readTail(path string, n int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if off := st.Size() - n; off > 0 {
		if _, err := f.Seek(off, io.SeekStart); err != nil {
			return nil, err
		}
	}
	return io.ReadAll(f)
}

// firstLines joins the first n lines of b with " | ".
func firstLines(b []byte, n int) string {
	lines := bytes.SplitN(b, []byte("\n"), n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return string(bytes.Join(lines, []byte(" | ")))
}
