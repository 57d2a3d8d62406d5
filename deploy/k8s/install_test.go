package k8s

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/atmostonce/toolexec/gateway"
)

// The topics Job creates what the executor expects: the same prefix and
// partition count, the same tool file (the event log's retention is
// derived from it), replication factor 3, under the topics role (not a
// super user). Each release is a new Job, named with its version (dots as
// dashes: the name is its pods' host names), that never deletes itself
// (drift to Argo CD and Flux).
func TestTopicsJob(t *testing.T) {
	forEachOverlay(t, func(t *testing.T, o *objects) {
		job := topicsJob(o)
		if job == nil {
			return // strimzi's KafkaTopics, dev's embedded broker
		}
		ex := invoked(t, o.statefulSets["tool-executor"].Spec.Template.Spec.Containers[0])
		inv := invoked(t, job.Spec.Template.Spec.Containers[0])
		if inv.command != "/executor topics" {
			t.Fatalf("the Job runs %s, want /executor topics", inv.command)
		}
		for _, f := range []string{"topic-prefix", "partitions", "tools"} {
			if inv.flags[f] != ex.flags[f] {
				t.Errorf("--%s: the Job has %q, the executor %q", f, inv.flags[f], ex.flags[f])
			}
		}
		if inv.flags["replication-factor"] != "3" {
			t.Errorf("--replication-factor=%q, want 3 (docs/SECURITY.md, durability)", inv.flags["replication-factor"])
		}
		if !strings.HasSuffix(inv.flags["kafka-config"], "/topics.properties") {
			t.Errorf("the Job must run as the topics role: --kafka-config=%s", inv.flags["kafka-config"])
		}
		if want := "toolexec-topics-" + strings.ReplaceAll(job.Labels[labelVersion], ".", "-"); job.Name != want {
			t.Errorf("the Job is named %s, want %s: a release's Job is a new Job (its pod template cannot change)", job.Name, want)
		}
		if job.Spec.TTLSecondsAfterFinished != nil {
			t.Error("ttlSecondsAfterFinished: a Job that deletes itself is drift to Argo CD and Flux")
		}
		if job.Annotations["argocd.argoproj.io/hook"] != "Sync" || job.Annotations["argocd.argoproj.io/hook-delete-policy"] != "BeforeHookCreation" {
			t.Errorf("annotations %v: want an Argo CD Sync hook replaced at every sync", job.Annotations)
		}
	})
}

// components/ingress-nginx routes the API and MCP, and nothing else, to
// the gateway's Service over TLS, and waits longer than a request may.
func TestIngress(t *testing.T) {
	o := render(t, "overlays/prod")
	for _, ing := range o.ingresses {
		tls := map[string]bool{}
		for _, x := range ing.Spec.TLS {
			for _, h := range x.Hosts {
				tls[h] = x.SecretName != ""
			}
		}
		for _, r := range ing.Spec.Rules {
			if !tls[r.Host] {
				t.Errorf("%s: host %q has no TLS", ing.Name, r.Host)
			}
			for _, p := range r.HTTP.Paths {
				if p.Path != "/v1" && p.Path != "/mcp" {
					t.Errorf("%s: path %s is routed; only /v1 and /mcp may be (metrics and probes stay inside)", ing.Name, p.Path)
				}
				svc := o.services[p.Backend.Service.Name]
				if svc == nil || !hasServicePort(svc.Spec.Ports, p.Backend.Service.Port.Name) {
					t.Errorf("%s: backend %s:%s does not exist", ing.Name, p.Backend.Service.Name, p.Backend.Service.Port.Name)
				}
			}
		}
		timeout, err := time.ParseDuration(ing.Annotations["nginx.ingress.kubernetes.io/proxy-read-timeout"] + "s")
		if err != nil || timeout <= gateway.MaxWait {
			t.Errorf("%s: proxy-read-timeout %s must exceed the gateway's longest wait %s", ing.Name, timeout, gateway.MaxWait)
		}
	}
}

func hasServicePort(ports []corev1.ServicePort, name string) bool {
	for _, p := range ports {
		if p.Name == name {
			return true
		}
	}
	return false
}

// A namePrefix (two installs in one namespace, a platform's convention)
// renames the objects and kustomize follows the references; what the
// names do not carry stays: the transactional ids keep the group's prefix
// the executor's ACL grants, the job labels the alerts name stay, and the
// alert on full data volumes still finds the claims.
func TestNamePrefixBreaksNothing(t *testing.T) {
	o := decodeAll(t, "prod+namePrefix", build(t, overlayWith(t, "overlays/prod", "namePrefix: team-a-\n")))
	ss := o.statefulSets["team-a-tool-executor"]
	if ss == nil {
		t.Fatal("no StatefulSet team-a-tool-executor")
	}
	inv := invoked(t, ss.Spec.Template.Spec.Containers[0])
	if !strings.HasPrefix(inv.flags["transactional-id"], inv.flags["group"]+".") {
		t.Errorf("--transactional-id=%s no longer starts with the group %s", inv.flags["transactional-id"], inv.flags["group"])
	}
	for _, svc := range o.services {
		if !strings.HasPrefix(svc.Labels[labelName], "toolexec-") {
			t.Errorf("Service %s: job label %q", svc.Name, svc.Labels[labelName])
		}
	}
	if o.services[ss.Spec.ServiceName] == nil {
		t.Errorf("serviceName %s does not follow the prefix", ss.Spec.ServiceName)
	}
	checkReferences(t, o)
	claims := volumeAlertClaims(t)
	for _, claim := range []string{"data-tool-executor-0", "data-team-a-tool-executor-2"} {
		if !claims.MatchString(claim) {
			t.Errorf("the volume alert's claim pattern %s misses %s", claims, claim)
		}
	}
}

// volumeAlertClaims is the persistentvolumeclaim matcher of the alert on
// data volumes running out of space, anchored as PromQL anchors it.
func volumeAlertClaims(t *testing.T) *regexp.Regexp {
	t.Helper()
	m := regexp.MustCompile(`persistentvolumeclaim=~"([^"]+)"`).FindStringSubmatch(string(readFile(t, alertsFile)))
	if m == nil {
		t.Fatal("alerts.yml has no alert on the executors' volume claims")
	}
	return regexp.MustCompile("^(?:" + strings.ReplaceAll(m[1], `\\`, `\`) + ")$")
}

// kubectl's own kustomize builds every overlay too, where kubectl is
// installed (the tests above render with kustomize's library).
func TestKubectlKustomizeBuilds(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl not installed")
	}
	for _, dir := range append([]string{"namespace"}, overlays...) {
		out, err := exec.Command(kubectl, "kustomize", dir).CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl kustomize %s: %v\n%s", dir, err, out)
		}
		if dir != "namespace" {
			if got, want := strings.Count("\n"+string(out), "\nkind: "), len(render(t, dir).all); got != want {
				t.Errorf("kubectl kustomize %s: %d objects, the library %d", dir, got, want)
			}
		}
	}
}
