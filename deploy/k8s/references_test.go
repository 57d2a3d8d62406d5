package k8s

import (
	"net"
	"path/filepath"
	"regexp"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/atmostonce/toolexec/internal/secretref"
	"github.com/atmostonce/toolexec/kafkaconfig"
	"github.com/atmostonce/toolexec/tools"
)

// secretFile marks a mounted file whose content is a Secret's.
const secretFile = "\x00secret"

// Every ConfigMap, Secret and key a pod uses exists in the overlay (a
// Secret as an object, or as the target of an ExternalSecret); the Kafka
// client files parse (kafkaconfig), with their ${file:} secrets mounted
// and their ${env:} variables set; the tool file parses (tools), with
// its secrets mounted where tools are called.
func TestReferencesResolve(t *testing.T) {
	forEachOverlay(t, checkReferences)
}

func checkReferences(t *testing.T, o *objects) {
	for n, p := range o.pods() {
		for _, c := range p.Spec.Containers {
			files := mountedFiles(t, o, p.Spec, c)
			env := containerEnv(t, o, c)
			inv := invoked(t, c)
			if embedded(inv) {
				checkEmbedded(t, n, inv)
				continue
			}
			checkKafkaConfig(t, n, files, env, inv.flags["kafka-config"])
			checkTools(t, n, files, inv.flags["tools"], inv.command != "/gateway" && inv.command != "/executor topics")
			if tenants := inv.flags["tenants"]; tenants != "" && files[tenants] != secretFile {
				t.Errorf("%s: --tenants %s is not a mounted Secret key", n, tenants)
			}
		}
	}
}

// embedded reports whether inv is the executor as the embedded default
// (components/embedded): no Kafka configuration, no brokers.
func embedded(inv invocation) bool {
	return inv.command == "/executor" && inv.flags["kafka-config"] == "" && inv.flags["brokers"] == ""
}

// checkEmbedded: the embedded broker listens on the pod's loopback only
// (it takes no credential), and the demo tools are the tools (no file).
func checkEmbedded(t *testing.T, pod string, inv invocation) {
	t.Helper()
	host, _, err := net.SplitHostPort(inv.flags["embedded-addr"])
	if err != nil || host != "127.0.0.1" {
		t.Errorf("%s: --embedded-addr=%q: the embedded broker must listen on the loopback only", pod, inv.flags["embedded-addr"])
	}
	if inv.flags["tools"] != "" {
		t.Errorf("%s: --tools=%s: the embedded default runs the demo tools", pod, inv.flags["tools"])
	}
}

// secretKeys are the keys the Secret name will hold: its own, those of
// the ExternalSecret that makes it, or those Strimzi's operators write;
// nil when nothing makes it.
func (o *objects) secretKeys(name string) map[string]bool {
	keys := map[string]bool{}
	if s := o.secrets[name]; s != nil {
		for k := range s.Data {
			keys[k] = true
		}
		for k := range s.StringData {
			keys[k] = true
		}
		return keys
	}
	for _, es := range o.externalSecrets {
		if es.Spec.Target.Name == name {
			for _, d := range es.Spec.Data {
				keys[d.SecretKey] = true
			}
			return keys
		}
	}
	return o.strimziSecretKeys(name)
}

// strimziSecretKeys are the keys of the Secrets Strimzi's operators write
// for the overlay's KafkaUsers (named as the user) and for their
// cluster's CA (<cluster>-cluster-ca-cert); nil for any other name.
func (o *objects) strimziSecretKeys(name string) map[string]bool {
	for _, u := range o.kafkaUsers {
		switch name {
		case u.Name:
			return map[string]bool{"password": true, "sasl.jaas.config": true}
		case u.Labels["strimzi.io/cluster"] + "-cluster-ca-cert":
			return map[string]bool{"ca.crt": true, "ca.p12": true, "ca.password": true}
		}
	}
	return nil
}

// mountedFiles maps each file path container c sees to its content (for
// ConfigMaps) or to secretFile (for Secret keys), and checks that every
// ConfigMap, Secret and key it mounts exists.
func mountedFiles(t *testing.T, o *objects, pod corev1.PodSpec, c corev1.Container) map[string]string {
	t.Helper()
	files := map[string]string{}
	for _, m := range c.VolumeMounts {
		v := volume(pod, m.Name)
		switch {
		case v.ConfigMap != nil:
			cm := o.configMaps[v.ConfigMap.Name]
			if cm == nil {
				t.Fatalf("%s: volume %s: no ConfigMap %s", c.Name, v.Name, v.ConfigMap.Name)
			}
			for path, key := range itemPaths(cm.Data, v.ConfigMap.Items) {
				if _, ok := cm.Data[key]; !ok {
					t.Errorf("%s: volume %s: ConfigMap %s has no key %s", c.Name, v.Name, cm.Name, key)
				}
				files[filepath.Join(m.MountPath, path)] = cm.Data[key]
			}
		case v.Secret != nil:
			mountSecret(t, o, files, m.MountPath, v.Secret.SecretName, v.Secret.Items)
		case v.Projected != nil:
			for _, s := range v.Projected.Sources {
				if s.Secret == nil {
					t.Errorf("%s: volume %s projects something other than Secrets", c.Name, v.Name)
					continue
				}
				mountSecret(t, o, files, m.MountPath, s.Secret.Name, s.Secret.Items)
			}
		}
	}
	return files
}

