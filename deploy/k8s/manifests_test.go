package k8s

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite base/prometheusrule.yaml from deploy/prometheus/alerts.yml")

const base = "base"

// kustomization is the part of kustomization.yaml this base uses; decoded
// strictly too, so a field this test does not understand fails it.
type kustomization struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Namespace  string   `json:"namespace"`
	Resources  []string `json:"resources"`
}

// objects are the decoded manifests of the base, by kind and name.
type objects struct {
	statefulSets map[string]*appsv1.StatefulSet
	deployments  map[string]*appsv1.Deployment
	services     map[string]*corev1.Service
	configMaps   map[string]*corev1.ConfigMap
	secrets      map[string]*corev1.Secret
	pdbs         map[string]*policyv1.PodDisruptionBudget
	monitors     map[string]*monitoringv1.ServiceMonitor
	rules        map[string]*monitoringv1.PrometheusRule
	namespaces   map[string]*corev1.Namespace
}

func load(t *testing.T) *objects {
	t.Helper()
	var k kustomization
	strict(t, filepath.Join(base, "kustomization.yaml"), readFile(t, filepath.Join(base, "kustomization.yaml")), &k)
	if k.Kind != "Kustomization" || len(k.Resources) == 0 {
		t.Fatalf("kustomization: %+v", k)
	}
	o := &objects{statefulSets: map[string]*appsv1.StatefulSet{}, deployments: map[string]*appsv1.Deployment{},
		services: map[string]*corev1.Service{}, configMaps: map[string]*corev1.ConfigMap{}, secrets: map[string]*corev1.Secret{},
		pdbs: map[string]*policyv1.PodDisruptionBudget{}, monitors: map[string]*monitoringv1.ServiceMonitor{},
		rules: map[string]*monitoringv1.PrometheusRule{}, namespaces: map[string]*corev1.Namespace{}}
	listed := map[string]bool{}
	for _, r := range k.Resources {
		listed[r] = true
		for i, doc := range documents(readFile(t, filepath.Join(base, r))) {
			o.add(t, fmt.Sprintf("%s#%d", r, i), doc)
		}
	}
	files, _ := filepath.Glob(filepath.Join(base, "*.yaml"))
	for _, f := range files {
		if name := filepath.Base(f); name != "kustomization.yaml" && !listed[name] {
			t.Errorf("%s is not in kustomization.yaml's resources", name)
		}
	}
	return o
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// documents splits a multi-document YAML file.
func documents(b []byte) [][]byte {
	var out [][]byte
	for _, d := range bytes.Split(b, []byte("\n---\n")) {
		if len(bytes.TrimSpace(stripComments(d))) > 0 {
			out = append(out, d)
		}
	}
	return out
}

func stripComments(b []byte) []byte {
	var out []byte
	for _, l := range bytes.Split(b, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(l), []byte("#")) {
			out = append(append(out, l...), '\n')
		}
	}
	return out
}

// strict decodes YAML into v; an unknown or duplicate field is an error.
func strict(t *testing.T, where string, doc []byte, v any) {
	t.Helper()
	if err := yaml.UnmarshalStrict(doc, v); err != nil {
		t.Fatalf("%s: %v", where, err)
	}
}

func (o *objects) add(t *testing.T, where string, doc []byte) {
	t.Helper()
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	switch tm.APIVersion + " " + tm.Kind {
	case "apps/v1 StatefulSet":
		decodeInto(t, where, doc, o.statefulSets)
	case "apps/v1 Deployment":
		decodeInto(t, where, doc, o.deployments)
	case "v1 Service":
		decodeInto(t, where, doc, o.services)
	case "v1 ConfigMap":
		decodeInto(t, where, doc, o.configMaps)
	case "v1 Secret":
		decodeInto(t, where, doc, o.secrets)
	case "v1 Namespace":
		decodeInto(t, where, doc, o.namespaces)
	case "policy/v1 PodDisruptionBudget":
		decodeInto(t, where, doc, o.pdbs)
	case "monitoring.coreos.com/v1 ServiceMonitor":
		decodeInto(t, where, doc, o.monitors)
	case "monitoring.coreos.com/v1 PrometheusRule":
		decodeInto(t, where, doc, o.rules)
	default:
		t.Fatalf("%s: %s %s is not a kind this test knows", where, tm.APIVersion, tm.Kind)
	}
}

// named is what every decoded object is: it has a name.
type named interface{ GetName() string }

func decodeInto[T any, P interface {
	*T
	named
}](t *testing.T, where string, doc []byte, into map[string]P) {
	t.Helper()
	v := P(new(T))
	strict(t, where, doc, v)
	if v.GetName() == "" {
		t.Fatalf("%s: no metadata.name", where)
	}
	if _, dup := into[v.GetName()]; dup {
		t.Fatalf("%s: a second %s", where, v.GetName())
	}
	into[v.GetName()] = v
}

// TestManifestsDecodeStrictly: every resource of the base is one of the
// expected kinds and decodes with no unknown field.
func TestManifestsDecodeStrictly(t *testing.T) {
	o := load(t)
	want := map[string]int{"StatefulSet": 1, "Deployment": 1, "Service": 2, "PodDisruptionBudget": 1, "ServiceMonitor": 1, "PrometheusRule": 1}
	got := map[string]int{"StatefulSet": len(o.statefulSets), "Deployment": len(o.deployments), "Service": len(o.services),
		"PodDisruptionBudget": len(o.pdbs), "ServiceMonitor": len(o.monitors), "PrometheusRule": len(o.rules)}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("kinds %v, want %v", got, want)
	}
}

// An unknown field is an error: the check can fail.
func TestStrictDecodingRefusesAnUnknownField(t *testing.T) {
	doc := []byte("apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: x}\nspec:\n  replica: 3\n")
	if err := yaml.UnmarshalStrict(doc, &appsv1.StatefulSet{}); err == nil || !strings.Contains(err.Error(), "replica") {
		t.Fatalf("a misspelt field decoded: %v", err)
	}
}
