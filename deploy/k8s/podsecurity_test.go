package k8s

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	psaapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
)

// restricted evaluates pod templates against the "restricted" Pod
// Security Standard with the checks Kubernetes' PodSecurity admission
// itself runs (k8s.io/pod-security-admission), at the latest version.
func restricted(t *testing.T, meta *metav1.ObjectMeta, spec *corev1.PodSpec) []string {
	t.Helper()
	ev, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var refused []string
	for _, r := range ev.EvaluatePod(psaapi.LevelVersion{Level: psaapi.LevelRestricted, Version: psaapi.LatestVersion()}, meta, spec) {
		if !r.Allowed {
			refused = append(refused, r.ForbiddenReason+": "+r.ForbiddenDetail)
		}
	}
	return refused
}

// Every pod of every overlay meets the whole restricted profile, as the
// namespace's PodSecurity admission (namespace.yaml) enforces it.
func TestPodsMeetTheRestrictedProfile(t *testing.T) {
	forEachOverlay(t, func(t *testing.T, o *objects) {
		for n, p := range o.pods() {
			if refused := restricted(t, &p.ObjectMeta, &p.Spec); len(refused) > 0 {
				t.Errorf("%s breaks the restricted profile:\n  %s", n, strings.Join(refused, "\n  "))
			}
		}
	})
	ns := render(t, "overlays/dev").namespaces["toolexec-dev"]
	if ns == nil || ns.Labels[psaapi.EnforceLevelLabel] != string(psaapi.LevelRestricted) {
		t.Errorf("the namespace must enforce the restricted profile: %+v", ns)
	}
}

// The evaluation can fail: the executor's pod with one capability kept
// and privilege escalation allowed is refused.
func TestRestrictedProfileRefusesABrokenPod(t *testing.T) {
	p := render(t, "overlays/prod").statefulSets["tool-executor"].Spec.Template.DeepCopy()
	c := &p.Spec.Containers[0]
	c.SecurityContext.Capabilities.Drop = nil
	allow := true
	c.SecurityContext.AllowPrivilegeEscalation = &allow
	if refused := restricted(t, &p.ObjectMeta, &p.Spec); len(refused) < 2 {
		t.Fatalf("a pod keeping its capabilities and allowing escalation passed: %v", refused)
	}
}
