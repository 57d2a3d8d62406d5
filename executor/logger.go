package executor

import (
	"context"
	"log/slog"

	"github.com/twmb/franz-go/pkg/kgo"
)

// kgoLogger routes franz-go's logs to slog at warn and above: its info
// level narrates every transaction and would drown the executor's own.
type kgoLogger struct {
	l     *slog.Logger
	level kgo.LogLevel
}

func (k kgoLogger) Level() kgo.LogLevel {
	if k.level == kgo.LogLevelNone {
		return kgo.LogLevelWarn
	}
	return k.level
}

func (k kgoLogger) Log(level kgo.LogLevel, msg string, kv ...any) {
	lvl := slog.LevelWarn
	switch level {
	case kgo.LogLevelError:
		lvl = slog.LevelError
	case kgo.LogLevelInfo, kgo.LogLevelDebug:
		lvl = slog.LevelInfo
	}
	k.l.Log(context.Background(), lvl, "kafka: "+msg, kv...)
}
