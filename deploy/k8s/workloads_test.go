package k8s

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/atmostonce/toolexec/gateway"
	"github.com/atmostonce/toolexec/internal/gctune"
)

var (
	flagsOnce sync.Once
	flagSets  map[string]map[string]bool
	flagsErr  string
)

// binaryFlags reads, from each -h usage of the binaries (built once,
// binaries.go), the flags of each command and of the subcommands the
// manifests run ("/executor topics"): the manifests must use those and no
// other.
func binaryFlags(t *testing.T) map[string]map[string]bool {
	t.Helper()
	dir := binaries(t)
	flagsOnce.Do(func() {
		flagLine := regexp.MustCompile(`(?m)^\s+-([a-z][a-z0-9-]*)`)
		flagSets = map[string]map[string]bool{}
		for _, cmd := range [][]string{{"executor"}, {"executor", "topics"}, {"reconciler"}, {"gateway"}} {
			args := append(cmd[1:], "-h")
			usage, _ := exec.Command(filepath.Join(dir, cmd[0]), args...).CombinedOutput() // -h prints the usage (exit status 0)
			set := map[string]bool{}
			for _, m := range flagLine.FindAllStringSubmatch(string(usage), -1) {
				set[m[1]] = true
			}
			if !set["kafka-config"] {
				flagsErr = strings.Join(cmd, " ") + " -h lists no --kafka-config:\n" + string(usage)
				return
			}
			flagSets["/"+strings.Join(cmd, " ")] = set
		}
	})
	if flagsErr != "" {
		t.Fatal(flagsErr)
	}
	return flagSets
}

// invocation is a container's command line: the binary, the subcommand
// (the first argument when it is not a flag) and the --name=value flags.
type invocation struct {
	command string // "/executor" or "/executor topics"
	flags   map[string]string
}

func invoked(t *testing.T, c corev1.Container) invocation {
	t.Helper()
	if len(c.Command) != 1 {
		t.Fatalf("container %s: command %v, want one binary", c.Name, c.Command)
	}
	inv := invocation{command: c.Command[0], flags: map[string]string{}}
	for i, a := range c.Args {
		if i == 0 && !strings.HasPrefix(a, "-") {
			inv.command += " " + a
			continue
		}
		name, val, ok := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !strings.HasPrefix(a, "--") || !ok {
			t.Fatalf("container %s: argument %q is not --name=value", c.Name, a)
		}
		inv.flags[name] = val
	}
	return inv
}

func (inv invocation) duration(t *testing.T, name string) time.Duration {
	t.Helper()
	d, err := time.ParseDuration(inv.flags[name])
	if err != nil {
		t.Fatalf("%s: --%s=%q must be set explicitly: %v", inv.command, name, inv.flags[name], err)
	}
	return d
}

func TestContainersUseOnlyFlagsTheBinariesHave(t *testing.T) {
	flags := binaryFlags(t)
	forEachOverlay(t, func(t *testing.T, o *objects) {
		for n, p := range o.pods() {
			for _, c := range p.Spec.Containers {
				inv := invoked(t, c)
				set := flags[inv.command]
				if set == nil {
					t.Errorf("%s/%s: %s is not a command of the image", n, c.Name, inv.command)
					continue
				}
				for f := range inv.flags {
					if !set[f] {
						t.Errorf("%s/%s: %s has no flag --%s", n, c.Name, inv.command, f)
					}
				}
			}
		}
	})
}

