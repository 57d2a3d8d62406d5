package k8s

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// overlays are the installs this repository ships; every test of the
// rendered manifests runs on each.
var overlays = []string{"overlays/dev", "overlays/prod", "overlays/strimzi"}

// objects are the decoded manifests of one rendered overlay, by kind and
// name, and every object's metadata in the order rendered.
type objects struct {
	dir             string
	all             []entry
	kinds           map[string]int
	statefulSets    map[string]*appsv1.StatefulSet
	jobs            map[string]*batchv1.Job
	services        map[string]*corev1.Service
	serviceAccounts map[string]*corev1.ServiceAccount
	configMaps      map[string]*corev1.ConfigMap
	secrets         map[string]*corev1.Secret
	namespaces      map[string]*corev1.Namespace
	pdbs            map[string]*policyv1.PodDisruptionBudget
	policies        map[string]*networkingv1.NetworkPolicy
	ingresses       map[string]*networkingv1.Ingress
	monitors        map[string]*monitoringv1.ServiceMonitor
	rules           map[string]*monitoringv1.PrometheusRule
	externalSecrets map[string]*externalSecret
	kafkaTopics     map[string]*kafkaTopic
	kafkaUsers      map[string]*kafkaUser
	autoscalers     map[string]*autoscalingv2.HorizontalPodAutoscaler
	httpRoutes      map[string]*httpRoute
}

var (
	renderMu sync.Mutex
	rendered = map[string]*objects{}
)

// render builds the kustomization in dir with kustomize's own library (the
// one kubectl embeds) and decodes every object strictly: an unknown or
// duplicate field, or a kind this package does not know, fails the test.
// Results are cached per dir.
func render(t *testing.T, dir string) *objects {
	t.Helper()
	renderMu.Lock()
	defer renderMu.Unlock()
	if o := rendered[dir]; o != nil {
		return o
	}
	o := decodeAll(t, dir, build(t, dir))
	rendered[dir] = o
	return o
}

// build runs kustomize on dir. Kustomizations outside this directory (a
// test's own, in a temporary directory) may refer to files here.
func build(t *testing.T, dir string) []byte {
	t.Helper()
	opts := krusty.MakeDefaultOptions()
	opts.LoadRestrictions = types.LoadRestrictionsNone
	m, err := krusty.MakeKustomizer(opts).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize %s: %v", dir, err)
	}
	y, err := m.AsYaml()
	if err != nil {
		t.Fatalf("kustomize %s: %v", dir, err)
	}
	return y
}

