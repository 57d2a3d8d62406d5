package k8s

import (
	"bytes"
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// strimziPods are pods labelled as Strimzi's operators label a cluster's
// (testdata/strimzi/pods.yaml): brokers, controllers, the operators.
func strimziPods(t *testing.T) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	for _, doc := range splitDocs(readFile(t, "testdata/strimzi/pods.yaml")) {
		var p corev1.Pod
		strict(t, "testdata/strimzi/pods.yaml", doc, &p)
		pods = append(pods, p)
	}
	if len(pods) < 5 {
		t.Fatalf("testdata/strimzi/pods.yaml: %d pods", len(pods))
	}
	return pods
}

// installsWithComponents are the shipped overlays and prod with each
// component that changes a policy.
func installsWithComponents(t *testing.T) []*objects {
	t.Helper()
	var out []*objects
	for _, dir := range overlays {
		out = append(out, render(t, dir))
	}
	for _, c := range []string{"dns-anywhere", "kafka-outside", "otlp", "gateway-api", "gateway-hpa"} {
		out = append(out, withComponents(t, "overlays/prod", c))
	}
	return out
}

// An install may share its namespace (the Strimzi route installs into
// the Kafka cluster's): every NetworkPolicy selects some of toolexec's
// pods and nothing else. Not Strimzi's brokers, controllers or
// operators, and no pod without app.kubernetes.io/part-of: toolexec,
// whatever its other labels. A policy that selected them would cut them
// off from each other and from the API server.
func TestNetworkPoliciesSelectOnlyToolexec(t *testing.T) {
	foreign := strimziPods(t)
	for _, o := range installsWithComponents(t) {
		t.Run(o.dir, func(t *testing.T) {
			for _, p := range o.policies {
				sel := p.Spec.PodSelector
				ours := 0
				for n, pod := range o.pods() {
					if selects(&sel, pod.Labels) {
						ours++
					}
					stripped := maps.Clone(pod.Labels)
					delete(stripped, labelPartOf)
					if selects(&sel, stripped) {
						t.Errorf("%s selects %s's labels without %s=toolexec", p.Name, n, labelPartOf)
					}
				}
				if ours == 0 {
					t.Errorf("%s selects none of toolexec's pods", p.Name)
				}
				for _, f := range foreign {
					if selects(&sel, f.Labels) {
						t.Errorf("%s selects Strimzi's pod %s", p.Name, f.Name)
					}
				}
				if len(sel.MatchLabels)+len(sel.MatchExpressions) == 0 {
					t.Errorf("%s selects every pod of the namespace", p.Name)
				}
			}
		})
	}
}

// In the Kafka cluster's namespace, toolexec reaches the brokers only:
// the Kafka policy's peer selects the broker pods of my-cluster, not its
// controllers or operators.
func TestStrimziKafkaEgressReachesTheBrokers(t *testing.T) {
	o := render(t, "overlays/strimzi")
	p := o.policies["toolexec-kafka"]
	if p == nil || len(p.Spec.Egress) != 1 || len(p.Spec.Egress[0].To) != 1 || p.Spec.Egress[0].To[0].PodSelector == nil {
		t.Fatalf("toolexec-kafka: want one egress rule to a pod selector, got %+v", p)
	}
	peer := p.Spec.Egress[0].To[0]
	if peer.NamespaceSelector != nil {
		t.Errorf("toolexec-kafka: a namespace selector %+v: the brokers are pods of this namespace", peer.NamespaceSelector)
	}
	for _, f := range strimziPods(t) {
		broker := f.Labels["strimzi.io/broker-role"] == "true"
		if got := selects(peer.PodSelector, f.Labels); got != broker {
			t.Errorf("toolexec-kafka reaches %s: %v, want %v", f.Name, got, broker)
		}
	}
}

// The portable variants: DNS to any resolver on 53 and 5353
// (components/dns-anywhere), Kafka by address on 9092-9098
// (components/kafka-outside), OTLP to the collector's namespace
// (components/otlp).
func TestNetworkPolicyComponents(t *testing.T) {
	dns := withComponents(t, "overlays/prod", "dns-anywhere").policies["toolexec-dns"]
	if len(dns.Spec.Egress) != 1 || len(dns.Spec.Egress[0].To) != 0 ||
		!hasPort(dns.Spec.Egress[0].Ports, corev1.ProtocolUDP, 53) || !hasPort(dns.Spec.Egress[0].Ports, corev1.ProtocolUDP, 5353) {
		t.Errorf("dns-anywhere: %+v, want 53 and 5353 to any address", dns.Spec.Egress)
	}
	kafka := withComponents(t, "overlays/prod", "kafka-outside").policies["toolexec-kafka"]
	if e := kafka.Spec.Egress; len(e) != 1 || len(e[0].To) != 1 || e[0].To[0].IPBlock == nil ||
		!hasPort(e[0].Ports, corev1.ProtocolTCP, 9096) || hasPort(e[0].Ports, corev1.ProtocolTCP, 443) {
		t.Errorf("kafka-outside: %+v, want an address range on 9092-9098 only", e)
	}
	o := withComponents(t, "overlays/prod", "otlp")
	otlp := o.policies["toolexec-otlp"]
	if otlp == nil || len(otlp.Spec.Egress) != 1 || !hasPort(otlp.Spec.Egress[0].Ports, corev1.ProtocolTCP, 4318) {
		t.Fatalf("otlp: %+v", otlp)
	}
	for n, ss := range o.statefulSets {
		if !hasEnv(ss.Spec.Template.Spec.Containers[0], "OTEL_EXPORTER_OTLP_ENDPOINT") {
			t.Errorf("otlp: %s exports no traces", n)
		}
	}
}

func hasEnv(c corev1.Container, name string) bool {
	for _, e := range c.Env {
		if e.Name == name {
			return true
		}
	}
	return false
}

// splitDocs splits a multi-document YAML file; the comment before the
// first document is not one.
func splitDocs(b []byte) [][]byte {
	var out [][]byte
	for _, d := range bytes.Split(b, []byte("\n---\n")) {
		var probe map[string]any
		if yaml.Unmarshal(d, &probe) == nil && len(probe) > 0 {
			out = append(out, d)
		}
	}
	return out
}
