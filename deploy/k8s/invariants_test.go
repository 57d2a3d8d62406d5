package k8s

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/atmostonce/toolexec/internal/secretref"
	"github.com/atmostonce/toolexec/kafkaconfig"
	"github.com/atmostonce/toolexec/tools"
)

// binaryFlags builds cmd/executor and cmd/reconciler and reads the flags
// each defines from its -h usage: the manifests must use those and no
// other.
func binaryFlags(t *testing.T) map[string]map[string]bool {
	t.Helper()
	dir := t.TempDir()
	build := exec.Command("go", "build", "-o", dir+"/", "./cmd/executor", "./cmd/reconciler")
	build.Dir = "../.."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the binaries: %v\n%s", err, out)
	}
	flagLine := regexp.MustCompile(`(?m)^\s+-([a-z][a-z0-9-]*)`)
	out := map[string]map[string]bool{}
	for _, bin := range []string{"executor", "reconciler"} {
		usage, _ := exec.Command(filepath.Join(dir, bin), "-h").CombinedOutput() // -h exits 1 with the usage
		out["/"+bin] = map[string]bool{}
		for _, m := range flagLine.FindAllStringSubmatch(string(usage), -1) {
			out["/"+bin][m[1]] = true
		}
		if !out["/"+bin]["kafka-config"] {
			t.Fatalf("%s -h lists no --kafka-config:\n%s", bin, usage)
		}
	}
	return out
}

// args parses a container's --name=value arguments.
func args(t *testing.T, c corev1.Container) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, a := range c.Args {
		name, val, ok := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !strings.HasPrefix(a, "--") || !ok {
			t.Fatalf("container %s: argument %q is not --name=value", c.Name, a)
		}
		m[name] = val
	}
	return m
}

func duration(t *testing.T, a map[string]string, name string) time.Duration {
	t.Helper()
	d, err := time.ParseDuration(a[name])
	if err != nil {
		t.Fatalf("--%s=%q must be set explicitly in the manifest: %v", name, a[name], err)
	}
	return d
}

func TestContainersUseOnlyFlagsTheBinariesHave(t *testing.T) {
	flags := binaryFlags(t)
	for _, c := range containers(load(t)) {
		if len(c.Command) != 1 || flags[c.Command[0]] == nil {
			t.Errorf("container %s: command %v, want [/executor] or [/reconciler]", c.Name, c.Command)
			continue
		}
		for name := range args(t, c) {
			if !flags[c.Command[0]][name] {
				t.Errorf("container %s: %s has no flag --%s", c.Name, c.Command[0], name)
			}
		}
	}
}

func containers(o *objects) []corev1.Container {
	var out []corev1.Container
	for _, s := range o.statefulSets {
		out = append(out, s.Spec.Template.Spec.Containers...)
	}
	for _, d := range o.deployments {
		out = append(out, d.Spec.Template.Spec.Containers...)
	}
	return out
}

// The executor StatefulSet: a grace period that covers the drain and the
// commit of its outcomes, a stable transactional id from the pod name
// under the group's prefix (the executor role's ACL), its data dir on the
// claim, probes on its HTTP port, non-root.
func TestExecutorStatefulSet(t *testing.T) {
	o := load(t)
	ss := o.statefulSets["tool-executor"]
	if ss == nil {
		t.Fatal("no StatefulSet tool-executor")
	}
	pod := ss.Spec.Template.Spec
	c := pod.Containers[0]
	a := args(t, c)
	drain, txn, rebalance := duration(t, a, "drain-timeout"), duration(t, a, "transaction-timeout"), duration(t, a, "rebalance-timeout")
	grace := time.Duration(*pod.TerminationGracePeriodSeconds) * time.Second
	if grace <= drain+txn {
		t.Errorf("terminationGracePeriodSeconds %s must exceed --drain-timeout %s + --transaction-timeout %s", grace, drain, txn)
	}
	if rebalance <= drain {
		t.Errorf("--rebalance-timeout %s must exceed --drain-timeout %s", rebalance, drain)
	}
	if a["transactional-id"] != "$(POD_NAME)" || envFieldRef(c, "POD_NAME") != "metadata.name" {
		t.Errorf("--transactional-id=%q with POD_NAME from %q: want the pod name", a["transactional-id"], envFieldRef(c, "POD_NAME"))
	}
	if !strings.HasPrefix(ss.Name, a["group"]) {
		t.Errorf("pod names (%s-N) must start with --group %q: the executor role may use transactional ids under that prefix only", ss.Name, a["group"])
	}
	if a["reconciler"] != "false" {
		t.Error("the executor must not embed the reconciler: it would run under the executor's credential")
	}
	if m := mountAt(c, a["data-dir"]); m == nil || !claimed(ss, m.Name) {
		t.Errorf("--data-dir %s is not on a volumeClaimTemplate", a["data-dir"])
	}
	checkPod(t, "tool-executor", pod, c, a)
}

