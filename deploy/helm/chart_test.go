package helm

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

const (
	chartDir    = "toolexec"
	alertsFile  = "../prometheus/alerts.yml"
	chartAlerts = "toolexec/files/alerts.yml"
	namespace   = "toolexec-test"
)

var update = flag.Bool("update", false, "copy deploy/prometheus/alerts.yml into the chart")

// object is one rendered manifest, as YAML decodes it.
type object = map[string]any

// renderChart renders the chart with values over its defaults, as Helm
// installs it (release toolexec, revision 1, in namespace), and returns
// its objects by "Kind/name".
func renderChart(t *testing.T, values map[string]any) map[string]object {
	t.Helper()
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	caps := chartutil.DefaultCapabilities.Copy()
	caps.KubeVersion = chartutil.KubeVersion{Version: "v1.37.2", Major: "1", Minor: "37"}
	vals, err := chartutil.ToRenderValues(ch, values, chartutil.ReleaseOptions{Name: "toolexec", Namespace: namespace, Revision: 1, IsInstall: true}, caps)
	if err != nil {
		t.Fatal(err)
	}
	files, err := engine.Render(ch, vals)
	if err != nil {
		t.Fatalf("helm template: %v", err)
	}
	var all bytes.Buffer
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if strings.HasSuffix(n, ".yaml") {
			all.WriteString("\n---\n" + files[n])
		}
	}
	return byKindName(t, all.Bytes())
}

// renderKustomize builds a kustomization of deploy/k8s (its lines, with
// "$K8S" for the path to deploy/k8s) with kustomize's library and returns
// its objects by "Kind/name".
func renderKustomize(t *testing.T, kustomization string) map[string]object {
	t.Helper()
	dir, err := os.MkdirTemp(".", ".kustomize-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	k := strings.ReplaceAll(kustomization, "$K8S", "../../k8s")
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := krusty.MakeDefaultOptions()
	opts.LoadRestrictions = types.LoadRestrictionsNone
	m, err := krusty.MakeKustomizer(opts).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize: %v", err)
	}
	y, err := m.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	return byKindName(t, y)
}

func byKindName(t *testing.T, y []byte) map[string]object {
	t.Helper()
	out := map[string]object{}
	for _, doc := range bytes.Split(y, []byte("\n---\n")) {
		var o object
		if err := yaml.Unmarshal(doc, &o); err != nil {
			t.Fatalf("%v\n%s", err, doc)
		}
		if len(o) == 0 {
			continue
		}
		key := fmt.Sprintf("%s/%s", o["kind"], meta(o)["name"])
		if _, dup := out[key]; dup {
			t.Fatalf("two objects %s", key)
		}
		out[key] = o
	}
	return out
}

func meta(o object) map[string]any {
	m, _ := o["metadata"].(map[string]any)
	return m
}

// baseKustomization is the kustomize install the chart's defaults equal:
// the base, the release, monitoring, in the chart's namespace.
const baseKustomization = `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: ` + namespace + `
resources: [$K8S/base]
components: [$K8S/components/monitoring, $K8S/components/release]
`

// The chart with its default values renders the objects kustomize
// renders from the base with components/release and
// components/monitoring: the same kinds and names, and the same content
// once what each tool adds of its own is set aside (normalize: Helm's
// labels, the config checksum that rolls the pods, kustomize's hash
// suffixes of generated names, the comments of the config files, the
// topics Job's per-release name and Argo CD's hook annotations).
func TestChartRendersTheKustomizeBase(t *testing.T) {
	chart := renderChart(t, nil)
	kust := renderKustomize(t, baseKustomization)
	normalizeAll(chart, kust)
	var missing, extra []string
	for k := range kust {
		if chart[k] == nil {
			missing = append(missing, k)
		}
	}
	for k := range chart {
		if kust[k] == nil {
			extra = append(extra, k)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing)+len(extra) > 0 {
		t.Fatalf("the chart lacks %v and has %v more than the kustomize base", missing, extra)
	}
	for k, want := range kust {
		w, _ := yaml.Marshal(want)
		g, _ := yaml.Marshal(chart[k])
		if !bytes.Equal(w, g) {
			t.Errorf("%s differs:\n%s", k, lineDiff(string(w), string(g)))
		}
	}
	t.Logf("%d objects equal", len(kust))
}

// generatedName is a kustomize generated name: the name, a dash and ten
// characters of hash.
var generatedName = regexp.MustCompile(`^(.*)-[a-z0-9]{10}$`)

// normalizeAll sets aside in both renderings what each tool adds of its
// own, in place.
func normalizeAll(chart, kust map[string]object) {
	renames := map[string]string{}
	for k, o := range kust {
		if m := generatedName.FindStringSubmatch(meta(o)["name"].(string)); m != nil && strings.HasPrefix(k, "ConfigMap/") {
			renames[m[0]] = m[1]
		}
	}
	for _, set := range []map[string]object{chart, kust} {
		for k, o := range set {
			normalize(o, renames)
			if nk := fmt.Sprintf("%s/%s", o["kind"], meta(o)["name"]); nk != k {
				delete(set, k)
				set[nk] = o
			}
		}
	}
}

// toolLabels are the labels Helm's conventions add to every object.
var toolLabels = []string{"app.kubernetes.io/instance", "app.kubernetes.io/managed-by", "helm.sh/chart"}

func normalize(o object, renames map[string]string) {
	walk(o, func(m map[string]any) {
		for _, key := range []string{"labels", "annotations"} {
			l, ok := m[key].(map[string]any)
			if !ok {
				continue
			}
			for _, k := range append(toolLabels, "checksum/config", "argocd.argoproj.io/hook", "argocd.argoproj.io/hook-delete-policy") {
				delete(l, k)
			}
			if len(l) == 0 {
				delete(m, key)
			}
		}
		for k, v := range m {
			if s, ok := v.(string); ok && renames[s] != "" {
				m[k] = renames[s]
			}
		}
	})
	if o["kind"] == "Job" && strings.HasPrefix(meta(o)["name"].(string), "toolexec-topics-") {
		meta(o)["name"] = "toolexec-topics"
	}
	if data, ok := o["data"].(map[string]any); ok && o["kind"] == "ConfigMap" {
		for k, v := range data {
			data[k] = withoutComments(v.(string))
		}
	}
}

// walk calls f on every map within v.
func walk(v any, f func(map[string]any)) {
	switch x := v.(type) {
	case map[string]any:
		f(x)
		for _, e := range x {
			walk(e, f)
		}
	case []any:
		for _, e := range x {
			walk(e, f)
		}
	}
}

// withoutComments drops a config file's comment and blank lines.
func withoutComments(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "#") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// lineDiff shows the lines of want and got that the other lacks.
func lineDiff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	in := func(l string, set []string) bool {
		for _, x := range set {
			if x == l {
				return true
			}
		}
		return false
	}
	var b strings.Builder
	for _, l := range wl {
		if !in(l, gl) {
			b.WriteString("- kustomize: " + l + "\n")
		}
	}
	for _, l := range gl {
		if !in(l, wl) {
			b.WriteString("+ chart:     " + l + "\n")
		}
	}
	return b.String()
}

// The chart's copy of the alert rules is deploy/prometheus/alerts.yml
// (which promtool tests).
func TestChartAlertsAreTheAlertRules(t *testing.T) {
	want, err := os.ReadFile(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(chartAlerts, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(chartAlerts)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("%s differs from %s (%v): go test ./... -run TestChartAlerts -update in deploy/helm", chartAlerts, alertsFile, err)
	}
}
