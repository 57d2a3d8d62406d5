package k8s

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// devToken is the development tenant's token (overlays/dev/secrets/
// tenants.yaml holds its hash).
const devToken = "dev-token-acme"

// No rendered object of any overlay holds a placeholder for the operator
// to fill in: what an overlay applies is what runs. Secrets are looked at
// decoded (the rendered YAML holds them in base64).
func TestNoPlaceholdersAreRendered(t *testing.T) {
	forEachOverlay(t, func(t *testing.T, o *objects) {
		texts := map[string][]byte{"the rendered YAML": build(t, o.dir)}
		for n, s := range o.secrets {
			for k, v := range s.Data {
				texts["Secret "+n+" key "+k] = v
			}
		}
		for where, text := range texts {
			for _, p := range []string{"CHANGE-ME", "CHANGEME", "REPLACE-ME"} {
				if i := bytes.Index(text, []byte(p)); i >= 0 {
					t.Errorf("%s holds %q: %s", where, p, firstLines(text[max(0, i-80):], 3))
				}
			}
		}
	})
}

// overlays/dev runs as rendered: its one pod's process, started with the
// pod's rendered arguments and environment and the rendered Secret's and
// ConfigMaps' files where the pod would see them (under a temporary root,
// the listen addresses moved to free ports), becomes ready (the executor's
// readiness probe, the embedded reconciler's /readyz), and its gateway
// answers a call of a demo tool with the development token. Then SIGTERM
// ends it cleanly, as the kubelet would.
func TestDevPodRunsAsRendered(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the dev pod's process")
	}
	o := render(t, "overlays/dev")
	ss := o.statefulSets["tool-executor"]
	if len(o.pods()) != 1 || ss == nil {
		t.Fatalf("overlays/dev: pods %v, want the one executor pod", sortedKeys(o.pods()))
	}
	pod := ss.Spec.Template.Spec
	c := pod.Containers[0]
	root := t.TempDir()
	podName := ss.Name + "-0"
	writePodFiles(t, o, pod, c, root)
	ports := freePorts(t, c)
	args := make([]string, 0, len(c.Args))
	for _, a := range c.Args {
		args = append(args, rewriteArg(a, podName, root, ports))
	}
	cmd := exec.Command(filepath.Join(binaries(t), strings.TrimPrefix(c.Command[0], "/")), args...)
	cmd.Env = append(os.Environ(), podEnv(t, c, podName)...)
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		if t.Failed() {
			t.Logf("the process's log:\n%s", logs.String())
		}
	}()
	ready := c.ReadinessProbe.HTTPGet
	waitOK(t, done, "http://127.0.0.1:"+ports[containerPort(c, ready.Port.String())]+ready.Path, nil)
	waitOK(t, done, "http://127.0.0.1:"+ports[containerPort(c, "reconciler")]+"/readyz", nil)
	gw := "http://127.0.0.1:" + ports[containerPort(c, "http")]
	waitOK(t, done, gw+"/v1/tools", map[string]string{"Authorization": "Bearer " + devToken})
	checkDemoCall(t, gw)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("after SIGTERM: %v", err)
		}
	case <-time.After(seconds(pod.TerminationGracePeriodSeconds)):
		cmd.Process.Kill()
		t.Errorf("still running after the grace period %s", seconds(pod.TerminationGracePeriodSeconds))
	}
}