func envFieldRef(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			return e.ValueFrom.FieldRef.FieldPath
		}
	}
	return ""
}

func mountAt(c corev1.Container, path string) *corev1.VolumeMount {
	for i, m := range c.VolumeMounts {
		if m.MountPath == path {
			return &c.VolumeMounts[i]
		}
	}
	return nil
}

func claimed(ss *appsv1.StatefulSet, volume string) bool {
	for _, pvc := range ss.Spec.VolumeClaimTemplates {
		if pvc.Name == volume {
			return true
		}
	}
	return false
}

// checkPod: probes on the --http-addr port, non-root, no privilege.
func checkPod(t *testing.T, name string, pod corev1.PodSpec, c corev1.Container, a map[string]string) {
	t.Helper()
	port := a["http-addr"][strings.LastIndexByte(a["http-addr"], ':')+1:]
	for probe, p := range map[string]*corev1.Probe{"/readyz": c.ReadinessProbe, "/healthz": c.LivenessProbe} {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != probe || containerPort(c, p.HTTPGet.Port.String()) != port {
			t.Errorf("%s: want a probe GET %s on port %s, got %+v", name, probe, port, p)
		}
	}
	sc := pod.SecurityContext
	if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || c.SecurityContext == nil ||
		c.SecurityContext.AllowPrivilegeEscalation == nil || *c.SecurityContext.AllowPrivilegeEscalation {
		t.Errorf("%s: must run as non-root without privilege escalation", name)
	}
}

// containerPort resolves a named port to its number, as text.
func containerPort(c corev1.Container, port string) string {
	for _, p := range c.Ports {
		if p.Name == port {
			return itoa(p.ContainerPort)
		}
	}
	return port
}

func itoa(i int32) string { return strconv.Itoa(int(i)) }

func TestReconcilerDeployment(t *testing.T) {
	o := load(t)
	d := o.deployments["tool-reconciler"]
	if d == nil {
		t.Fatal("no Deployment tool-reconciler")
	}
	c := d.Spec.Template.Spec.Containers[0]
	a := args(t, c)
	if a["tools"] == "" || a["kafka-config"] == "" {
		t.Error("the reconciler needs --tools and --kafka-config")
	}
	checkPod(t, "tool-reconciler", d.Spec.Template.Spec, c, a)
}

// Selectors match what they must: the PDB and the Services select the
// pods, the ServiceMonitor selects both Services, and the Services are
// named as the jobs the alert rules expect.
func TestSelectorsAndJobs(t *testing.T) {
	o := load(t)
	ss, d := o.statefulSets["tool-executor"], o.deployments["tool-reconciler"]
	pdb := o.pdbs["tool-executor"]
	if pdb == nil || !selects(pdb.Spec.Selector.MatchLabels, ss.Spec.Template.Labels) || pdb.Spec.MaxUnavailable == nil {
		t.Errorf("the PodDisruptionBudget must select the executor pods with maxUnavailable: %+v", pdb)
	}
	for svc, pods := range map[string]map[string]string{"toolexec-executor": ss.Spec.Template.Labels, "toolexec-reconciler": d.Spec.Template.Labels} {
		s := o.services[svc]
		if s == nil || !selects(s.Spec.Selector, pods) {
			t.Errorf("Service %s must exist and select its pods", svc)
			continue
		}
		if !selects(o.monitors["toolexec"].Spec.Selector.MatchLabels, s.Labels) {
			t.Errorf("the ServiceMonitor does not select Service %s", svc)
		}
		// The ServiceMonitor's job label is the Service name; the alert
		// ToolexecReconcilerDown looks for this job.
		if svc == "toolexec-reconciler" && !strings.Contains(string(readFile(t, alertsFile)), `job="`+svc+`"`) {
			t.Errorf("alerts.yml no longer names job %s: rename the Service with it", svc)
		}
	}
	if ss.Spec.ServiceName != "toolexec-executor" {
		t.Errorf("serviceName %q", ss.Spec.ServiceName)
	}
}

func selects(sel, lbls map[string]string) bool {
	return len(sel) > 0 && labels.SelectorFromSet(sel).Matches(labels.Set(lbls))
}

