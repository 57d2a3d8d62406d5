package helm

import (
	"fmt"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// get walks o along path (map keys, or "#n" for the n-th list element).
func get(o any, path ...string) any {
	for _, p := range path {
		switch x := o.(type) {
		case map[string]any:
			o = x[p]
		case []any:
			i := 0
			if _, err := fmtSscan(p, &i); err != nil || i >= len(x) {
				return nil
			}
			o = x[i]
		default:
			return nil
		}
	}
	return o
}

func values(t *testing.T, y string) map[string]any {
	t.Helper()
	var v map[string]any
	if err := yaml.Unmarshal([]byte(y), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func kinds(objs map[string]object, kind string) []string {
	var out []string
	for k := range objs {
		if strings.HasPrefix(k, kind+"/") {
			out = append(out, k)
		}
	}
	return out
}

// Each option renders what values.yaml says it does.
func TestChartOptions(t *testing.T) {
	off := renderChart(t, values(t, "monitoring: {enabled: false}\nnetworkPolicy: {enabled: false}\ntopicsJob: {enabled: false}\n"))
	for _, kind := range []string{"ServiceMonitor", "PrometheusRule", "NetworkPolicy", "Job"} {
		if k := kinds(off, kind); len(k) != 0 {
			t.Errorf("monitoring, network policies and the topics Job off: %v rendered", k)
		}
	}
	if off["ServiceAccount/toolexec-topics"] != nil {
		t.Error("the topics Job off: its ServiceAccount rendered")
	}

	on := renderChart(t, values(t, `
image: {digest: ""}
gateway: {autoscaling: {enabled: true}}
ingress: {enabled: true}
httpRoute: {enabled: true}
monitoring: {labels: {release: kube-prometheus-stack}}
extraEnv: [{name: OTEL_EXPORTER_OTLP_ENDPOINT, value: "http://otel-collector.observability.svc:4318"}]
kafka:
  roles: {executor: {username: executor, passwordSecret: executor}}
  caSecret: my-cluster-cluster-ca-cert
networkPolicy:
  dns: {anywhere: true}
  kafka:
    to: [{ipBlock: {cidr: 10.20.0.0/16}}]
    ports: [{protocol: TCP, port: 9096}]
  gatewayCallerNamespaces: [ingress-nginx]
  otlp: {namespace: observability}
`))
	if on["HorizontalPodAutoscaler/tool-gateway"] == nil || get(on["StatefulSet/tool-gateway"], "spec", "replicas") != nil {
		t.Error("autoscaling: want an HPA and no replicas on the gateway StatefulSet (an upgrade would fight the autoscaler)")
	}
	if on["Ingress/toolexec-gateway"] == nil || on["HTTPRoute/toolexec-gateway"] == nil {
		t.Error("ingress and httpRoute on: not both rendered")
	}
	for _, k := range []string{"ServiceMonitor/toolexec", "PrometheusRule/toolexec"} {
		if get(on[k], "metadata", "labels", "release") != "kube-prometheus-stack" {
			t.Errorf("%s: no release label for kube-prometheus-stack's selectors", k)
		}
	}
	for _, ss := range kinds(on, "StatefulSet") {
		c := get(on[ss], "spec", "template", "spec", "containers", "#0")
		if img := get(c, "image").(string); strings.Contains(img, "@") {
			t.Errorf("%s: image %s, want by tag only without a digest", ss, img)
		}
		if !strings.Contains(mustYAML(get(c, "env")), "OTEL_EXPORTER_OTLP_ENDPOINT") {
			t.Errorf("%s: extraEnv not set", ss)
		}
	}
	vols := mustYAML(get(on["StatefulSet/tool-executor"], "spec", "template", "spec", "volumes"))
	if !strings.Contains(vols, "name: executor\n") || !strings.Contains(vols, "name: my-cluster-cluster-ca-cert") {
		t.Errorf("the executor's Kafka credentials are not the given Secrets:\n%s", vols)
	}
	if to := get(on["NetworkPolicy/toolexec-dns"], "spec", "egress", "#0", "to"); to != nil {
		t.Errorf("dns anywhere: egress to %v, want any address", to)
	}
	if cidr := get(on["NetworkPolicy/toolexec-kafka"], "spec", "egress", "#0", "to", "#0", "ipBlock", "cidr"); cidr != "10.20.0.0/16" {
		t.Errorf("kafka by address: %v", cidr)
	}
	if ns := get(on["NetworkPolicy/toolexec-gateway-callers"], "spec", "ingress", "#0", "from", "#1", "namespaceSelector", "matchLabels", "kubernetes.io/metadata.name"); ns != "ingress-nginx" {
		t.Errorf("gateway callers from ingress-nginx: %v", ns)
	}
	if on["NetworkPolicy/toolexec-otlp"] == nil {
		t.Error("otlp namespace set: no egress policy to the collector")
	}
	for _, np := range kinds(on, "NetworkPolicy") {
		if get(on[np], "spec", "podSelector", "matchLabels", "app.kubernetes.io/part-of") != "toolexec" {
			t.Errorf("%s does not select toolexec's pods only", np)
		}
	}
}

// The topics Job is named per release revision: an upgrade makes a new
// Job (a Job's pod template cannot change) and Helm deletes the old one.
func TestChartTopicsJobPerRevision(t *testing.T) {
	objs := renderChart(t, nil)
	if objs["Job/toolexec-topics-1"] == nil {
		t.Fatalf("no Job toolexec-topics-1 at revision 1: %v", kinds(objs, "Job"))
	}
}

func mustYAML(v any) string {
	b, _ := yaml.Marshal(v)
	return string(b)
}

func fmtSscan(s string, i *int) (int, error) { return fmt.Sscanf(strings.TrimPrefix(s, "#"), "%d", i) }
