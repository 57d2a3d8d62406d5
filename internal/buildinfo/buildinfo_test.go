package buildinfo

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestStampedVersionWins(t *testing.T) {
	defer func(v string) { Version = v }(Version)
	Version = "v9.8.7"
	i := Read()
	if i.Version != "v9.8.7" || !strings.HasPrefix(i.GoVersion, "go") {
		t.Fatalf("%+v", i)
	}
	if s := i.String("executor"); !strings.HasPrefix(s, "executor v9.8.7 (go") {
		t.Fatalf("version line %q", s)
	}
}

func TestCollectorExportsTheVersion(t *testing.T) {
	defer func(v string) { Version = v }(Version)
	Version = "v1.2.3"
	reg := prometheus.NewRegistry()
	reg.MustRegister(Collector())
	mfs, err := reg.Gather()
	if err != nil || len(mfs) != 1 || mfs[0].GetName() != "toolexec_build_info" {
		t.Fatalf("gathered %v, %v", mfs, err)
	}
	labels := map[string]string{}
	for _, l := range mfs[0].GetMetric()[0].GetLabel() {
		labels[l.GetName()] = l.GetValue()
	}
	if labels["version"] != "v1.2.3" || labels["goversion"] == "" {
		t.Fatalf("labels %v", labels)
	}
}