// overlayWith writes a kustomization that takes the overlay at dir and
// adds extra (kustomization fields, where "$ROOT" stands for the path
// back to this directory) to a temporary directory here (kustomize takes
// no absolute paths), and returns that directory.
func overlayWith(t *testing.T, dir, extra string) string {
	t.Helper()
	tmp, err := os.MkdirTemp(".", ".kustomize-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	k := fmt.Sprintf("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ../%s\n%s", dir, strings.ReplaceAll(extra, "$ROOT", ".."))
	if err := os.WriteFile(filepath.Join(tmp, "kustomization.yaml"), []byte(k), 0o644); err != nil {
		t.Fatal(err)
	}
	return tmp
}

func decodeAll(t *testing.T, dir string, y []byte) *objects {
	t.Helper()
	o := &objects{dir: dir, kinds: map[string]int{}, statefulSets: map[string]*appsv1.StatefulSet{}, jobs: map[string]*batchv1.Job{},
		services: map[string]*corev1.Service{}, serviceAccounts: map[string]*corev1.ServiceAccount{}, configMaps: map[string]*corev1.ConfigMap{},
		secrets: map[string]*corev1.Secret{}, namespaces: map[string]*corev1.Namespace{}, pdbs: map[string]*policyv1.PodDisruptionBudget{},
		policies: map[string]*networkingv1.NetworkPolicy{}, ingresses: map[string]*networkingv1.Ingress{},
		monitors: map[string]*monitoringv1.ServiceMonitor{}, rules: map[string]*monitoringv1.PrometheusRule{},
		externalSecrets: map[string]*externalSecret{}, kafkaTopics: map[string]*kafkaTopic{}, kafkaUsers: map[string]*kafkaUser{},
		autoscalers: map[string]*autoscalingv2.HorizontalPodAutoscaler{}, httpRoutes: map[string]*httpRoute{}}
	for i, doc := range bytes.Split(y, []byte("\n---\n")) {
		if len(bytes.TrimSpace(doc)) > 0 {
			o.add(t, fmt.Sprintf("%s#%d", dir, i), doc)
		}
	}
	return o
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
	var m metav1.Object
	switch tm.APIVersion + " " + tm.Kind {
	case "apps/v1 StatefulSet":
		m = decodeInto(t, where, doc, o.statefulSets)
	case "batch/v1 Job":
		m = decodeInto(t, where, doc, o.jobs)
	case "v1 Service":
		m = decodeInto(t, where, doc, o.services)
	case "v1 ServiceAccount":
		m = decodeInto(t, where, doc, o.serviceAccounts)
	case "v1 ConfigMap":
		m = decodeInto(t, where, doc, o.configMaps)
	case "v1 Secret":
		m = decodeInto(t, where, doc, o.secrets)
	case "v1 Namespace":
		m = decodeInto(t, where, doc, o.namespaces)
	case "policy/v1 PodDisruptionBudget":
		m = decodeInto(t, where, doc, o.pdbs)
	case "networking.k8s.io/v1 NetworkPolicy":
		m = decodeInto(t, where, doc, o.policies)
	case "networking.k8s.io/v1 Ingress":
		m = decodeInto(t, where, doc, o.ingresses)
	case "monitoring.coreos.com/v1 ServiceMonitor":
		m = decodeInto(t, where, doc, o.monitors)
	case "monitoring.coreos.com/v1 PrometheusRule":
		m = decodeInto(t, where, doc, o.rules)
	case "external-secrets.io/v1 ExternalSecret":
		m = decodeInto(t, where, doc, o.externalSecrets)
	case "kafka.strimzi.io/v1 KafkaTopic":
		m = decodeInto(t, where, doc, o.kafkaTopics)
	case "kafka.strimzi.io/v1 KafkaUser":
		m = decodeInto(t, where, doc, o.kafkaUsers)
	case "autoscaling/v2 HorizontalPodAutoscaler":
		m = decodeInto(t, where, doc, o.autoscalers)
	case "gateway.networking.k8s.io/v1 HTTPRoute":
		m = decodeInto(t, where, doc, o.httpRoutes)
	default:
		t.Fatalf("%s: %s %s is not a kind this test knows", where, tm.APIVersion, tm.Kind)
	}
	o.all = append(o.all, entry{Object: m, kind: tm.Kind})
	o.kinds[tm.Kind]++
}

// entry is one rendered object, with its kind.
type entry struct {
	metav1.Object
	kind string
}

func (e entry) String() string { return e.kind + " " + e.GetName() }

// object is what every decoded kind is.
type object interface {
	metav1.Object
}

func decodeInto[T any, P interface {
	*T
	object
}](t *testing.T, where string, doc []byte, into map[string]P) metav1.Object {
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
	return v
}

// pods are the pod templates of the workloads, by workload name.
func (o *objects) pods() map[string]*corev1.PodTemplateSpec {
	out := map[string]*corev1.PodTemplateSpec{}
	for n, s := range o.statefulSets {
		out[n] = &s.Spec.Template
	}
	for n, j := range o.jobs {
		out[n] = &j.Spec.Template
	}
	return out
}

// sortedKeys lists a map's keys in order, for stable messages.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// forEachOverlay runs f as a subtest on every shipped overlay.
func forEachOverlay(t *testing.T, f func(t *testing.T, o *objects)) {
	for _, dir := range overlays {
		t.Run(strings.TrimPrefix(dir, "overlays/"), func(t *testing.T) { f(t, render(t, dir)) })
	}
}

// forEachOverlayWith runs f on every shipped overlay that has the
// StatefulSet named: the separate reconciler and gateway are not in
// overlays/dev, whose one pod embeds them (components/embedded).
func forEachOverlayWith(t *testing.T, statefulSet string, f func(t *testing.T, o *objects, ss *appsv1.StatefulSet)) {
	forEachOverlay(t, func(t *testing.T, o *objects) {
		if ss := o.statefulSets[statefulSet]; ss != nil {
			f(t, o, ss)
		}
	})
}

// withComponents renders the overlay at dir with the components named
// (directories under components/) added.
func withComponents(t *testing.T, dir string, components ...string) *objects {
	t.Helper()
	extra := "components:\n"
	for _, c := range components {
		extra += "  - $ROOT/components/" + c + "\n"
	}
	return decodeAll(t, dir+"+"+strings.Join(components, "+"), build(t, overlayWith(t, dir, extra)))
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