// writePodFiles writes every file container c of pod mounts, with the
// content of its ConfigMap or Secret key, under root; and makes the
// directories of its other volumes (the data claim).
func writePodFiles(t *testing.T, o *objects, pod corev1.PodSpec, c corev1.Container, root string) {
	t.Helper()
	for _, m := range c.VolumeMounts {
		dir := filepath.Join(root, m.MountPath)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		v := volume(pod, m.Name)
		var data map[string][]byte
		var items []corev1.KeyToPath
		switch {
		case v.Secret != nil:
			s := o.secrets[v.Secret.SecretName]
			if s == nil {
				t.Fatalf("volume %s: no Secret %s in the overlay", v.Name, v.Secret.SecretName)
			}
			data, items = s.Data, v.Secret.Items
		case v.ConfigMap != nil:
			cm := o.configMaps[v.ConfigMap.Name]
			if cm == nil {
				t.Fatalf("volume %s: no ConfigMap %s in the overlay", v.Name, v.ConfigMap.Name)
			}
			data, items = map[string][]byte{}, v.ConfigMap.Items
			for k, s := range cm.Data {
				data[k] = []byte(s)
			}
		default:
			continue // a claim: an empty directory, as a new volume is
		}
		for path, key := range itemPaths(data, items) {
			if err := os.WriteFile(filepath.Join(dir, path), data[key], 0o400); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// freePorts maps each port c listens on (its container ports, and the
// port of every --*addr flag) to a free port of this machine.
func freePorts(t *testing.T, c corev1.Container) map[string]string {
	t.Helper()
	out := map[string]string{}
	var want []string
	for _, p := range c.Ports {
		want = append(want, strconv.Itoa(int(p.ContainerPort)))
	}
	for _, a := range c.Args {
		if name, val, _ := strings.Cut(a, "="); strings.HasSuffix(name, "addr") {
			_, port, _ := net.SplitHostPort(val)
			want = append(want, port)
		}
	}
	for _, p := range want {
		if out[p] != "" {
			continue
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		out[p] = strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
		l.Close()
	}
	return out
}

// rewriteArg makes one rendered argument run here: $(POD_NAME) becomes
// the pod's name, an absolute path is taken under root, and a listen
// address moves to 127.0.0.1 and its free port.
func rewriteArg(a, podName, root string, ports map[string]string) string {
	a = strings.ReplaceAll(a, "$(POD_NAME)", podName)
	name, val, ok := strings.Cut(a, "=")
	if !ok {
		return a
	}
	if strings.HasPrefix(val, "/") {
		return name + "=" + filepath.Join(root, val)
	}
	if _, port, err := net.SplitHostPort(val); err == nil && strings.HasSuffix(name, "addr") {
		return name + "=127.0.0.1:" + ports[port]
	}
	return a
}

// podEnv is c's environment as the kubelet would set it: literal values,
// the pod's name, the container's memory limit in bytes.
func podEnv(t *testing.T, c corev1.Container, podName string) []string {
	t.Helper()
	var env []string
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env = append(env, e.Name+"="+e.Value)
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name":
			env = append(env, e.Name+"="+podName)
		case e.ValueFrom.ResourceFieldRef != nil && e.ValueFrom.ResourceFieldRef.Resource == "limits.memory":
			env = append(env, e.Name+"="+strconv.FormatInt(c.Resources.Limits.Memory().Value(), 10))
		default:
			t.Fatalf("env %s: a source this test does not set", e.Name)
		}
	}
	return env
}

// waitOK polls url until it answers 200; the process ending first, or no
// 200 within two minutes (the pod's startup allowance is 150 s), fails.
func waitOK(t *testing.T, exited <-chan error, url string, headers map[string]string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	last := ""
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			t.Fatalf("the process ended before %s answered: %v", url, err)
		default:
		}
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
			last = fmt.Sprintf("%d %s", resp.StatusCode, body)
		} else {
			last = err.Error()
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("%s never answered 200 (last: %s)", url, last)
}

// checkDemoCall calls demo.echo through the gateway, as the dev overlay's
// header says to: a first call runs it, the same call again is a replay.
func checkDemoCall(t *testing.T, gw string) {
	t.Helper()
	for i, replay := range []bool{false, true} {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, gw+"/v1/tools/demo.echo/calls", strings.NewReader(`{"hello": "dev"}`))
		req.Header.Set("Authorization", "Bearer "+devToken)
		req.Header.Set("Idempotency-Key", "dev-first-call")
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			cancel()
			t.Fatalf("call %d: %v", i+1, err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Idempotent-Replayed") != strconv.FormatBool(replay) {
			t.Fatalf("call %d: %d, Idempotent-Replayed %q, want 200 and %v: %s", i+1, resp.StatusCode, resp.Header.Get("Idempotent-Replayed"), replay, raw)
		}
	}
}

func firstLines(b []byte, n int) string {
	lines := strings.SplitN(string(b), "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], "\n")
}