func mountSecret(t *testing.T, o *objects, files map[string]string, dir, name string, items []corev1.KeyToPath) {
	t.Helper()
	keys := o.secretKeys(name)
	if keys == nil {
		t.Errorf("no Secret %s, and no ExternalSecret makes it", name)
		return
	}
	for path, key := range itemPaths(keys, items) {
		if !keys[key] {
			t.Errorf("Secret %s has no key %s", name, key)
		}
		files[filepath.Join(dir, path)] = secretFile
	}
}

// itemPaths maps the file names a volume shows to their keys: the items
// when listed, else every key.
func itemPaths[V any](keys map[string]V, items []corev1.KeyToPath) map[string]string {
	out := map[string]string{}
	if len(items) == 0 {
		for k := range keys {
			out[k] = k
		}
	}
	for _, it := range items {
		out[it.Path] = it.Key
	}
	return out
}

// containerEnv resolves c's environment as far as the manifests say it:
// literal values and ConfigMap keys (checked to exist).
func containerEnv(t *testing.T, o *objects, c corev1.Container) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		case e.ValueFrom.ConfigMapKeyRef != nil:
			r := e.ValueFrom.ConfigMapKeyRef
			cm := o.configMaps[r.Name]
			if cm == nil || cm.Data[r.Key] == "" {
				t.Errorf("%s: env %s: no key %s in ConfigMap %s", c.Name, e.Name, r.Key, r.Name)
				continue
			}
			env[e.Name] = cm.Data[r.Key]
		case e.ValueFrom.SecretKeyRef != nil:
			t.Errorf("%s: env %s from a Secret: mount it as a file and use ${file:}", c.Name, e.Name)
		default:
			env[e.Name] = "(from the pod)"
		}
	}
	return env
}

var (
	fileRef = regexp.MustCompile(`\$\{file:([^}]+)\}`)
	envRef  = regexp.MustCompile(`\$\{env:([^}]+)\}`)
)

func checkKafkaConfig(t *testing.T, pod string, files, env map[string]string, path string) {
	t.Helper()
	text, ok := files[path]
	if !ok || text == secretFile {
		t.Errorf("%s: --kafka-config %s is not a mounted ConfigMap key", pod, path)
		return
	}
	for _, m := range fileRef.FindAllStringSubmatch(text, -1) {
		if files[m[1]] != secretFile {
			t.Errorf("%s: %s: ${file:%s} is not a mounted Secret key", pod, path, m[1])
		}
	}
	lookup := func(name string) (string, bool) { v, ok := env[name]; return v, ok }
	cfg, err := kafkaconfig.Parse([]byte(fileRef.ReplaceAllString(text, "x")), path, secretref.ExpandWith, lookup)
	if err != nil {
		t.Errorf("%s: %v", pod, err)
		return
	}
	if !cfg.TLS() || !cfg.SASL() || files[cfg.CALocation] != secretFile || len(cfg.BootstrapServers) == 0 {
		t.Errorf("%s: %s: want SASL_SSL, brokers, and ssl.ca.location on a mounted Secret key, got %s", pod, path, cfg)
	}
}

// checkTools parses the tool file; where tools are called (calls), every
// ${file:} of a header and every TLS file is a mounted Secret key, and no
// header takes a secret from the environment.
func checkTools(t *testing.T, pod string, files map[string]string, path string, calls bool) {
	t.Helper()
	text, ok := files[path]
	if !ok || text == secretFile {
		t.Errorf("%s: --tools %s is not a mounted ConfigMap key", pod, path)
		return
	}
	cfg, err := tools.Parse([]byte(text))
	if err != nil {
		t.Errorf("%s: %s: %v", pod, path, err)
		return
	}
	for _, s := range cfg.Tools {
		if s.Auth == nil || !calls {
			continue
		}
		for h, v := range s.Auth.Headers {
			for _, m := range envRef.FindAllStringSubmatch(v, -1) {
				t.Errorf("%s: tool %s header %s takes ${env:%s}: read tool secrets from files", pod, s.Name, h, m[1])
			}
			for _, m := range fileRef.FindAllStringSubmatch(v, -1) {
				if files[m[1]] != secretFile {
					t.Errorf("%s: tool %s header %s: ${file:%s} is not a mounted Secret key", pod, s.Name, h, m[1])
				}
			}
		}
		for _, f := range []string{s.Auth.TLS.CA, s.Auth.TLS.Cert, s.Auth.TLS.Key} {
			if f != "" && files[f] != secretFile {
				t.Errorf("%s: tool %s: TLS file %s is not a mounted Secret key", pod, s.Name, f)
			}
		}
	}
}
