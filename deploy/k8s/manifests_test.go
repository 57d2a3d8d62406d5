package k8s

import (
	"regexp"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"
)

const (
	labelName      = "app.kubernetes.io/name"
	labelComponent = "app.kubernetes.io/component"
	labelPartOf    = "app.kubernetes.io/part-of"
	labelVersion   = "app.kubernetes.io/version"
)

// Every overlay renders, and holds what an install needs: the three
// workloads, the topics Job, their Services, accounts, budgets, network
// policies and monitoring.
func TestOverlaysRender(t *testing.T) {
	forEachOverlay(t, func(t *testing.T, o *objects) {
		for _, k := range []string{"StatefulSet", "Job", "Service", "ServiceAccount", "PodDisruptionBudget", "NetworkPolicy", "ServiceMonitor", "PrometheusRule", "ConfigMap"} {
			if o.kinds[k] == 0 {
				t.Errorf("no %s", k)
			}
		}
		for _, n := range []string{"tool-executor", "tool-reconciler", "tool-gateway"} {
			if o.statefulSets[n] == nil {
				t.Errorf("no StatefulSet %s", n)
			}
		}
		if o.jobs["toolexec-topics"] == nil {
			t.Error("no topics Job")
		}
		t.Logf("%d objects: %v", len(o.all), o.kinds)
	})
	if render(t, "overlays/prod").namespaces["toolexec"] != nil {
		t.Error("overlays/prod holds the Namespace: kubectl delete -k would take the volumes with it")
	}
	if len(render(t, "overlays/dev").namespaces) != 1 {
		t.Error("overlays/dev must create its namespace")
	}
	if len(render(t, "overlays/prod").ingresses) != 1 {
		t.Error("overlays/prod must route to the gateway through an Ingress")
	}
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

// overlays/prod runs its images by tag and digest (kustomize images:), the
// tag being the version the labels carry; overlays/dev by tag (a local
// build has no registry digest).
func TestImagesArePinned(t *testing.T) {
	forEachOverlay(t, func(t *testing.T, o *objects) {
		version := o.statefulSets["tool-executor"].Labels[labelVersion]
		for n, p := range o.pods() {
			for _, c := range p.Spec.Containers {
				tag := imageTag(c.Image)
				if tag != version {
					t.Errorf("%s/%s: image %s: tag %q, want the version label %q", n, c.Name, c.Image, tag, version)
				}
				if strings.HasSuffix(o.dir, "prod") && !digestRef.MatchString(c.Image) {
					t.Errorf("%s/%s: image %s is not pinned by tag and digest", n, c.Name, c.Image)
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