// The executor: a grace period that covers the drain and the commit of
// its outcomes, a stable transactional id under the group's prefix (the
// executor role's ACL), its data dir on a claim the StatefulSet keeps,
// readiness that a rolling update waits for.
func TestExecutor(t *testing.T) {
	forEachOverlay(t, func(t *testing.T, o *objects) {
		ss := o.statefulSets["tool-executor"]
		c := ss.Spec.Template.Spec.Containers[0]
		inv := invoked(t, c)
		drain, txn, rebalance := inv.duration(t, "drain-timeout"), inv.duration(t, "transaction-timeout"), inv.duration(t, "rebalance-timeout")
		if grace := seconds(ss.Spec.Template.Spec.TerminationGracePeriodSeconds); grace <= drain+txn {
			t.Errorf("terminationGracePeriodSeconds %s must exceed --drain-timeout %s + --transaction-timeout %s", grace, drain, txn)
		}
		if rebalance <= drain {
			t.Errorf("--rebalance-timeout %s must exceed --drain-timeout %s", rebalance, drain)
		}
		id := inv.flags["transactional-id"]
		if !strings.HasPrefix(id, inv.flags["group"]) || !strings.Contains(id, "$(POD_NAME)") || envFieldRef(c, "POD_NAME") != "metadata.name" {
			t.Errorf("--transactional-id=%q (POD_NAME from %q): want the pod name under the prefix --group %q (the executor role may use transactional ids under that prefix only)",
				id, envFieldRef(c, "POD_NAME"), inv.flags["group"])
		}
		if inv.flags["kafka-config"] != "" && (inv.flags["reconciler"] != "false" || inv.flags["gateway"] != "false") {
			t.Error("the executor must embed neither the reconciler nor the gateway: they would run under the executor's credential")
		}
		partitions, _ := strconv.Atoi(inv.flags["partitions"])
		if ss.Spec.Replicas == nil || int(*ss.Spec.Replicas) > partitions {
			t.Errorf("replicas %v above --partitions %d: the extra members would be idle", ss.Spec.Replicas, partitions)
		}
		if ss.Spec.MinReadySeconds <= 0 {
			t.Error("minReadySeconds: a rolling update must wait for a member that restored its partitions")
		}
		checkDataOnClaim(t, ss, inv)
		checkProbes(t, ss.Name, c, inv)
	})
}

func TestReconciler(t *testing.T) {
	forEachOverlayWith(t, "tool-reconciler", func(t *testing.T, o *objects, ss *appsv1.StatefulSet) {
		c := ss.Spec.Template.Spec.Containers[0]
		inv := invoked(t, c)
		if inv.flags["tools"] == "" || inv.flags["kafka-config"] == "" {
			t.Error("the reconciler needs --tools and --kafka-config")
		}
		checkDataOnClaim(t, ss, inv)
		checkProbes(t, ss.Name, c, inv)
	})
}

// The gateway: its reply topic named from the pod name, a grace period
// above its longest wait, its tenants from a Secret.
func TestGateway(t *testing.T) {
	forEachOverlayWith(t, "tool-gateway", func(t *testing.T, o *objects, ss *appsv1.StatefulSet) {
		pod := ss.Spec.Template.Spec
		c := pod.Containers[0]
		inv := invoked(t, c)
		if inv.flags["instance-id"] != "$(POD_NAME)" || envFieldRef(c, "POD_NAME") != "metadata.name" {
			t.Errorf("--instance-id=%q: want $(POD_NAME), a stable id per instance", inv.flags["instance-id"])
		}
		var preStop time.Duration
		if c.Lifecycle != nil && c.Lifecycle.PreStop != nil && c.Lifecycle.PreStop.Sleep != nil {
			preStop = time.Duration(c.Lifecycle.PreStop.Sleep.Seconds) * time.Second
		}
		if preStop == 0 {
			t.Error("no preStop sleep: requests routed before the endpoints update would be refused")
		}
		// cmd/gateway's shutdown waits gateway.MaxWait plus 5 s.
		if need, grace := preStop+gateway.MaxWait+5*time.Second, seconds(pod.TerminationGracePeriodSeconds); grace <= need {
			t.Errorf("terminationGracePeriodSeconds %s must exceed the preStop sleep, the longest wait and the shutdown margin (%s)", grace, need)
		}
		if m := mountedAt(c, filepath.Dir(inv.flags["tenants"])); m == nil || volume(pod, m.Name).Secret == nil {
			t.Errorf("--tenants %s is not in a mounted Secret", inv.flags["tenants"])
		}
		checkProbes(t, ss.Name, c, inv)
	})
}

func seconds(s *int64) time.Duration {
	if s == nil {
		return 30 * time.Second // Kubernetes' default
	}
	return time.Duration(*s) * time.Second
}

func envFieldRef(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			return e.ValueFrom.FieldRef.FieldPath
		}
	}
	return ""
}

func mountedAt(c corev1.Container, path string) *corev1.VolumeMount {
	for i, m := range c.VolumeMounts {
		if m.MountPath == path {
			return &c.VolumeMounts[i]
		}
	}
	return nil
}

func volume(pod corev1.PodSpec, name string) corev1.Volume {
	for _, v := range pod.Volumes {
		if v.Name == name {
			return v
		}
	}
	return corev1.Volume{}
}

