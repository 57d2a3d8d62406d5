// Package buildinfo names the release a binary was built from, for
// --version and for the toolexec_build_info metric.
//
// The release build stamps Version with the linker (the Dockerfile does):
//
//	go build -ldflags "-X github.com/atmostonce/toolexec/internal/buildinfo.Version=v1.2.3" ./cmd/...
//
// An unstamped build falls back to what the Go toolchain recorded: the
// module's version (a pseudo-version when built from a VCS checkout, or
// "(devel)").
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
)

// Version is the release, set by -ldflags -X; empty in an unstamped build.
var Version string

// Info is what a binary knows of its build.
type Info struct {
	Version   string // the stamped release, else the module version, else "(devel)"
	Revision  string // the VCS revision the toolchain recorded; "" when none
	GoVersion string // the toolchain that built it
}

// Read returns the build's Info.
func Read() Info {
	info := Info{Version: Version, GoVersion: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if ok {
		if info.Version == "" {
			info.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				info.Revision = s.Value
			}
		}
	}
	if info.Version == "" {
		info.Version = "(devel)"
	}
	return info
}

// String is the --version line of command name.
func (i Info) String(name string) string {
	s := fmt.Sprintf("%s %s (%s %s/%s", name, i.Version, i.GoVersion, runtime.GOOS, runtime.GOARCH)
	if i.Revision != "" {
		s += ", revision " + i.Revision
	}
	return s + ")"
}

// Collector exports toolexec_build_info{version, revision, goversion} 1,
// so a dashboard or an alert can tell which release each process runs
// (a rolling update shows as two versions at once).
func Collector() prometheus.Collector {
	i := Read()
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "toolexec_build_info",
		Help:        "The release this process was built from (version, VCS revision, Go version); always 1.",
		ConstLabels: prometheus.Labels{"version": i.Version, "revision": i.Revision, "goversion": i.GoVersion},
	})
	g.Set(1)
	return g
}
