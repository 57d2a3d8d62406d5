package k8s

import (
	"regexp"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	"sigs.k8s.io/yaml"
)

const (
	labelName      = "app.kubernetes.io/name"
	labelComponent = "app.kubernetes.io/component"
	labelPartOf    = "app.kubernetes.io/part-of"
	labelVersion   = "app.kubernetes.io/version"
)

// Every overlay renders, and holds what its install needs: prod and
// strimzi the three workloads with their Services, accounts, budgets,
// network policies and monitoring, prod the topics Job (strimzi its
// KafkaTopics); dev the one pod of the embedded default, and nothing that
// needs a CRD (it applies to an empty cluster).
func TestOverlaysRender(t *testing.T) {
	want := map[string]struct {
		kinds        []string
		statefulSets []string
		job          bool
	}{
		"overlays/dev":     {[]string{"StatefulSet", "Service", "ServiceAccount", "PodDisruptionBudget", "NetworkPolicy", "Secret", "Namespace"}, []string{"tool-executor"}, false},
		"overlays/prod":    {[]string{"StatefulSet", "Job", "Service", "ServiceAccount", "PodDisruptionBudget", "NetworkPolicy", "ServiceMonitor", "PrometheusRule", "ConfigMap", "ExternalSecret", "Ingress"}, []string{"tool-executor", "tool-reconciler", "tool-gateway"}, true},
		"overlays/strimzi": {[]string{"StatefulSet", "Service", "ServiceAccount", "PodDisruptionBudget", "NetworkPolicy", "ServiceMonitor", "PrometheusRule", "ConfigMap", "ExternalSecret", "Ingress", "KafkaTopic", "KafkaUser"}, []string{"tool-executor", "tool-reconciler", "tool-gateway"}, false},
	}
	forEachOverlay(t, func(t *testing.T, o *objects) {
		w := want[o.dir]
		for _, k := range w.kinds {
			if o.kinds[k] == 0 {
				t.Errorf("no %s", k)
			}
		}
		if len(o.statefulSets) != len(w.statefulSets) {
			t.Errorf("StatefulSets %v, want %v", sortedKeys(o.statefulSets), w.statefulSets)
		}
		for _, n := range w.statefulSets {
			if o.statefulSets[n] == nil {
				t.Errorf("no StatefulSet %s", n)
			}
		}
		if (topicsJob(o) != nil) != w.job {
			t.Errorf("a topics Job: %v, want %v", topicsJob(o) != nil, w.job)
		}
		t.Logf("%d objects: %v", len(o.all), o.kinds)
	})
	if render(t, "overlays/prod").namespaces["toolexec"] != nil {
		t.Error("overlays/prod holds the Namespace: kubectl delete -k would take the volumes with it")
	}
	if len(render(t, "overlays/strimzi").namespaces) != 0 {
		t.Error("overlays/strimzi holds a Namespace: the Kafka cluster's is Strimzi's")
	}
	if len(render(t, "overlays/dev").namespaces) != 1 {
		t.Error("overlays/dev must create its namespace")
	}
	if d := render(t, "overlays/dev"); d.kinds["ServiceMonitor"]+d.kinds["PrometheusRule"]+d.kinds["ExternalSecret"] != 0 {
		t.Error("overlays/dev needs a CRD: it must apply to an empty cluster")
	}
	for _, dir := range []string{"overlays/prod", "overlays/strimzi"} {
		if len(render(t, dir).ingresses) != 1 {
			t.Errorf("%s must route to the gateway through an Ingress", dir)
		}
	}
}

// topicsJob is the overlay's topics Job, whatever the release named it.
func topicsJob(o *objects) *batchv1.Job {
	for _, j := range o.jobs {
		if j.Labels[labelName] == "toolexec-topics" {
			return j
		}
	}
	return nil
}

// An unknown field is an error: the strict decoding can fail.
func TestStrictDecodingRefusesAnUnknownField(t *testing.T) {
	doc := []byte("apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: x}\nspec:\n  replica: 3\n")
	if err := yaml.UnmarshalStrict(doc, &appsv1.StatefulSet{}); err == nil || !strings.Contains(err.Error(), "replica") {
		t.Fatalf("a misspelt field decoded: %v", err)
	}
}

// Every object carries app.kubernetes.io/name, component, part-of and
// version, and so do the pods (their templates); the volume claim
// templates carry no version (a StatefulSet may not change them, and a
// release would).
func TestEveryObjectIsLabelled(t *testing.T) {
	forEachOverlay(t, func(t *testing.T, o *objects) {
		version := o.statefulSets["tool-executor"].Labels[labelVersion]
		if version == "" {
			t.Fatal("no version label on the executor")
		}
		for _, m := range o.all {
			checkLabels(t, m.String(), m.GetLabels(), version)
		}
		for n, p := range o.pods() {
			checkLabels(t, n+" pod template", p.Labels, version)
		}
		for n, s := range o.statefulSets {
			for _, v := range s.Spec.VolumeClaimTemplates {
				if _, ok := v.Labels[labelVersion]; ok {
					t.Errorf("%s: volume claim template %s has a version label: the next release could not be applied", n, v.Name)
				}
			}
		}
	})
}

func checkLabels(t *testing.T, what string, l map[string]string, version string) {
	t.Helper()
	for _, k := range []string{labelName, labelComponent} {
		if l[k] == "" {
			t.Errorf("%s: no label %s", what, k)
		}
	}
	if l[labelPartOf] != "toolexec" {
		t.Errorf("%s: %s=%q, want toolexec", what, labelPartOf, l[labelPartOf])
	}
	if l[labelVersion] != version {
		t.Errorf("%s: %s=%q, want %q (the executor's)", what, labelVersion, l[labelVersion], version)
	}
}

// digestRef is an image by tag and digest.
var digestRef = regexp.MustCompile(`^[a-z0-9.-]+(/[a-z0-9._-]+)+:([A-Za-z0-9._-]+)@sha256:[0-9a-f]{64}$`)

// Every overlay runs the release's image by tag and digest
// (components/release), the tag being the version the labels carry, and
// the digest one that was built (deploy/image --release), not a
// placeholder.
func TestImagesArePinned(t *testing.T) {
	forEachOverlay(t, func(t *testing.T, o *objects) {
		version := o.statefulSets["tool-executor"].Labels[labelVersion]
		for n, p := range o.pods() {
			for _, c := range p.Spec.Containers {
				tag := imageTag(c.Image)
				if tag != version {
					t.Errorf("%s/%s: image %s: tag %q, want the version label %q", n, c.Name, c.Image, tag, version)
				}
				if !digestRef.MatchString(c.Image) {
					t.Errorf("%s/%s: image %s is not pinned by tag and digest", n, c.Name, c.Image)
				}
				if strings.HasSuffix(c.Image, "@sha256:"+strings.Repeat("0", 64)) {
					t.Errorf("%s/%s: image %s: the digest is a placeholder (the release step writes the built one)", n, c.Name, c.Image)
				}
			}
		}
	})
}

// imageTag is the tag of ref (name[:tag][@digest]).
func imageTag(ref string) string {
	ref, _, _ = strings.Cut(ref, "@")
	i := strings.LastIndexByte(ref, ':')
	if i < strings.LastIndexByte(ref, '/') {
		return ""
	}
	return ref[i+1:]
}