// checkDataOnClaim: --data-dir is on a volume claim template, kept when
// the StatefulSet is deleted or scaled down (an old view is what bridges
// a gap in the event log), and its group changed only on a mismatch.
func checkDataOnClaim(t *testing.T, ss *appsv1.StatefulSet, inv invocation) {
	t.Helper()
	m := mountedAt(ss.Spec.Template.Spec.Containers[0], inv.flags["data-dir"])
	claimed := false
	for _, v := range ss.Spec.VolumeClaimTemplates {
		claimed = claimed || (m != nil && v.Name == m.Name)
	}
	if !claimed {
		t.Errorf("%s: --data-dir %s is not on a volumeClaimTemplate", ss.Name, inv.flags["data-dir"])
	}
	r := ss.Spec.PersistentVolumeClaimRetentionPolicy
	if r == nil || r.WhenDeleted != appsv1.RetainPersistentVolumeClaimRetentionPolicyType || r.WhenScaled != appsv1.RetainPersistentVolumeClaimRetentionPolicyType {
		t.Errorf("%s: persistentVolumeClaimRetentionPolicy %+v, want Retain on delete and scale-down", ss.Name, r)
	}
	sc := ss.Spec.Template.Spec.SecurityContext
	if sc == nil || sc.FSGroupChangePolicy == nil || *sc.FSGroupChangePolicy != corev1.FSGroupChangeOnRootMismatch {
		t.Errorf("%s: fsGroupChangePolicy must be OnRootMismatch (a large volume is not walked at every start)", ss.Name)
	}
}

// checkProbes: the probes are on the --http-addr port; liveness and the
// startup probe ask /healthz, readiness /readyz; the startup probe
// allows more than the longest legitimate start (--broker-outage).
func checkProbes(t *testing.T, name string, c corev1.Container, inv invocation) {
	t.Helper()
	port := inv.flags["http-addr"][strings.LastIndexByte(inv.flags["http-addr"], ':')+1:]
	for path, p := range map[string]*corev1.Probe{"/readyz": c.ReadinessProbe, "/healthz": c.LivenessProbe, "/healthz ": c.StartupProbe} {
		path = strings.TrimSpace(path)
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != path || containerPort(c, p.HTTPGet.Port.String()) != port {
			t.Errorf("%s: want a probe GET %s on port %s, got %+v", name, path, port, p)
		}
	}
	if p := c.StartupProbe; p != nil {
		allowed := time.Duration(orDefault(p.PeriodSeconds, 10)*orDefault(p.FailureThreshold, 3)) * time.Second
		if outage := inv.duration(t, "broker-outage"); allowed <= outage {
			t.Errorf("%s: the startup probe allows %s, not more than --broker-outage %s", name, allowed, outage)
		}
	}
}

// orDefault is v, or Kubernetes' default d when v is unset.
func orDefault(v, d int32) int32 {
	if v == 0 {
		return d
	}
	return v
}

// containerPort resolves a named port to its number, as text.
func containerPort(c corev1.Container, port string) string {
	for _, p := range c.Ports {
		if p.Name == port {
			return strconv.Itoa(int(p.ContainerPort))
		}
	}
	return port
}

// Every pod: its own ServiceAccount without a token, the Go runtime's
// soft memory limit from its memory limit (long-running ones), Secret
// files readable by its user (fsGroup), spread over zones and hosts (the
// StatefulSets), and a disruption budget.
func TestPods(t *testing.T) {
	forEachOverlay(t, func(t *testing.T, o *objects) {
		accounts := map[string]string{}
		for n, p := range o.pods() {
			spec := p.Spec
			sa := o.serviceAccounts[spec.ServiceAccountName]
			if sa == nil || sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken ||
				spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
				t.Errorf("%s: ServiceAccount %q must exist, and neither it nor the pod mounts a token", n, spec.ServiceAccountName)
			}
			if other, dup := accounts[spec.ServiceAccountName]; dup {
				t.Errorf("%s and %s share ServiceAccount %s: one per component", n, other, spec.ServiceAccountName)
			}
			accounts[spec.ServiceAccountName] = n
			if sc := spec.SecurityContext; sc == nil || sc.FSGroup == nil || sc.RunAsGroup == nil || *sc.FSGroup != *sc.RunAsGroup {
				t.Errorf("%s: fsGroup must be the pod's group: its Secret files are 0400", n)
			}
		}
		for n, ss := range o.statefulSets {
			spec := ss.Spec.Template.Spec
			c := spec.Containers[0]
			if r := envResource(c, gctune.MemoryLimitEnv); r != "limits.memory" || c.Resources.Limits.Memory().IsZero() {
				t.Errorf("%s: %s must come from a memory limit (resource %q)", n, gctune.MemoryLimitEnv, r)
			}
			checkSpread(t, n, spec, ss.Spec.Selector)
			if !budgeted(o, ss.Spec.Template.Labels) {
				t.Errorf("%s: no PodDisruptionBudget with maxUnavailable selects its pods", n)
			}
		}
	})
}

