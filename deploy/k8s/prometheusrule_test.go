package k8s

import (
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

const alertsFile = "../prometheus/alerts.yml"

var update = flag.Bool("update", false, "rewrite the generated manifests (components/monitoring/prometheusrule.yaml, components/strimzi/kafkausers.yaml) from their sources")

const ruleHeader = `# Generated from deploy/prometheus/alerts.yml by
#   go test ./deploy/k8s -run TestPrometheusRule -update
# Do not edit: go test ./deploy/k8s fails when the two differ.
`

// generatedRule is the PrometheusRule holding alerts.yml's groups, decoded
// strictly into the prometheus-operator types.
func generatedRule(t *testing.T) *monitoringv1.PrometheusRule {
	t.Helper()
	var alerts struct {
		Groups []monitoringv1.RuleGroup `json:"groups"`
	}
	strict(t, alertsFile, readFile(t, alertsFile), &alerts)
	if len(alerts.Groups) == 0 {
		t.Fatal("alerts.yml has no groups")
	}
	return &monitoringv1.PrometheusRule{
		TypeMeta:   metav1.TypeMeta{APIVersion: "monitoring.coreos.com/v1", Kind: "PrometheusRule"},
		ObjectMeta: metav1.ObjectMeta{Name: "toolexec", Labels: map[string]string{labelName: "toolexec", labelComponent: "monitoring", labelPartOf: "toolexec"}},
		Spec:       monitoringv1.PrometheusRuleSpec{Groups: alerts.Groups},
	}
}

// TestPrometheusRuleIsGeneratedFromTheAlertRules keeps components/monitoring/prometheusrule.yaml
// in sync with deploy/prometheus/alerts.yml (which promtool tests): the
// same groups, rules, expressions, durations, labels and annotations.
func TestPrometheusRuleIsGeneratedFromTheAlertRules(t *testing.T) {
	want := generatedRule(t)
	path := filepath.Join("components", "monitoring", "prometheusrule.yaml")
	if *update {
		b, err := yaml.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, append([]byte(ruleHeader), b...), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := decodeAll(t, path, readFile(t, path)).rules["toolexec"]
	if got == nil {
		t.Fatalf("%s: no PrometheusRule named toolexec", path)
	}
	if !reflect.DeepEqual(got.Spec, want.Spec) {
		t.Fatalf("%s differs from %s: run go test ./deploy/k8s -run TestPrometheusRule -update", path, alertsFile)
	}
	n := 0
	for _, g := range got.Spec.Groups {
		n += len(g.Rules)
	}
	t.Logf("%d groups, %d rules in sync with alerts.yml", len(got.Spec.Groups), n)
}