// Every ConfigMap, Secret and key the pods use is in the base; the Kafka
// client files parse (kafkaconfig) and their ${file:} secrets are mounted;
// the tool file parses (tools) and its ${env:} variables and TLS files
// are provided.
func TestReferencesResolve(t *testing.T) {
	o := load(t)
	for _, pod := range []corev1.PodSpec{o.statefulSets["tool-executor"].Spec.Template.Spec, o.deployments["tool-reconciler"].Spec.Template.Spec} {
		files := mountedFiles(t, o, pod)
		c := pod.Containers[0]
		a := args(t, c)
		checkKafkaConfig(t, files, a["kafka-config"])
		checkTools(t, files, c, a["tools"])
		for _, e := range c.Env {
			if r := e.ValueFrom; r != nil && r.SecretKeyRef != nil {
				if s := o.secrets[r.SecretKeyRef.Name]; s == nil || s.StringData[r.SecretKeyRef.Key] == "" {
					t.Errorf("env %s: no key %s in Secret %s", e.Name, r.SecretKeyRef.Key, r.SecretKeyRef.Name)
				}
			}
		}
	}
}

// mountedFiles maps each file path a container sees to its content (for
// ConfigMaps) or to "secret" (for Secret keys).
func mountedFiles(t *testing.T, o *objects, pod corev1.PodSpec) map[string]string {
	t.Helper()
	files := map[string]string{}
	for _, m := range pod.Containers[0].VolumeMounts {
		for _, v := range pod.Volumes {
			if v.Name != m.Name {
				continue
			}
			switch {
			case v.ConfigMap != nil:
				cm := o.configMaps[v.ConfigMap.Name]
				if cm == nil {
					t.Fatalf("volume %s: no ConfigMap %s", v.Name, v.ConfigMap.Name)
				}
				for k, val := range cm.Data {
					files[filepath.Join(m.MountPath, k)] = val
				}
			case v.Secret != nil:
				s := o.secrets[v.Secret.SecretName]
				if s == nil {
					t.Fatalf("volume %s: no Secret %s", v.Name, v.Secret.SecretName)
				}
				for _, it := range v.Secret.Items {
					if _, ok := s.StringData[it.Key]; !ok {
						t.Errorf("volume %s: Secret %s has no key %s", v.Name, s.Name, it.Key)
					}
					files[filepath.Join(m.MountPath, it.Path)] = "secret"
				}
			}
		}
	}
	return files
}

// refs expands references by recording them: ${file:P} must be a mounted
// file, ${env:N} is remembered for the caller.
type refs struct {
	env []string
}

func (r *refs) expand(s string, _ secretref.Lookup) (string, error) {
	return secretref.ExpandWith(s, func(name string) (string, bool) { r.env = append(r.env, name); return "x", true })
}

func checkKafkaConfig(t *testing.T, files map[string]string, path string) {
	t.Helper()
	text, ok := files[path]
	if !ok {
		t.Fatalf("--kafka-config %s is not a mounted ConfigMap key", path)
	}
	re := regexp.MustCompile(`\$\{file:([^}]+)\}`)
	for _, m := range re.FindAllStringSubmatch(text, -1) {
		if files[m[1]] != "secret" {
			t.Errorf("%s: ${file:%s} is not a mounted Secret key", path, m[1])
		}
	}
	cfg, err := kafkaconfig.Parse([]byte(re.ReplaceAllString(text, "x")), path, secretref.ExpandWith, os.LookupEnv)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if !cfg.TLS() || !cfg.SASL() || files[cfg.CALocation] != "secret" {
		t.Errorf("%s: want SASL_SSL with ssl.ca.location on a mounted Secret key, got %s", path, cfg)
	}
}

func checkTools(t *testing.T, files map[string]string, c corev1.Container, path string) {
	t.Helper()
	text, ok := files[path]
	if !ok {
		t.Fatalf("--tools %s is not a mounted ConfigMap key", path)
	}
	cfg, err := tools.Parse([]byte(text))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	env := map[string]bool{}
	for _, e := range c.Env {
		env[e.Name] = true
	}
	for _, s := range cfg.Tools {
		if s.Auth == nil {
			continue
		}
		r := &refs{}
		for h, v := range s.Auth.Headers {
			if _, err := r.expand(v, nil); err != nil {
				t.Errorf("tool %s header %s: %v", s.Name, h, err)
			}
		}
		for _, name := range r.env {
			if !env[name] {
				t.Errorf("tool %s: ${env:%s} is not set in container %s", s.Name, name, c.Name)
			}
		}
		for _, f := range []string{s.Auth.TLS.CA, s.Auth.TLS.Cert, s.Auth.TLS.Key} {
			if f != "" && files[f] != "secret" {
				t.Errorf("tool %s: TLS file %s is not a mounted Secret key", s.Name, f)
			}
		}
	}
}

// kubectl's built-in kustomize, where it is installed (it is not required:
// the tests above decode the same files).
func TestKustomizeBuilds(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl not installed")
	}
	out, err := exec.Command(kubectl, "kustomize", base).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl kustomize: %v\n%s", err, out)
	}
	if n := strings.Count(string(out), "\nkind: "); n < 10 {
		t.Fatalf("kustomize produced %d objects:\n%s", n, out)
	}
}