func envResource(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name && e.ValueFrom != nil && e.ValueFrom.ResourceFieldRef != nil {
			return e.ValueFrom.ResourceFieldRef.Resource
		}
	}
	return ""
}

func checkSpread(t *testing.T, name string, spec corev1.PodSpec, sel *metav1.LabelSelector) {
	t.Helper()
	keys := map[string]bool{}
	for _, c := range spec.TopologySpreadConstraints {
		if c.LabelSelector != nil && equalSelectors(c.LabelSelector, sel) {
			keys[c.TopologyKey] = true
		}
	}
	if !keys["topology.kubernetes.io/zone"] || !keys["kubernetes.io/hostname"] {
		t.Errorf("%s: want topology spread of its own pods over zones and hosts, got %v", name, keys)
	}
}

func equalSelectors(a, b *metav1.LabelSelector) bool {
	return labels.Set(a.MatchLabels).String() == labels.Set(b.MatchLabels).String() && len(a.MatchExpressions) == len(b.MatchExpressions)
}

func budgeted(o *objects, podLabels map[string]string) bool {
	for _, pdb := range o.pdbs {
		if selects(pdb.Spec.Selector, podLabels) && pdb.Spec.MaxUnavailable != nil {
			return true
		}
	}
	return false
}

func selects(sel *metav1.LabelSelector, lbls map[string]string) bool {
	s, err := metav1.LabelSelectorAsSelector(sel)
	return err == nil && sel != nil && !s.Empty() && s.Matches(labels.Set(lbls))
}

// Services select their pods; where monitoring is on
// (components/monitoring), the ServiceMonitor every Service, and the job
// label it gives (the Service's app.kubernetes.io/name) is the one the
// alert rules name.
func TestServicesAndMonitoring(t *testing.T) {
	alerts := string(readFile(t, alertsFile))
	forEachOverlay(t, func(t *testing.T, o *objects) {
		for n, svc := range o.services {
			if !selectsAPod(o, svc.Spec.Selector) {
				t.Errorf("Service %s selects no pod", n)
			}
		}
		sm := o.monitors["toolexec"]
		if sm == nil {
			if o.kinds["PrometheusRule"] != 0 {
				t.Error("a PrometheusRule without the ServiceMonitor")
			}
			return
		}
		if sm.Spec.JobLabel != labelName {
			t.Fatalf("the ServiceMonitor must take the job label from %s: %+v", labelName, sm)
		}
		for n, ss := range o.statefulSets {
			svc := o.services[ss.Spec.ServiceName]
			if svc == nil || !selects(&metav1.LabelSelector{MatchLabels: svc.Spec.Selector}, ss.Spec.Template.Labels) {
				t.Errorf("%s: Service %s must exist and select its pods", n, ss.Spec.ServiceName)
				continue
			}
			if !selects(&sm.Spec.Selector, svc.Labels) || !scraped(sm.Spec.Endpoints, svc) {
				t.Errorf("the ServiceMonitor does not scrape Service %s", svc.Name)
			}
			job := svc.Labels[labelName]
			if n != "tool-gateway" && !strings.Contains(alerts, `job="`+job+`"`) {
				t.Errorf("alerts.yml names no job %q: the Service's %s and the rules must agree", job, labelName)
			}
		}
	})
}

func selectsAPod(o *objects, sel map[string]string) bool {
	for _, p := range o.pods() {
		if selects(&metav1.LabelSelector{MatchLabels: sel}, p.Labels) {
			return true
		}
	}
	return false
}

func scraped(eps []monitoringv1.Endpoint, svc *corev1.Service) bool {
	for _, e := range eps {
		for _, p := range svc.Spec.Ports {
			if e.Port == p.Name {
				return true
			}
		}
	}
	return false
}
